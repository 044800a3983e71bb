"""trackway: explainable flowcharts and LLM agents on one commit log.

The top level holds the names a user types in the first hour — those the README, getting
started, the concepts page and the examples use: build a chart, run it, keep it in a store,
build an agent with tools and a mock or real model, replay and read its receipts, catch the
main errors. Everything else is imported from the subpackage it lives in: ``trackway.engine``,
``trackway.agent``, ``trackway.tools``, ``trackway.recorders``, ``trackway.testing``.

Imports flow one way: ``engine`` <- ``recorders`` <- ``tools`` <- ``agent`` <- this facade;
nothing inside imports the facade.

The facade is lazy (PEP 562): ``import trackway`` loads none of the layers, and the first
``trackway.X`` (or ``from trackway import X``) imports the layer that defines ``X`` and what
it needs, nothing more — ``from trackway import flow_chart`` never loads the agent layer or
its HTTP client. The explicit re-exports below are read by type checkers and readers only.

The other names 0.1.0 exported here still import from the top level until 0.2.0, with a
``DeprecationWarning`` that names their subpackage (:data:`_DEPRECATED`).

Why this module is over 300 lines and not split: some 80 lines are code; the rest is lists
of names, one per line as ruff keeps them (the type checkers' imports, ``__all__`` and the
deprecated names by subpackage), checked by ``tests/test_exports.py``. Splitting a list
across modules would only hide which names the facade has.
"""

import os as _os
import sys as _sys
import types as _types
import typing as _typing
import warnings as _warnings
from importlib import import_module as _import_module

# Installed, trackway.engine etc. sit inside this package. Imported straight from a source
# checkout (the repository root on sys.path), they are sibling folders: look there too.
_here = _os.path.dirname(__file__)
if not _os.path.isdir(_os.path.join(_here, "engine")):
    _root = _os.path.dirname(_here)
    if _os.path.isfile(_os.path.join(_root, "engine", "__init__.py")):
        __path__.append(_root)

_LAYERS = ("trackway.engine", "trackway.tools", "trackway.agent")
"""Where the top-level names live, in import order: each layer imports the ones before it,
so looking a name up in this order never loads a layer the name does not need."""

_REMOVED_IN = "0.2.0"
"""The release that drops the deprecated top-level names (:data:`_DEPRECATED`)."""


def _public_names(layer: _types.ModuleType) -> None:
    """Show ``layer``'s public classes and functions where users import them from in reprs,
    tracebacks and pickles: the first-hour names under this module (``trackway.StageError``),
    the rest under their layer (``trackway.engine.CheckpointError``), which is also where
    pickle looks them up, so unpickling one never goes through a deprecated name."""
    from trackway.engine.core._public import publish

    top = set(__all__)
    namespace, within = vars(layer), layer.__name__
    publish([n for n in layer.__all__ if n in top], namespace, __name__, within=within)
    publish([n for n in layer.__all__ if n not in top], namespace, within, within=within)


class _Facade(_types.ModuleType):
    """This module's type: it renames a layer's public names (:func:`_public_names`) the
    moment the import system binds the layer here (``trackway.engine = <module>``), so they
    read the same however the layer was first imported."""

    def __setattr__(self, name: str, value: object) -> None:
        if isinstance(value, _types.ModuleType) and value.__name__ in _LAYERS:
            _public_names(value)
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Facade


def __getattr__(name: str) -> object:
    """Resolve a top-level name on first use, from the first layer that exports it; resolve a
    deprecated one from its subpackage, warning where it is used."""
    if name in __all__:
        for layer_name in _LAYERS:
            layer = _import_module(layer_name)
            if name in layer.__all__:
                value = getattr(layer, name)
                globals()[name] = value  # the next lookup is an ordinary attribute
                return value
    home = _HOME.get(name)
    if home is not None:
        # Not cached: every module that still uses the old place hears about it.
        _warnings.warn(
            f"trackway.{name} is deprecated at the top level and goes in the next release "
            f"({_REMOVED_IN}); import it from {home} (from {home} import {name})",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(_import_module(home), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The first-hour names (deprecated ones are left out, so completion does not offer
    them)."""
    return sorted(set(globals()) | set(__all__))


if _typing.TYPE_CHECKING:
    from trackway.agent import Agent as Agent
    from trackway.agent import LLMCall as LLMCall
    from trackway.agent import LLMRequest as LLMRequest
    from trackway.agent import Loop as Loop
    from trackway.agent import Parallel as Parallel
    from trackway.agent import ProviderError as ProviderError
    from trackway.agent import ReplayDivergence as ReplayDivergence
    from trackway.agent import Sequence as Sequence
    from trackway.agent import agent_as_tool as agent_as_tool
    from trackway.agent import anthropic as anthropic
    from trackway.agent import load_recording as load_recording
    from trackway.agent import mock as mock
    from trackway.agent import openai as openai
    from trackway.agent import receipts as receipts
    from trackway.agent import replay as replay
    from trackway.agent import save_recording as save_recording
    from trackway.agent import served_at as served_at
    from trackway.agent import sliding_window as sliding_window
    from trackway.agent import tool_run as tool_run
    from trackway.engine import CheckpointClaimedError as CheckpointClaimedError
    from trackway.engine import Commit as Commit
    from trackway.engine import Executor as Executor
    from trackway.engine import FlowChart as FlowChart
    from trackway.engine import MemoryStore as MemoryStore
    from trackway.engine import PostgresStore as PostgresStore
    from trackway.engine import Recorder as Recorder
    from trackway.engine import Rule as Rule
    from trackway.engine import RunEndEvent as RunEndEvent
    from trackway.engine import RunError as RunError
    from trackway.engine import RunResult as RunResult
    from trackway.engine import RunStartEvent as RunStartEvent
    from trackway.engine import Scope as Scope
    from trackway.engine import Snapshot as Snapshot
    from trackway.engine import SqliteStore as SqliteStore
    from trackway.engine import StageError as StageError
    from trackway.engine import TrackwayError as TrackwayError
    from trackway.engine import causal_chain as causal_chain
    from trackway.engine import decide as decide
    from trackway.engine import flow_chart as flow_chart
    from trackway.engine import thaw as thaw
    from trackway.tools import ToolContext as ToolContext
    from trackway.tools import absent as absent
    from trackway.tools import coverage as coverage
    from trackway.tools import define_tool as define_tool
    from trackway.tools import described_result as described_result
    from trackway.tools import flowchart_as_tool as flowchart_as_tool
    from trackway.tools import gated_tools as gated_tools
    from trackway.tools import mcp_client as mcp_client
    from trackway.tools import mcp_serve as mcp_serve
    from trackway.tools import tool as tool
    from trackway.tools import tool_session_key as tool_session_key

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "CheckpointClaimedError",
    "Commit",
    "Executor",
    "FlowChart",
    "LLMCall",
    "LLMRequest",
    "Loop",
    "MemoryStore",
    "Parallel",
    "PostgresStore",
    "ProviderError",
    "Recorder",
    "ReplayDivergence",
    "Rule",
    "RunEndEvent",
    "RunError",
    "RunResult",
    "RunStartEvent",
    "Scope",
    "Sequence",
    "Snapshot",
    "SqliteStore",
    "StageError",
    "ToolContext",
    "TrackwayError",
    "__version__",
    "absent",
    "agent_as_tool",
    "anthropic",
    "causal_chain",
    "coverage",
    "decide",
    "define_tool",
    "described_result",
    "flow_chart",
    "flowchart_as_tool",
    "gated_tools",
    "load_recording",
    "mcp_client",
    "mcp_serve",
    "mock",
    "openai",
    "receipts",
    "replay",
    "save_recording",
    "served_at",
    "sliding_window",
    "thaw",
    "tool",
    "tool_run",
    "tool_session_key",
]

_DEPRECATED: dict[str, tuple[str, ...]] = {
    "trackway.engine": (
        "CHECKPOINT_FORMAT",
        "MISSING",
        "OPERATORS",
        "SNAPSHOT_FORMAT",
        "Branch",
        "CausalChain",
        "CausalProfile",
        "ChartBuildError",
        "ChartBuilder",
        "ChartMismatchError",
        "Checkpoint",
        "CheckpointError",
        "CommitDetail",
        "CommitDoc",
        "CommitMeta",
        "Condition",
        "ConfigurationError",
        "Control",
        "CorruptCheckpointError",
        "CorruptStoreError",
        "DeciderBuilder",
        "Decision",
        "DecisionEvent",
        "DecisionEvidence",
        "Deferred",
        "DocumentError",
        "Durability",
        "EmitEvent",
        "EmittedEvent",
        "ErrorEvent",
        "ErrorInfo",
        "ExecutorUsageError",
        "FailedAttempt",
        "ForEachRecord",
        "ForgedCheckpointError",
        "ForkRecord",
        "FrozenDict",
        "FrozenList",
        "InputValidationError",
        "LeaseLostError",
        "LoopLimitError",
        "MergeConflictError",
        "MergePolicy",
        "MergeRecord",
        "MissingKeyError",
        "Node",
        "ObserverStats",
        "Op",
        "OutOfRangeError",
        "OutputValidationError",
        "ParallelLimitError",
        "PauseEvent",
        "PausedRun",
        "QueueEntry",
        "RayBranchError",
        "RayRunner",
        "ReadEvent",
        "ReadOnlyStateError",
        "RecorderFailure",
        "RecoveryError",
        "RedactionPolicy",
        "ResumeEvent",
        "ResumeRecord",
        "Retry",
        "RuleEvidence",
        "RunInfo",
        "RunStore",
        "RunStream",
        "RunTimeoutError",
        "Seal",
        "SealError",
        "SealRequiredError",
        "Segment",
        "Selection",
        "SelectorBuilder",
        "StageContractError",
        "StageEndEvent",
        "StagePath",
        "StageStartEvent",
        "StateDiff",
        "StateValidationError",
        "StateValueError",
        "StoreError",
        "StoreWriteError",
        "SubflowEvent",
        "TrackwayWarning",
        "UnknownBranchError",
        "UnknownKeywordError",
        "UnknownRunError",
        "WorkOutcome",
        "WorkTarget",
        "Worker",
        "WorkerInfo",
        "WorkerReport",
        "WriteEvent",
        "check_document",
        "compiled_modules",
        "deferred",
        "load_document",
        "ray_runner",
        "register_causal_profile",
        "run_sync",
        "select",
    ),
    "trackway.tools": (
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
        "ToolDefinitionError",
        "ToolError",
        "ToolProvider",
        "ToolResultStatus",
        "ToolSessionError",
        "allow",
        "answer_coverage",
        "ask",
        "ask_human",
        "canonical_notes",
        "deny",
        "limits_block",
        "period_verdict",
        "read_declared",
        "request_input",
        "static_tools",
    ),
    "trackway.agent": (
        "AgentBuildError",
        "AgentBuilder",
        "AgentError",
        "AgentNotRunError",
        "AgentResult",
        "AgentStream",
        "AnthropicProvider",
        "Composition",
        "Conditional",
        "ContextLengthError",
        "Conversation",
        "ConversationFormatError",
        "DecisionRequiredError",
        "InvalidAnswerError",
        "InvalidRunInputError",
        "ItemResult",
        "LLMResponse",
        "Message",
        "MissingAPIKeyError",
        "MockExhaustedError",
        "MockProvider",
        "ModelNotFoundError",
        "NoConversationError",
        "OpenAIProvider",
        "OutputContractError",
        "Paused",
        "PendingQuestionError",
        "Provider",
        "ProviderAuthError",
        "ProviderConfigError",
        "ProviderConnectionError",
        "ProviderRateLimitError",
        "ProviderRequestError",
        "ProviderResponseError",
        "RedactedRecordError",
        "ResumeIdentityConflictError",
        "RunCheckpointError",
        "RunInFlightError",
        "RunManyReport",
        "RunUsage",
        "StreamDelta",
        "StreamingProvider",
        "ToolCall",
        "ToolSpec",
        "TranscriptCall",
        "Usage",
        "WindowPlan",
        "WindowStrategy",
        "WindowVisit",
        "conversation_redaction",
        "is_paused",
        "is_said_by_person",
        "replay_async",
        "run_many",
        "run_many_sync",
        "summarize_oldest",
        "token_budget",
        "transcript",
    ),
}
"""The names 0.1.0 exported here that now live only in a subpackage, by subpackage. They
still import from the top level, with a ``DeprecationWarning``, until :data:`_REMOVED_IN`."""

_HOME = {name: layer for layer, names in _DEPRECATED.items() for name in names}
