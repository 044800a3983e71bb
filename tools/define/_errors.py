"""The tools layer's errors::

TrackwayError
└── ToolError                    the tools layer
    └── ToolDefinitionError      a tool defined wrongly            (ValueError too)
"""

from __future__ import annotations

from trackway.engine import TrackwayError

__all__ = ["ToolDefinitionError", "ToolError"]


class ToolError(TrackwayError):
    """Base class of the tools layer's errors."""


class ToolDefinitionError(ToolError, ValueError):
    """A tool was defined wrongly (bad name, schema or execute); the message says the fix."""
