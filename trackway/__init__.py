"""trackway: explainable flowcharts and LLM agents on one commit log.

The public API for flow authors. Imports flow one way: ``engine`` <- ``recorders`` <- ``tools``
<- ``agent`` <- this facade; nothing inside imports the facade.
"""

import os as _os

# Installed, trackway.engine etc. sit inside this package. Imported straight from a source
# checkout (the repository root on sys.path), they are sibling folders: look there too.
_here = _os.path.dirname(__file__)
if not _os.path.isdir(_os.path.join(_here, "engine")):
    _root = _os.path.dirname(_here)
    if _os.path.isfile(_os.path.join(_root, "engine", "__init__.py")):
        __path__.append(_root)

from trackway.engine import MISSING as MISSING
from trackway.engine import OPERATORS as OPERATORS
from trackway.engine import Branch as Branch
from trackway.engine import CausalChain as CausalChain
from trackway.engine import ChartBuilder as ChartBuilder
from trackway.engine import ChartBuildError as ChartBuildError
from trackway.engine import ChartMismatchError as ChartMismatchError
from trackway.engine import Checkpoint as Checkpoint
from trackway.engine import CheckpointClaimedError as CheckpointClaimedError
from trackway.engine import CheckpointError as CheckpointError
from trackway.engine import Commit as Commit
from trackway.engine import CommitMeta as CommitMeta
from trackway.engine import DeciderBuilder as DeciderBuilder
from trackway.engine import Decision as Decision
from trackway.engine import DecisionEvent as DecisionEvent
from trackway.engine import Deferred as Deferred
from trackway.engine import Durability as Durability
from trackway.engine import EmitEvent as EmitEvent
from trackway.engine import EmittedEvent as EmittedEvent
from trackway.engine import ErrorEvent as ErrorEvent
from trackway.engine import ErrorInfo as ErrorInfo
from trackway.engine import Executor as Executor
from trackway.engine import ExecutorUsageError as ExecutorUsageError
from trackway.engine import FlowChart as FlowChart
from trackway.engine import FrozenDict as FrozenDict
from trackway.engine import FrozenList as FrozenList
from trackway.engine import InputValidationError as InputValidationError
from trackway.engine import LoopLimitError as LoopLimitError
from trackway.engine import MemoryStore as MemoryStore
from trackway.engine import MergeConflictError as MergeConflictError
from trackway.engine import MergePolicy as MergePolicy
from trackway.engine import Node as Node
from trackway.engine import ObserverStats as ObserverStats
from trackway.engine import Op as Op
from trackway.engine import OutputValidationError as OutputValidationError
from trackway.engine import ParallelLimitError as ParallelLimitError
from trackway.engine import PauseEvent as PauseEvent
from trackway.engine import PostgresStore as PostgresStore
from trackway.engine import ReadEvent as ReadEvent
from trackway.engine import ReadOnlyStateError as ReadOnlyStateError
from trackway.engine import Recorder as Recorder
from trackway.engine import RecorderFailure as RecorderFailure
from trackway.engine import RedactionPolicy as RedactionPolicy
from trackway.engine import ResumeEvent as ResumeEvent
from trackway.engine import Retry as Retry
from trackway.engine import Rule as Rule
from trackway.engine import RunEndEvent as RunEndEvent
from trackway.engine import RunError as RunError
from trackway.engine import RunInfo as RunInfo
from trackway.engine import RunResult as RunResult
from trackway.engine import RunStartEvent as RunStartEvent
from trackway.engine import RunStore as RunStore
from trackway.engine import RunTimeoutError as RunTimeoutError
from trackway.engine import Scope as Scope
from trackway.engine import Selection as Selection
from trackway.engine import SelectorBuilder as SelectorBuilder
from trackway.engine import Snapshot as Snapshot
from trackway.engine import SqliteStore as SqliteStore
from trackway.engine import StageEndEvent as StageEndEvent
from trackway.engine import StageError as StageError
from trackway.engine import StageStartEvent as StageStartEvent
from trackway.engine import StateDiff as StateDiff
from trackway.engine import StateValidationError as StateValidationError
from trackway.engine import StateValueError as StateValueError
from trackway.engine import StoreError as StoreError
from trackway.engine import SubflowEvent as SubflowEvent
from trackway.engine import TrackwayError as TrackwayError
from trackway.engine import UnknownBranchError as UnknownBranchError
from trackway.engine import UnknownRunError as UnknownRunError
from trackway.engine import WriteEvent as WriteEvent
from trackway.engine import causal_chain as causal_chain
from trackway.engine import decide as decide
from trackway.engine import deferred as deferred
from trackway.engine import flow_chart as flow_chart
from trackway.engine import select as select
from trackway.engine import thaw as thaw

__version__ = "0.1.0"

__all__ = [
    "MISSING",
    "OPERATORS",
    "Branch",
    "CausalChain",
    "ChartBuildError",
    "ChartBuilder",
    "ChartMismatchError",
    "Checkpoint",
    "CheckpointClaimedError",
    "CheckpointError",
    "Commit",
    "CommitMeta",
    "DeciderBuilder",
    "Decision",
    "DecisionEvent",
    "Deferred",
    "Durability",
    "EmitEvent",
    "EmittedEvent",
    "ErrorEvent",
    "ErrorInfo",
    "Executor",
    "ExecutorUsageError",
    "FlowChart",
    "FrozenDict",
    "FrozenList",
    "InputValidationError",
    "LoopLimitError",
    "MemoryStore",
    "MergeConflictError",
    "MergePolicy",
    "Node",
    "ObserverStats",
    "Op",
    "OutputValidationError",
    "ParallelLimitError",
    "PauseEvent",
    "PostgresStore",
    "ReadEvent",
    "ReadOnlyStateError",
    "Recorder",
    "RecorderFailure",
    "RedactionPolicy",
    "ResumeEvent",
    "Retry",
    "Rule",
    "RunEndEvent",
    "RunError",
    "RunInfo",
    "RunResult",
    "RunStartEvent",
    "RunStore",
    "RunTimeoutError",
    "Scope",
    "Selection",
    "SelectorBuilder",
    "Snapshot",
    "SqliteStore",
    "StageEndEvent",
    "StageError",
    "StageStartEvent",
    "StateDiff",
    "StateValidationError",
    "StateValueError",
    "StoreError",
    "SubflowEvent",
    "TrackwayError",
    "UnknownBranchError",
    "UnknownRunError",
    "WriteEvent",
    "__version__",
    "causal_chain",
    "decide",
    "deferred",
    "flow_chart",
    "select",
    "thaw",
]
