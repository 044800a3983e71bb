"""trackway: explainable flowcharts and LLM agents on one commit log.

The public API for flow authors. Imports flow one way: ``engine`` <- ``recorders`` <- ``tools``
<- ``agent`` <- this facade; nothing inside imports the facade.

The facade is lazy (PEP 562): ``import trackway`` loads none of the layers, and the first
``trackway.X`` (or ``from trackway import X``) imports the layer that defines ``X`` and what
it needs, nothing more — ``from trackway import flow_chart`` never loads the agent layer or
its HTTP client. The explicit re-exports below are read by type checkers and readers only.

Why this module is over 500 lines and not split: some 60 lines are code; the rest is two
lists of the same ~255 public names (the type checkers' imports and ``__all__``), one per
line as ruff keeps them, checked against the layers by ``tests/test_exports.py``. Splitting
a list across modules would only hide which names the facade has.
"""

import os as _os
import sys as _sys
import types as _types
import typing as _typing
from importlib import import_module as _import_module

# Installed, trackway.engine etc. sit inside this package. Imported straight from a source
# checkout (the repository root on sys.path), they are sibling folders: look there too.
_here = _os.path.dirname(__file__)
if not _os.path.isdir(_os.path.join(_here, "engine")):
    _root = _os.path.dirname(_here)
    if _os.path.isfile(_os.path.join(_root, "engine", "__init__.py")):
        __path__.append(_root)

_LAYERS = ("trackway.engine", "trackway.tools", "trackway.agent")
"""Where the re-exported names live, in import order: each layer imports the ones before it,
so looking a name up in this order never loads a layer the name does not need."""


def _public_names(layer: _types.ModuleType) -> None:
    """Show ``layer``'s public classes and functions under this module (``trackway.StageError``,
    not a private path) in reprs and tracebacks."""
    from trackway.engine.core._public import publish

    publish(layer.__all__, vars(layer), __name__, within=layer.__name__)


class _Facade(_types.ModuleType):
    """This module's type: it renames a layer's public names (:func:`_public_names`) the
    moment the import system binds the layer here (``trackway.engine = <module>``), so they
    read ``trackway.X`` however the layer was first imported, as when the facade was eager."""

    def __setattr__(self, name: str, value: object) -> None:
        if isinstance(value, _types.ModuleType) and value.__name__ in _LAYERS:
            _public_names(value)
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Facade


def __getattr__(name: str) -> object:
    """Resolve a re-exported name on first use, from the first layer that exports it."""
    if name in __all__:
        for layer_name in _LAYERS:
            layer = _import_module(layer_name)
            if name in layer.__all__:
                value = getattr(layer, name)
                globals()[name] = value  # the next lookup is an ordinary attribute
                return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if _typing.TYPE_CHECKING:
    from trackway.agent import Agent as Agent
    from trackway.agent import AgentBuilder as AgentBuilder
    from trackway.agent import AgentBuildError as AgentBuildError
    from trackway.agent import AgentError as AgentError
    from trackway.agent import AgentNotRunError as AgentNotRunError
    from trackway.agent import AgentResult as AgentResult
    from trackway.agent import AgentStream as AgentStream
    from trackway.agent import AnthropicProvider as AnthropicProvider
    from trackway.agent import Composition as Composition
    from trackway.agent import Conditional as Conditional
    from trackway.agent import ContextLengthError as ContextLengthError
    from trackway.agent import Conversation as Conversation
    from trackway.agent import ConversationFormatError as ConversationFormatError
    from trackway.agent import DecisionRequiredError as DecisionRequiredError
    from trackway.agent import InvalidAnswerError as InvalidAnswerError
    from trackway.agent import InvalidRunInputError as InvalidRunInputError
    from trackway.agent import ItemResult as ItemResult
    from trackway.agent import LLMCall as LLMCall
    from trackway.agent import LLMRequest as LLMRequest
    from trackway.agent import LLMResponse as LLMResponse
    from trackway.agent import Loop as Loop
    from trackway.agent import Message as Message
    from trackway.agent import MissingAPIKeyError as MissingAPIKeyError
    from trackway.agent import MockExhaustedError as MockExhaustedError
    from trackway.agent import MockProvider as MockProvider
    from trackway.agent import ModelNotFoundError as ModelNotFoundError
    from trackway.agent import NoConversationError as NoConversationError
    from trackway.agent import OpenAIProvider as OpenAIProvider
    from trackway.agent import OutputContractError as OutputContractError
    from trackway.agent import Parallel as Parallel
    from trackway.agent import Paused as Paused
    from trackway.agent import PendingQuestionError as PendingQuestionError
    from trackway.agent import Provider as Provider
    from trackway.agent import ProviderAuthError as ProviderAuthError
    from trackway.agent import ProviderConfigError as ProviderConfigError
    from trackway.agent import ProviderConnectionError as ProviderConnectionError
    from trackway.agent import ProviderError as ProviderError
    from trackway.agent import ProviderRateLimitError as ProviderRateLimitError
    from trackway.agent import ProviderRequestError as ProviderRequestError
    from trackway.agent import ProviderResponseError as ProviderResponseError
    from trackway.agent import RedactedRecordError as RedactedRecordError
    from trackway.agent import ReplayDivergence as ReplayDivergence
    from trackway.agent import ResumeIdentityConflictError as ResumeIdentityConflictError
    from trackway.agent import RunCheckpointError as RunCheckpointError
    from trackway.agent import RunInFlightError as RunInFlightError
    from trackway.agent import RunManyReport as RunManyReport
    from trackway.agent import RunUsage as RunUsage
    from trackway.agent import Sequence as Sequence
    from trackway.agent import StreamDelta as StreamDelta
    from trackway.agent import StreamingProvider as StreamingProvider
    from trackway.agent import ToolCall as ToolCall
    from trackway.agent import ToolSpec as ToolSpec
    from trackway.agent import TranscriptCall as TranscriptCall
    from trackway.agent import Usage as Usage
    from trackway.agent import WindowPlan as WindowPlan
    from trackway.agent import WindowStrategy as WindowStrategy
    from trackway.agent import WindowVisit as WindowVisit
    from trackway.agent import agent_as_tool as agent_as_tool
    from trackway.agent import anthropic as anthropic
    from trackway.agent import conversation_redaction as conversation_redaction
    from trackway.agent import is_paused as is_paused
    from trackway.agent import is_said_by_person as is_said_by_person
    from trackway.agent import load_recording as load_recording
    from trackway.agent import mock as mock
    from trackway.agent import openai as openai
    from trackway.agent import receipts as receipts
    from trackway.agent import replay as replay
    from trackway.agent import replay_async as replay_async
    from trackway.agent import run_many as run_many
    from trackway.agent import run_many_sync as run_many_sync
    from trackway.agent import save_recording as save_recording
    from trackway.agent import served_at as served_at
    from trackway.agent import sliding_window as sliding_window
    from trackway.agent import summarize_oldest as summarize_oldest
    from trackway.agent import token_budget as token_budget
    from trackway.agent import tool_run as tool_run
    from trackway.agent import transcript as transcript
    from trackway.engine import CHECKPOINT_FORMAT as CHECKPOINT_FORMAT
    from trackway.engine import MISSING as MISSING
    from trackway.engine import OPERATORS as OPERATORS
    from trackway.engine import SNAPSHOT_FORMAT as SNAPSHOT_FORMAT
    from trackway.engine import Branch as Branch
    from trackway.engine import BranchRunner as BranchRunner
    from trackway.engine import CausalChain as CausalChain
    from trackway.engine import CausalProfile as CausalProfile
    from trackway.engine import ChartBuilder as ChartBuilder
    from trackway.engine import ChartBuildError as ChartBuildError
    from trackway.engine import ChartMismatchError as ChartMismatchError
    from trackway.engine import Checkpoint as Checkpoint
    from trackway.engine import CheckpointClaimedError as CheckpointClaimedError
    from trackway.engine import CheckpointError as CheckpointError
    from trackway.engine import Commit as Commit
    from trackway.engine import CommitDetail as CommitDetail
    from trackway.engine import CommitDoc as CommitDoc
    from trackway.engine import CommitMeta as CommitMeta
    from trackway.engine import Condition as Condition
    from trackway.engine import ConfigurationError as ConfigurationError
    from trackway.engine import Control as Control
    from trackway.engine import CorruptCheckpointError as CorruptCheckpointError
    from trackway.engine import CorruptStoreError as CorruptStoreError
    from trackway.engine import DeciderBuilder as DeciderBuilder
    from trackway.engine import Decision as Decision
    from trackway.engine import DecisionEvent as DecisionEvent
    from trackway.engine import DecisionEvidence as DecisionEvidence
    from trackway.engine import Deferred as Deferred
    from trackway.engine import DocumentError as DocumentError
    from trackway.engine import Durability as Durability
    from trackway.engine import EmitEvent as EmitEvent
    from trackway.engine import EmittedEvent as EmittedEvent
    from trackway.engine import ErrorEvent as ErrorEvent
    from trackway.engine import ErrorInfo as ErrorInfo
    from trackway.engine import Executor as Executor
    from trackway.engine import ExecutorUsageError as ExecutorUsageError
    from trackway.engine import FailedAttempt as FailedAttempt
    from trackway.engine import FlowChart as FlowChart
    from trackway.engine import ForEachRecord as ForEachRecord
    from trackway.engine import ForgedCheckpointError as ForgedCheckpointError
    from trackway.engine import ForkRecord as ForkRecord
    from trackway.engine import FrozenDict as FrozenDict
    from trackway.engine import FrozenList as FrozenList
    from trackway.engine import InputValidationError as InputValidationError
    from trackway.engine import LeaseLostError as LeaseLostError
    from trackway.engine import LoopLimitError as LoopLimitError
    from trackway.engine import MemoryStore as MemoryStore
    from trackway.engine import MergeConflictError as MergeConflictError
    from trackway.engine import MergePolicy as MergePolicy
    from trackway.engine import MergeRecord as MergeRecord
    from trackway.engine import MissingKeyError as MissingKeyError
    from trackway.engine import Node as Node
    from trackway.engine import ObserverStats as ObserverStats
    from trackway.engine import Op as Op
    from trackway.engine import OutOfRangeError as OutOfRangeError
    from trackway.engine import OutputValidationError as OutputValidationError
    from trackway.engine import ParallelLimitError as ParallelLimitError
    from trackway.engine import PausedRun as PausedRun
    from trackway.engine import PauseEvent as PauseEvent
    from trackway.engine import PostgresStore as PostgresStore
    from trackway.engine import QueueEntry as QueueEntry
    from trackway.engine import RayBranchError as RayBranchError
    from trackway.engine import RayRunner as RayRunner
    from trackway.engine import ReadEvent as ReadEvent
    from trackway.engine import ReadOnlyStateError as ReadOnlyStateError
    from trackway.engine import Recorder as Recorder
    from trackway.engine import RecorderFailure as RecorderFailure
    from trackway.engine import RecoveryError as RecoveryError
    from trackway.engine import RedactionPolicy as RedactionPolicy
    from trackway.engine import ResumeEvent as ResumeEvent
    from trackway.engine import ResumeRecord as ResumeRecord
    from trackway.engine import Retry as Retry
    from trackway.engine import Rule as Rule
    from trackway.engine import RuleEvidence as RuleEvidence
    from trackway.engine import RunEndEvent as RunEndEvent
    from trackway.engine import RunError as RunError
    from trackway.engine import RunInfo as RunInfo
    from trackway.engine import RunResult as RunResult
    from trackway.engine import RunStartEvent as RunStartEvent
    from trackway.engine import RunStore as RunStore
    from trackway.engine import RunStream as RunStream
    from trackway.engine import RunTimeoutError as RunTimeoutError
    from trackway.engine import Scope as Scope
    from trackway.engine import Seal as Seal
    from trackway.engine import SealError as SealError
    from trackway.engine import SealRequiredError as SealRequiredError
    from trackway.engine import Segment as Segment
    from trackway.engine import Selection as Selection
    from trackway.engine import SelectorBuilder as SelectorBuilder
    from trackway.engine import Snapshot as Snapshot
    from trackway.engine import SqliteStore as SqliteStore
    from trackway.engine import StageContractError as StageContractError
    from trackway.engine import StageEndEvent as StageEndEvent
    from trackway.engine import StageError as StageError
    from trackway.engine import StagePath as StagePath
    from trackway.engine import StageStartEvent as StageStartEvent
    from trackway.engine import StateDiff as StateDiff
    from trackway.engine import StateValidationError as StateValidationError
    from trackway.engine import StateValueError as StateValueError
    from trackway.engine import StoreError as StoreError
    from trackway.engine import StoreWriteError as StoreWriteError
    from trackway.engine import SubflowEvent as SubflowEvent
    from trackway.engine import TrackwayError as TrackwayError
    from trackway.engine import TrackwayWarning as TrackwayWarning
    from trackway.engine import UnknownBranchError as UnknownBranchError
    from trackway.engine import UnknownKeywordError as UnknownKeywordError
    from trackway.engine import UnknownRunError as UnknownRunError
    from trackway.engine import Worker as Worker
    from trackway.engine import WorkerInfo as WorkerInfo
    from trackway.engine import WorkerReport as WorkerReport
    from trackway.engine import WorkOutcome as WorkOutcome
    from trackway.engine import WorkTarget as WorkTarget
    from trackway.engine import WriteEvent as WriteEvent
    from trackway.engine import causal_chain as causal_chain
    from trackway.engine import check_document as check_document
    from trackway.engine import compiled_modules as compiled_modules
    from trackway.engine import decide as decide
    from trackway.engine import deferred as deferred
    from trackway.engine import flow_chart as flow_chart
    from trackway.engine import load_document as load_document
    from trackway.engine import ray_runner as ray_runner
    from trackway.engine import register_causal_profile as register_causal_profile
    from trackway.engine import run_sync as run_sync
    from trackway.engine import select as select
    from trackway.engine import thaw as thaw
    from trackway.tools import ABSENCE_MARKER as ABSENCE_MARKER
    from trackway.tools import ABSENCE_NOTE as ABSENCE_NOTE
    from trackway.tools import ASSUMED_LABEL as ASSUMED_LABEL
    from trackway.tools import CANNOT_COVER_LABEL as CANNOT_COVER_LABEL
    from trackway.tools import CHECKED_LABEL as CHECKED_LABEL
    from trackway.tools import COVERAGE_BLOCK_HEADING as COVERAGE_BLOCK_HEADING
    from trackway.tools import COVERAGE_MARKER as COVERAGE_MARKER
    from trackway.tools import COVERAGE_NOTE as COVERAGE_NOTE
    from trackway.tools import IN_PROGRESS_CLAUSE as IN_PROGRESS_CLAUSE
    from trackway.tools import IN_PROGRESS_SECTION_LABEL as IN_PROGRESS_SECTION_LABEL
    from trackway.tools import IN_PROGRESS_WIRE as IN_PROGRESS_WIRE
    from trackway.tools import NOT_CHECKED_LABEL as NOT_CHECKED_LABEL
    from trackway.tools import PERIOD_LABEL as PERIOD_LABEL
    from trackway.tools import PERIOD_VERDICTS as PERIOD_VERDICTS
    from trackway.tools import PERIOD_WIRE as PERIOD_WIRE
    from trackway.tools import SEMANTICS_NOTE as SEMANTICS_NOTE
    from trackway.tools import TOOL_RESULT_STATUSES as TOOL_RESULT_STATUSES
    from trackway.tools import ChartPausedError as ChartPausedError
    from trackway.tools import CoveredResult as CoveredResult
    from trackway.tools import DeclarationRefused as DeclarationRefused
    from trackway.tools import Declared as Declared
    from trackway.tools import DescribedResult as DescribedResult
    from trackway.tools import GateDecision as GateDecision
    from trackway.tools import Identity as Identity
    from trackway.tools import McpCallError as McpCallError
    from trackway.tools import McpClient as McpClient
    from trackway.tools import McpConnectionError as McpConnectionError
    from trackway.tools import McpServe as McpServe
    from trackway.tools import PeriodVerdict as PeriodVerdict
    from trackway.tools import Tool as Tool
    from trackway.tools import ToolAbsence as ToolAbsence
    from trackway.tools import ToolContext as ToolContext
    from trackway.tools import ToolDefinitionError as ToolDefinitionError
    from trackway.tools import ToolError as ToolError
    from trackway.tools import ToolProvider as ToolProvider
    from trackway.tools import ToolResultStatus as ToolResultStatus
    from trackway.tools import ToolSessionError as ToolSessionError
    from trackway.tools import absent as absent
    from trackway.tools import allow as allow
    from trackway.tools import answer_coverage as answer_coverage
    from trackway.tools import ask as ask
    from trackway.tools import ask_human as ask_human
    from trackway.tools import canonical_notes as canonical_notes
    from trackway.tools import coverage as coverage
    from trackway.tools import define_tool as define_tool
    from trackway.tools import deny as deny
    from trackway.tools import described_result as described_result
    from trackway.tools import flowchart_as_tool as flowchart_as_tool
    from trackway.tools import gated_tools as gated_tools
    from trackway.tools import limits_block as limits_block
    from trackway.tools import mcp_client as mcp_client
    from trackway.tools import mcp_serve as mcp_serve
    from trackway.tools import period_verdict as period_verdict
    from trackway.tools import read_declared as read_declared
    from trackway.tools import request_input as request_input
    from trackway.tools import static_tools as static_tools
    from trackway.tools import tool as tool
    from trackway.tools import tool_session_key as tool_session_key

__version__ = "0.1.0"

__all__ = [
    "ABSENCE_MARKER",
    "ABSENCE_NOTE",
    "ASSUMED_LABEL",
    "CANNOT_COVER_LABEL",
    "CHECKED_LABEL",
    "CHECKPOINT_FORMAT",
    "COVERAGE_BLOCK_HEADING",
    "COVERAGE_MARKER",
    "COVERAGE_NOTE",
    "IN_PROGRESS_CLAUSE",
    "IN_PROGRESS_SECTION_LABEL",
    "IN_PROGRESS_WIRE",
    "MISSING",
    "NOT_CHECKED_LABEL",
    "OPERATORS",
    "PERIOD_LABEL",
    "PERIOD_VERDICTS",
    "PERIOD_WIRE",
    "SEMANTICS_NOTE",
    "SNAPSHOT_FORMAT",
    "TOOL_RESULT_STATUSES",
    "Agent",
    "AgentBuildError",
    "AgentBuilder",
    "AgentError",
    "AgentNotRunError",
    "AgentResult",
    "AgentStream",
    "AnthropicProvider",
    "Branch",
    "BranchRunner",
    "CausalChain",
    "CausalProfile",
    "ChartBuildError",
    "ChartBuilder",
    "ChartMismatchError",
    "ChartPausedError",
    "Checkpoint",
    "CheckpointClaimedError",
    "CheckpointError",
    "Commit",
    "CommitDetail",
    "CommitDoc",
    "CommitMeta",
    "Composition",
    "Condition",
    "Conditional",
    "ConfigurationError",
    "ContextLengthError",
    "Control",
    "Conversation",
    "ConversationFormatError",
    "CorruptCheckpointError",
    "CorruptStoreError",
    "CoveredResult",
    "DeciderBuilder",
    "Decision",
    "DecisionEvent",
    "DecisionEvidence",
    "DecisionRequiredError",
    "DeclarationRefused",
    "Declared",
    "Deferred",
    "DescribedResult",
    "DocumentError",
    "Durability",
    "EmitEvent",
    "EmittedEvent",
    "ErrorEvent",
    "ErrorInfo",
    "Executor",
    "ExecutorUsageError",
    "FailedAttempt",
    "FlowChart",
    "ForEachRecord",
    "ForgedCheckpointError",
    "ForkRecord",
    "FrozenDict",
    "FrozenList",
    "GateDecision",
    "Identity",
    "InputValidationError",
    "InvalidAnswerError",
    "InvalidRunInputError",
    "ItemResult",
    "LLMCall",
    "LLMRequest",
    "LLMResponse",
    "LeaseLostError",
    "Loop",
    "LoopLimitError",
    "McpCallError",
    "McpClient",
    "McpConnectionError",
    "McpServe",
    "MemoryStore",
    "MergeConflictError",
    "MergePolicy",
    "MergeRecord",
    "Message",
    "MissingAPIKeyError",
    "MissingKeyError",
    "MockExhaustedError",
    "MockProvider",
    "ModelNotFoundError",
    "NoConversationError",
    "Node",
    "ObserverStats",
    "Op",
    "OpenAIProvider",
    "OutOfRangeError",
    "OutputContractError",
    "OutputValidationError",
    "Parallel",
    "ParallelLimitError",
    "PauseEvent",
    "Paused",
    "PausedRun",
    "PendingQuestionError",
    "PeriodVerdict",
    "PostgresStore",
    "Provider",
    "ProviderAuthError",
    "ProviderConfigError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderRateLimitError",
    "ProviderRequestError",
    "ProviderResponseError",
    "QueueEntry",
    "RayBranchError",
    "RayRunner",
    "ReadEvent",
    "ReadOnlyStateError",
    "Recorder",
    "RecorderFailure",
    "RecoveryError",
    "RedactedRecordError",
    "RedactionPolicy",
    "ReplayDivergence",
    "ResumeEvent",
    "ResumeIdentityConflictError",
    "ResumeRecord",
    "Retry",
    "Rule",
    "RuleEvidence",
    "RunCheckpointError",
    "RunEndEvent",
    "RunError",
    "RunInFlightError",
    "RunInfo",
    "RunManyReport",
    "RunResult",
    "RunStartEvent",
    "RunStore",
    "RunStream",
    "RunTimeoutError",
    "RunUsage",
    "Scope",
    "Seal",
    "SealError",
    "SealRequiredError",
    "Segment",
    "Selection",
    "SelectorBuilder",
    "Sequence",
    "Snapshot",
    "SqliteStore",
    "StageContractError",
    "StageEndEvent",
    "StageError",
    "StagePath",
    "StageStartEvent",
    "StateDiff",
    "StateValidationError",
    "StateValueError",
    "StoreError",
    "StoreWriteError",
    "StreamDelta",
    "StreamingProvider",
    "SubflowEvent",
    "Tool",
    "ToolAbsence",
    "ToolCall",
    "ToolContext",
    "ToolDefinitionError",
    "ToolError",
    "ToolProvider",
    "ToolResultStatus",
    "ToolSessionError",
    "ToolSpec",
    "TrackwayError",
    "TrackwayWarning",
    "TranscriptCall",
    "UnknownBranchError",
    "UnknownKeywordError",
    "UnknownRunError",
    "Usage",
    "WindowPlan",
    "WindowStrategy",
    "WindowVisit",
    "WorkOutcome",
    "WorkTarget",
    "Worker",
    "WorkerInfo",
    "WorkerReport",
    "WriteEvent",
    "__version__",
    "absent",
    "agent_as_tool",
    "allow",
    "answer_coverage",
    "anthropic",
    "ask",
    "ask_human",
    "canonical_notes",
    "causal_chain",
    "check_document",
    "compiled_modules",
    "conversation_redaction",
    "coverage",
    "decide",
    "deferred",
    "define_tool",
    "deny",
    "described_result",
    "flow_chart",
    "flowchart_as_tool",
    "gated_tools",
    "is_paused",
    "is_said_by_person",
    "limits_block",
    "load_document",
    "load_recording",
    "mcp_client",
    "mcp_serve",
    "mock",
    "openai",
    "period_verdict",
    "ray_runner",
    "read_declared",
    "receipts",
    "register_causal_profile",
    "replay",
    "replay_async",
    "request_input",
    "run_many",
    "run_many_sync",
    "run_sync",
    "save_recording",
    "select",
    "served_at",
    "sliding_window",
    "static_tools",
    "summarize_oldest",
    "thaw",
    "token_budget",
    "tool",
    "tool_run",
    "tool_session_key",
    "transcript",
]
