"""trackway.tools: tools an agent can call — defining them, what their results say they
covered, sessions, gates, providers and argument rules."""

from .artifacts._folder import FolderArtifacts as FolderArtifacts
from .artifacts._meta import ARTIFACT_REF_PREFIX as ARTIFACT_REF_PREFIX
from .artifacts._meta import ArtifactMeta as ArtifactMeta
from .artifacts._meta import ArtifactScope as ArtifactScope
from .artifacts._store import ArtifactStore as ArtifactStore
from .artifacts._store import MemoryArtifacts as MemoryArtifacts
from .artifacts._store import RunStoreArtifacts as RunStoreArtifacts
from .artifacts._store import artifact_value as artifact_value
from .bridges._chart_tool import ChartPausedError as ChartPausedError
from .bridges._chart_tool import flowchart_as_tool as flowchart_as_tool
from .bridges._mcp_client import McpCallError as McpCallError
from .bridges._mcp_client import McpClient as McpClient
from .bridges._mcp_client import McpConnectionError as McpConnectionError
from .bridges._mcp_client import mcp_client as mcp_client
from .bridges._mcp_serve import McpServe as McpServe
from .bridges._mcp_serve import mcp_serve as mcp_serve
from .define._decorator import tool as tool
from .define._define import Tool as Tool
from .define._define import ToolContext as ToolContext
from .define._define import define_tool as define_tool
from .define._errors import CredentialError as CredentialError
from .define._errors import ToolCallRefusedError as ToolCallRefusedError
from .define._errors import ToolDefinitionError as ToolDefinitionError
from .define._errors import ToolError as ToolError
from .define._gate import GateDecision as GateDecision
from .define._gate import allow as allow
from .define._gate import ask as ask
from .define._gate import deny as deny
from .define._gate import scrub as scrub
from .define._gate import withhold as withhold
from .define._identity import Identity as Identity
from .define._person import ask_human as ask_human
from .define._person import request_input as request_input
from .define._providers import ToolProvider as ToolProvider
from .define._providers import gated_tools as gated_tools
from .define._providers import static_tools as static_tools
from .define._sessions import ToolSessionError as ToolSessionError
from .define._sessions import tool_session_key as tool_session_key
from .define._wants import check_tool_wants as check_tool_wants
from .results._canonical_notes import canonical_notes as canonical_notes
from .results._coverage_items import DeclarationRefused as DeclarationRefused
from .results._declared import ABSENCE_MARKER as ABSENCE_MARKER
from .results._declared import ABSENCE_NOTE as ABSENCE_NOTE
from .results._declared import COVERAGE_MARKER as COVERAGE_MARKER
from .results._declared import COVERAGE_NOTE as COVERAGE_NOTE
from .results._declared import IN_PROGRESS_CLAUSE as IN_PROGRESS_CLAUSE
from .results._declared import IN_PROGRESS_WIRE as IN_PROGRESS_WIRE
from .results._declared import SEMANTICS_NOTE as SEMANTICS_NOTE
from .results._declared import CoveredResult as CoveredResult
from .results._declared import DescribedResult as DescribedResult
from .results._declared import ToolAbsence as ToolAbsence
from .results._declared import absent as absent
from .results._declared import coverage as coverage
from .results._declared import described_result as described_result
from .results._declared_read import Declared as Declared
from .results._declared_read import read_declared as read_declared
from .results._limits import ASSUMED_LABEL as ASSUMED_LABEL
from .results._limits import CANNOT_COVER_LABEL as CANNOT_COVER_LABEL
from .results._limits import CHECKED_LABEL as CHECKED_LABEL
from .results._limits import COVERAGE_BLOCK_HEADING as COVERAGE_BLOCK_HEADING
from .results._limits import IN_PROGRESS_SECTION_LABEL as IN_PROGRESS_SECTION_LABEL
from .results._limits import NOT_CHECKED_LABEL as NOT_CHECKED_LABEL
from .results._limits import PERIOD_LABEL as PERIOD_LABEL
from .results._limits import answer_coverage as answer_coverage
from .results._limits import limits_block as limits_block
from .results._outcome import TOOL_RESULT_STATUSES as TOOL_RESULT_STATUSES
from .results._outcome import ToolResultStatus as ToolResultStatus
from .results._period import PERIOD_VERDICTS as PERIOD_VERDICTS
from .results._period import PERIOD_WIRE as PERIOD_WIRE
from .results._period import PeriodVerdict as PeriodVerdict
from .results._period import period_verdict as period_verdict
from .runner import STAGED_INPUTS_ENV as STAGED_INPUTS_ENV
from .runner import CodeInput as CodeInput
from .runner import CodeInputsNotStagedError as CodeInputsNotStagedError
from .runner import CodeRunFailedError as CodeRunFailedError
from .runner import CodeRunner as CodeRunner
from .runner import CodeRunnerError as CodeRunnerError
from .runner import CodeRunResult as CodeRunResult
from .runner import CodeSession as CodeSession
from .runner import LocalCodeRunner as LocalCodeRunner
from .runner import LocalCodeSession as LocalCodeSession
from .runner import StagedCodeInput as StagedCodeInput
from .runner import StagingCodeSession as StagingCodeSession
from .runner import can_stage_code_inputs as can_stage_code_inputs
from .runner import code_runner_tool as code_runner_tool
from .runner import local_code_runner as local_code_runner
from .runner import tool_sessions_of as tool_sessions_of
from .time._ask import DEFAULT_TIME_ASK_MESSAGES as DEFAULT_TIME_ASK_MESSAGES
from .time._ask import TIME_FORMATS as TIME_FORMATS
from .time._ask import check_time_answer as check_time_answer
from .time._candidates import TimeReader as TimeReader
from .time._clock import Clock as Clock
from .time._clock import InstantError as InstantError
from .time._clock import UnknownZoneError as UnknownZoneError
from .time._mcp import answer_from_elicitation as answer_from_elicitation
from .time._mcp import elicitation_of as elicitation_of

__all__ = [
    "ABSENCE_MARKER",
    "ABSENCE_NOTE",
    "ARTIFACT_REF_PREFIX",
    "ASSUMED_LABEL",
    "CANNOT_COVER_LABEL",
    "CHECKED_LABEL",
    "COVERAGE_BLOCK_HEADING",
    "COVERAGE_MARKER",
    "COVERAGE_NOTE",
    "DEFAULT_TIME_ASK_MESSAGES",
    "IN_PROGRESS_CLAUSE",
    "IN_PROGRESS_SECTION_LABEL",
    "IN_PROGRESS_WIRE",
    "NOT_CHECKED_LABEL",
    "PERIOD_LABEL",
    "PERIOD_VERDICTS",
    "PERIOD_WIRE",
    "SEMANTICS_NOTE",
    "STAGED_INPUTS_ENV",
    "TIME_FORMATS",
    "TOOL_RESULT_STATUSES",
    "ArtifactMeta",
    "ArtifactScope",
    "ArtifactStore",
    "ChartPausedError",
    "Clock",
    "CodeInput",
    "CodeInputsNotStagedError",
    "CodeRunFailedError",
    "CodeRunResult",
    "CodeRunner",
    "CodeRunnerError",
    "CodeSession",
    "CoveredResult",
    "CredentialError",
    "DeclarationRefused",
    "Declared",
    "DescribedResult",
    "FolderArtifacts",
    "GateDecision",
    "Identity",
    "InstantError",
    "LocalCodeRunner",
    "LocalCodeSession",
    "McpCallError",
    "McpClient",
    "McpConnectionError",
    "McpServe",
    "MemoryArtifacts",
    "PeriodVerdict",
    "RunStoreArtifacts",
    "StagedCodeInput",
    "StagingCodeSession",
    "TimeReader",
    "Tool",
    "ToolAbsence",
    "ToolCallRefusedError",
    "ToolContext",
    "ToolDefinitionError",
    "ToolError",
    "ToolProvider",
    "ToolResultStatus",
    "ToolSessionError",
    "UnknownZoneError",
    "absent",
    "allow",
    "answer_coverage",
    "answer_from_elicitation",
    "artifact_value",
    "ask",
    "ask_human",
    "can_stage_code_inputs",
    "canonical_notes",
    "check_time_answer",
    "check_tool_wants",
    "code_runner_tool",
    "coverage",
    "define_tool",
    "deny",
    "described_result",
    "elicitation_of",
    "flowchart_as_tool",
    "gated_tools",
    "limits_block",
    "local_code_runner",
    "mcp_client",
    "mcp_serve",
    "period_verdict",
    "read_declared",
    "request_input",
    "scrub",
    "static_tools",
    "tool",
    "tool_session_key",
    "tool_sessions_of",
    "withhold",
]
