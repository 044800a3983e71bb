"""trackway.tools: tools an agent can call (the full tools layer grows here)."""

from ._define import Tool as Tool
from ._define import ToolContext as ToolContext
from ._define import ToolDefinitionError as ToolDefinitionError
from ._define import define_tool as define_tool

__all__ = ["Tool", "ToolContext", "ToolDefinitionError", "define_tool"]
