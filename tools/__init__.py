"""trackway.tools: tools an agent can call — defining them, what their results say they
covered, sessions, gates, providers and argument rules."""

from ._canonical_notes import canonical_notes as canonical_notes
from ._chart_tool import ChartPausedError as ChartPausedError
from ._chart_tool import flowchart_as_tool as flowchart_as_tool
from ._coverage_items import DeclarationRefused as DeclarationRefused
from ._declared import ABSENCE_MARKER as ABSENCE_MARKER
from ._declared import ABSENCE_NOTE as ABSENCE_NOTE
from ._declared import COVERAGE_MARKER as COVERAGE_MARKER
from ._declared import COVERAGE_NOTE as COVERAGE_NOTE
from ._declared import IN_PROGRESS_CLAUSE as IN_PROGRESS_CLAUSE
from ._declared import IN_PROGRESS_WIRE as IN_PROGRESS_WIRE
from ._declared import SEMANTICS_NOTE as SEMANTICS_NOTE
from ._declared import CoveredResult as CoveredResult
from ._declared import DescribedResult as DescribedResult
from ._declared import ToolAbsence as ToolAbsence
from ._declared import absent as absent
from ._declared import coverage as coverage
from ._declared import described_result as described_result
from ._declared_read import Declared as Declared
from ._declared_read import read_declared as read_declared
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
from ._limits import ASSUMED_LABEL as ASSUMED_LABEL
from ._limits import CANNOT_COVER_LABEL as CANNOT_COVER_LABEL
from ._limits import CHECKED_LABEL as CHECKED_LABEL
from ._limits import COVERAGE_BLOCK_HEADING as COVERAGE_BLOCK_HEADING
from ._limits import IN_PROGRESS_SECTION_LABEL as IN_PROGRESS_SECTION_LABEL
from ._limits import NOT_CHECKED_LABEL as NOT_CHECKED_LABEL
from ._limits import PERIOD_LABEL as PERIOD_LABEL
from ._limits import answer_coverage as answer_coverage
from ._limits import limits_block as limits_block
from ._mcp_client import McpCallError as McpCallError
from ._mcp_client import McpClient as McpClient
from ._mcp_client import McpConnectionError as McpConnectionError
from ._mcp_client import mcp_client as mcp_client
from ._mcp_serve import McpServe as McpServe
from ._mcp_serve import mcp_serve as mcp_serve
from ._outcome import TOOL_RESULT_STATUSES as TOOL_RESULT_STATUSES
from ._outcome import ToolResultStatus as ToolResultStatus
from ._period import PERIOD_VERDICTS as PERIOD_VERDICTS
from ._period import PERIOD_WIRE as PERIOD_WIRE
from ._period import PeriodVerdict as PeriodVerdict
from ._period import period_verdict as period_verdict
from ._person import ask_human as ask_human
from ._person import request_input as request_input
from ._providers import ToolProvider as ToolProvider
from ._providers import gated_tools as gated_tools
from ._providers import static_tools as static_tools
from ._sessions import ToolSessionError as ToolSessionError
from ._sessions import tool_session_key as tool_session_key

__all__ = [
    "ABSENCE_MARKER",
    "ABSENCE_NOTE",
    "ASSUMED_LABEL",
    "CANNOT_COVER_LABEL",
    "CHECKED_LABEL",
    "COVERAGE_BLOCK_HEADING",
    "COVERAGE_MARKER",
    "COVERAGE_NOTE",
    "IN_PROGRESS_CLAUSE",
    "IN_PROGRESS_SECTION_LABEL",
    "IN_PROGRESS_WIRE",
    "NOT_CHECKED_LABEL",
    "PERIOD_LABEL",
    "PERIOD_VERDICTS",
    "PERIOD_WIRE",
    "SEMANTICS_NOTE",
    "TOOL_RESULT_STATUSES",
    "ChartPausedError",
    "CoveredResult",
    "DeclarationRefused",
    "Declared",
    "DescribedResult",
    "GateDecision",
    "Identity",
    "McpCallError",
    "McpClient",
    "McpConnectionError",
    "McpServe",
    "PeriodVerdict",
    "Tool",
    "ToolAbsence",
    "ToolContext",
    "ToolDefinitionError",
    "ToolError",
    "ToolProvider",
    "ToolResultStatus",
    "ToolSessionError",
    "absent",
    "allow",
    "answer_coverage",
    "ask",
    "ask_human",
    "canonical_notes",
    "coverage",
    "define_tool",
    "deny",
    "described_result",
    "flowchart_as_tool",
    "gated_tools",
    "limits_block",
    "mcp_client",
    "mcp_serve",
    "period_verdict",
    "read_declared",
    "request_input",
    "static_tools",
    "tool",
    "tool_session_key",
]
