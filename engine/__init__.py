"""trackway.engine: charts of stage functions whose every write lands in one commit log.

Layering: this package imports nothing from ``trackway.recorders``, ``trackway.tools`` or
``trackway.agent``; they build on its public names only.
"""

from ._branch_builders import DeciderBuilder as DeciderBuilder
from ._branch_builders import SelectorBuilder as SelectorBuilder
from ._builder import ChartBuilder as ChartBuilder
from ._builder import flow_chart as flow_chart
from ._causal import CausalChain as CausalChain
from ._causal import CausalProfile as CausalProfile
from ._causal import causal_chain as causal_chain
from ._causal import register_causal_profile as register_causal_profile
from ._chart import Branch as Branch
from ._chart import FlowChart as FlowChart
from ._chart import MergePolicy as MergePolicy
from ._chart import Node as Node
from ._checkpoint import CHECKPOINT_FORMAT as CHECKPOINT_FORMAT
from ._checkpoint import Checkpoint as Checkpoint
from ._commit import Commit as Commit
from ._commit import CommitDoc as CommitDoc
from ._commit import EmittedEvent as EmittedEvent
from ._commit import ErrorInfo as ErrorInfo
from ._commit import Op as Op
from ._compiled import compiled_modules as compiled_modules
from ._decide import OPERATORS as OPERATORS
from ._decide import Decision as Decision
from ._decide import Rule as Rule
from ._decide import Selection as Selection
from ._decide import decide as decide
from ._decide import select as select
from ._detail import CommitDetail as CommitDetail
from ._detail import Condition as Condition
from ._detail import Control as Control
from ._detail import DecisionEvidence as DecisionEvidence
from ._detail import FailedAttempt as FailedAttempt
from ._detail import ForEachRecord as ForEachRecord
from ._detail import ForkRecord as ForkRecord
from ._detail import MergeRecord as MergeRecord
from ._detail import ResumeRecord as ResumeRecord
from ._detail import RuleEvidence as RuleEvidence
from ._documents import check_document as check_document
from ._documents import load_document as load_document
from ._errors import ChartBuildError as ChartBuildError
from ._errors import ChartMismatchError as ChartMismatchError
from ._errors import CheckpointClaimedError as CheckpointClaimedError
from ._errors import CheckpointError as CheckpointError
from ._errors import ConfigurationError as ConfigurationError
from ._errors import CorruptCheckpointError as CorruptCheckpointError
from ._errors import CorruptStoreError as CorruptStoreError
from ._errors import DocumentError as DocumentError
from ._errors import ExecutorUsageError as ExecutorUsageError
from ._errors import ForgedCheckpointError as ForgedCheckpointError
from ._errors import InputValidationError as InputValidationError
from ._errors import LeaseLostError as LeaseLostError
from ._errors import LoopLimitError as LoopLimitError
from ._errors import MergeConflictError as MergeConflictError
from ._errors import MissingKeyError as MissingKeyError
from ._errors import OutOfRangeError as OutOfRangeError
from ._errors import OutputValidationError as OutputValidationError
from ._errors import ParallelLimitError as ParallelLimitError
from ._errors import ReadOnlyStateError as ReadOnlyStateError
from ._errors import RecoveryError as RecoveryError
from ._errors import RunError as RunError
from ._errors import RunTimeoutError as RunTimeoutError
from ._errors import SealError as SealError
from ._errors import SealRequiredError as SealRequiredError
from ._errors import StageContractError as StageContractError
from ._errors import StageError as StageError
from ._errors import StateValidationError as StateValidationError
from ._errors import StateValueError as StateValueError
from ._errors import StoreError as StoreError
from ._errors import StoreWriteError as StoreWriteError
from ._errors import TrackwayError as TrackwayError
from ._errors import TrackwayWarning as TrackwayWarning
from ._errors import UnknownBranchError as UnknownBranchError
from ._errors import UnknownKeywordError as UnknownKeywordError
from ._errors import UnknownRunError as UnknownRunError
from ._executor import Executor as Executor
from ._executor import RunResult as RunResult
from ._paths import Segment as Segment
from ._paths import StagePath as StagePath
from ._paused import PausedRun as PausedRun
from ._postgres import PostgresStore as PostgresStore
from ._ray_runner import RayBranchError as RayBranchError
from ._ray_runner import RayRunner as RayRunner
from ._ray_runner import ray_runner as ray_runner
from ._recorder import DecisionEvent as DecisionEvent
from ._recorder import Deferred as Deferred
from ._recorder import EmitEvent as EmitEvent
from ._recorder import ErrorEvent as ErrorEvent
from ._recorder import ObserverStats as ObserverStats
from ._recorder import PauseEvent as PauseEvent
from ._recorder import ReadEvent as ReadEvent
from ._recorder import Recorder as Recorder
from ._recorder import RecorderFailure as RecorderFailure
from ._recorder import ResumeEvent as ResumeEvent
from ._recorder import RunEndEvent as RunEndEvent
from ._recorder import RunStartEvent as RunStartEvent
from ._recorder import StageEndEvent as StageEndEvent
from ._recorder import StageStartEvent as StageStartEvent
from ._recorder import SubflowEvent as SubflowEvent
from ._recorder import WriteEvent as WriteEvent
from ._recorder import deferred as deferred
from ._redact import RedactionPolicy as RedactionPolicy
from ._retry import Retry as Retry
from ._run_queue import QueueEntry as QueueEntry
from ._run_queue import WorkerInfo as WorkerInfo
from ._scope import Scope as Scope
from ._seal import Seal as Seal
from ._snapshot import SNAPSHOT_FORMAT as SNAPSHOT_FORMAT
from ._snapshot import Snapshot as Snapshot
from ._snapshot import StateDiff as StateDiff
from ._sqlite import SqliteStore as SqliteStore
from ._state import MISSING as MISSING
from ._store import CommitMeta as CommitMeta
from ._store import Durability as Durability
from ._store import MemoryStore as MemoryStore
from ._store import RunInfo as RunInfo
from ._store import RunStore as RunStore
from ._stream import RunStream as RunStream
from ._sync import run_sync as run_sync
from ._values import FrozenDict as FrozenDict
from ._values import FrozenList as FrozenList
from ._values import thaw as thaw
from ._worker import Worker as Worker
from ._worker import WorkerReport as WorkerReport
from ._worker_target import WorkOutcome as WorkOutcome
from ._worker_target import WorkTarget as WorkTarget

__all__ = [
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
    "CheckpointClaimedError",
    "CheckpointError",
    "Commit",
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
    "Executor",
    "ExecutorUsageError",
    "FailedAttempt",
    "FlowChart",
    "ForEachRecord",
    "ForgedCheckpointError",
    "ForkRecord",
    "FrozenDict",
    "FrozenList",
    "InputValidationError",
    "LeaseLostError",
    "LoopLimitError",
    "MemoryStore",
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
    "PostgresStore",
    "QueueEntry",
    "RayBranchError",
    "RayRunner",
    "ReadEvent",
    "ReadOnlyStateError",
    "Recorder",
    "RecorderFailure",
    "RecoveryError",
    "RedactionPolicy",
    "ResumeEvent",
    "ResumeRecord",
    "Retry",
    "Rule",
    "RuleEvidence",
    "RunEndEvent",
    "RunError",
    "RunInfo",
    "RunResult",
    "RunStartEvent",
    "RunStore",
    "RunStream",
    "RunTimeoutError",
    "Scope",
    "Seal",
    "SealError",
    "SealRequiredError",
    "Segment",
    "Selection",
    "SelectorBuilder",
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
    "SubflowEvent",
    "TrackwayError",
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
    "causal_chain",
    "check_document",
    "compiled_modules",
    "decide",
    "deferred",
    "flow_chart",
    "load_document",
    "ray_runner",
    "register_causal_profile",
    "run_sync",
    "select",
    "thaw",
]
