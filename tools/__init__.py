"""trackway.tools: tools an agent can call (the full tools layer grows here)."""

from ._decorator import tool as tool
from ._define import Tool as Tool
from ._define import ToolContext as ToolContext
from ._define import define_tool as define_tool
from ._errors import ToolDefinitionError as ToolDefinitionError
from ._errors import ToolError as ToolError
from ._gate import GateDecision as GateDecision
from ._gate import allow as allow
from ._gate import ask as ask
from ._gate import deny as deny
from ._identity import Identity as Identity
from ._outcome import TOOL_RESULT_STATUSES as TOOL_RESULT_STATUSES
from ._outcome import ToolResultStatus as ToolResultStatus
from ._person import ask_human as ask_human
from ._person import request_input as request_input
from ._providers import ToolProvider as ToolProvider
from ._providers import gated_tools as gated_tools
from ._providers import static_tools as static_tools
from ._sessions import ToolSessionError as ToolSessionError
from ._sessions import tool_session_key as tool_session_key

__all__ = [
    "TOOL_RESULT_STATUSES",
    "GateDecision",
    "Identity",
    "Tool",
    "ToolContext",
    "ToolDefinitionError",
    "ToolError",
    "ToolProvider",
    "ToolResultStatus",
    "ToolSessionError",
    "allow",
    "ask",
    "ask_human",
    "define_tool",
    "deny",
    "gated_tools",
    "request_input",
    "static_tools",
    "tool",
    "tool_session_key",
]
