"""trackway.engine: charts of stage functions whose every write lands in one commit log.

Layering: this package imports nothing from ``trackway.recorders``, ``trackway.tools`` or
``trackway.agent``; they build on its public names only.
"""

from .chart._branch_builders import DeciderBuilder as DeciderBuilder
from .chart._branch_builders import SelectorBuilder as SelectorBuilder
from .chart._builder import ChartBuilder as ChartBuilder
from .chart._builder import flow_chart as flow_chart
from .chart._chart import Branch as Branch
from .chart._chart import FlowChart as FlowChart
from .chart._chart import MergePolicy as MergePolicy
from .chart._chart import Node as Node
from .chart._runner import BranchRunner as BranchRunner
from .chart._scope_api import Scope as Scope
from .core._commit import Commit as Commit
from .core._commit import CommitDoc as CommitDoc
from .core._commit import EmittedEvent as EmittedEvent
from .core._commit import ErrorInfo as ErrorInfo
from .core._commit import Op as Op
from .core._commit import write_value as write_value
from .core._detail import CommitDetail as CommitDetail
from .core._detail import Condition as Condition
from .core._detail import Control as Control
from .core._detail import DecisionEvidence as DecisionEvidence
from .core._detail import FailedAttempt as FailedAttempt
from .core._detail import ForEachRecord as ForEachRecord
from .core._detail import ForkRecord as ForkRecord
from .core._detail import MergeRecord as MergeRecord
from .core._detail import ResumeRecord as ResumeRecord
from .core._detail import RuleEvidence as RuleEvidence
from .core._documents import check_document as check_document
from .core._documents import load_document as load_document
from .core._errors import ChartBuildError as ChartBuildError
from .core._errors import ChartMismatchError as ChartMismatchError
from .core._errors import CheckpointClaimedError as CheckpointClaimedError
from .core._errors import CheckpointError as CheckpointError
from .core._errors import ConfigurationError as ConfigurationError
from .core._errors import CorruptCheckpointError as CorruptCheckpointError
from .core._errors import CorruptStoreError as CorruptStoreError
from .core._errors import DocumentError as DocumentError
from .core._errors import ExecutorUsageError as ExecutorUsageError
from .core._errors import ForgedCheckpointError as ForgedCheckpointError
from .core._errors import InputValidationError as InputValidationError
from .core._errors import LeaseLostError as LeaseLostError
from .core._errors import LoopLimitError as LoopLimitError
from .core._errors import MergeConflictError as MergeConflictError
from .core._errors import MissingKeyError as MissingKeyError
from .core._errors import OutOfRangeError as OutOfRangeError
from .core._errors import OutputValidationError as OutputValidationError
from .core._errors import ParallelLimitError as ParallelLimitError
from .core._errors import ReadOnlyStateError as ReadOnlyStateError
from .core._errors import RecoveryError as RecoveryError
from .core._errors import RunError as RunError
from .core._errors import RunTimeoutError as RunTimeoutError
from .core._errors import SealError as SealError
from .core._errors import SealRequiredError as SealRequiredError
from .core._errors import StageContractError as StageContractError
from .core._errors import StageError as StageError
from .core._errors import StateValidationError as StateValidationError
from .core._errors import StateValueError as StateValueError
from .core._errors import StoreError as StoreError
from .core._errors import StoreWriteError as StoreWriteError
from .core._errors import TrackwayError as TrackwayError
from .core._errors import TrackwayWarning as TrackwayWarning
from .core._errors import UnknownBranchError as UnknownBranchError
from .core._errors import UnknownKeywordError as UnknownKeywordError
from .core._errors import UnknownRunError as UnknownRunError
from .core._paths import Segment as Segment
from .core._paths import StagePath as StagePath
from .core._retry import Retry as Retry
from .core._snapshot import SNAPSHOT_FORMAT as SNAPSHOT_FORMAT
from .core._snapshot import ObserverStats as ObserverStats
from .core._snapshot import RecorderFailure as RecorderFailure
from .core._snapshot import Snapshot as Snapshot
from .core._snapshot import StateDiff as StateDiff
from .core._state import MISSING as MISSING
from .core._sync import run_sync as run_sync
from .core._values import FrozenDict as FrozenDict
from .core._values import FrozenList as FrozenList
from .core._values import thaw as thaw
from .execute._executor import Executor as Executor
from .execute._executor import RunResult as RunResult
from .execute._serving_gc import SERVING_YOUNG_THRESHOLD as SERVING_YOUNG_THRESHOLD
from .execute._serving_gc import serving_gc as serving_gc
from .execute._stream import RunStream as RunStream
from .observe._causal import CausalChain as CausalChain
from .observe._causal import CausalProfile as CausalProfile
from .observe._causal import causal_chain as causal_chain
from .observe._causal import register_causal_profile as register_causal_profile
from .observe._redact import RedactionPolicy as RedactionPolicy
from .observe._seal import Seal as Seal
from .run._compiled import compiled_modules as compiled_modules
from .run._decide import OPERATORS as OPERATORS
from .run._decide import Decision as Decision
from .run._decide import Rule as Rule
from .run._decide import Selection as Selection
from .run._decide import decide as decide
from .run._decide import select as select
from .run._recorder import DecisionEvent as DecisionEvent
from .run._recorder import Deferred as Deferred
from .run._recorder import EmitEvent as EmitEvent
from .run._recorder import ErrorEvent as ErrorEvent
from .run._recorder import PauseEvent as PauseEvent
from .run._recorder import ReadEvent as ReadEvent
from .run._recorder import Recorder as Recorder
from .run._recorder import ResumeEvent as ResumeEvent
from .run._recorder import RunEndEvent as RunEndEvent
from .run._recorder import RunStartEvent as RunStartEvent
from .run._recorder import StageEndEvent as StageEndEvent
from .run._recorder import StageStartEvent as StageStartEvent
from .run._recorder import SubflowEvent as SubflowEvent
from .run._recorder import WriteEvent as WriteEvent
from .run._recorder import deferred as deferred
from .scale._ray_runner import RayBranchError as RayBranchError
from .scale._ray_runner import RayRunner as RayRunner
from .scale._ray_runner import ray_runner as ray_runner
from .scale._worker import Worker as Worker
from .scale._worker import WorkerReport as WorkerReport
from .scale._worker_target import WorkOutcome as WorkOutcome
from .scale._worker_target import WorkTarget as WorkTarget
from .stores._checkpoint import CHECKPOINT_FORMAT as CHECKPOINT_FORMAT
from .stores._checkpoint import Checkpoint as Checkpoint
from .stores._memory_rows import MemoryRows as MemoryRows
from .stores._paused import PausedRun as PausedRun
from .stores._postgres import PostgresStore as PostgresStore
from .stores._sqlite import SqliteStore as SqliteStore
from .stores._store import CommitMeta as CommitMeta
from .stores._store import Durability as Durability
from .stores._store import MemoryStore as MemoryStore
from .stores._store import RunInfo as RunInfo
from .stores._store import RunStore as RunStore
from .stores.queue._run_queue import QueueEntry as QueueEntry
from .stores.queue._run_queue import WorkerInfo as WorkerInfo

__all__ = [
    "CHECKPOINT_FORMAT",
    "MISSING",
    "OPERATORS",
    "SERVING_YOUNG_THRESHOLD",
    "SNAPSHOT_FORMAT",
    "Branch",
    "BranchRunner",
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
    "MemoryRows",
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
    "serving_gc",
    "thaw",
    "write_value",
]
