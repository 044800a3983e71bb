"""The tools layer's errors::

TrackwayError
└── ToolError                    the tools layer
    ├── ToolDefinitionError      a tool defined wrongly            (ValueError too)
    ├── ToolCallRefusedError     ctx.tools.call did not run the tool (RuntimeError too)
    └── CredentialError          ctx.credential for a credential the call was not given
"""

from __future__ import annotations

from trackway.engine import TrackwayError

__all__ = ["CredentialError", "ToolCallRefusedError", "ToolDefinitionError", "ToolError"]


class ToolError(TrackwayError):
    """Base class of the tools layer's errors."""


class ToolDefinitionError(ToolError, ValueError):
    """A tool was defined wrongly (bad name, schema or execute); the message says the fix."""


class ToolCallRefusedError(ToolError, RuntimeError):
    """``ctx.tools.call(name, args)`` did not run the tool: no such tool, arguments its
    schema refuses, or a gate or middleware link that denied it or would ask a person (a
    nested call cannot wait for one). The message says which, and what to do."""


class CredentialError(ToolError, LookupError):
    """``ctx.credential(name)`` for a credential this call was not given: the tool does not
    declare it in ``needs``, or it ran outside an agent with ``.credentials(...)``."""
