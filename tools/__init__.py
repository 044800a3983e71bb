"""trackway.tools: tools an agent can call (the full tools layer grows here)."""

from ._define import Tool as Tool
from ._define import ToolContext as ToolContext
from ._define import define_tool as define_tool
from ._errors import ToolDefinitionError as ToolDefinitionError
from ._errors import ToolError as ToolError
from ._identity import Identity as Identity

__all__ = ["Identity", "Tool", "ToolContext", "ToolDefinitionError", "ToolError", "define_tool"]
