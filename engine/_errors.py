"""The engine's exceptions.

Caller misuse, refused values and run failures are kept apart::

    TrackwayError
    ├── ChartBuildError          a malformed chart, raised by the builder or build()
    ├── StateValueError          a write the commit log cannot hold faithfully (TypeError too)
    ├── StateValidationError     a write the chart's state model refuses (TypeError too)
    ├── ReadOnlyStateError       an in-place mutation of committed state (TypeError too)
    ├── ExecutorUsageError       run_sync inside an event loop, bad executor options
    ├── InputValidationError     the run input fails the chart's input schema (ValueError too)
    ├── UnknownRunError          no such run or checkpoint in the store (LookupError too)
    ├── CheckpointError          a checkpoint that is corrupt or cannot be resumed (ValueError too)
    │   ├── ChartMismatchError   the checkpoint is from another chart, or the chart changed
    │   └── CheckpointClaimedError   the checkpoint was already resumed (it resumes once)
    └── RunError                 a run that ended failed; carries ``.snapshot``
        ├── StageError           a stage raised; the original exception is ``__cause__``
        ├── LoopLimitError       a loop went round more than ``max_iterations`` times
        ├── UnknownBranchError   a decider or selector chose a branch that does not exist
        ├── MergeConflictError   parallel branches wrote the same key under "error_on_conflict"
        ├── ParallelLimitError   parallel_for_each got more items than ``max_branches``
        ├── OutputValidationError    the final state fails the chart's output schema
        ├── RunTimeoutError      the run's ``timeout=`` elapsed (TimeoutError too)
        └── StoreError           the store failed (unreachable, not writable, write failed)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._snapshot import Snapshot

__all__ = [
    "ChartBuildError",
    "ChartMismatchError",
    "CheckpointClaimedError",
    "CheckpointError",
    "ExecutorUsageError",
    "InputValidationError",
    "LoopLimitError",
    "MergeConflictError",
    "OutputValidationError",
    "ParallelLimitError",
    "ReadOnlyStateError",
    "RunError",
    "RunTimeoutError",
    "StageError",
    "StateValidationError",
    "StateValueError",
    "StoreError",
    "TrackwayError",
    "UnknownBranchError",
    "UnknownRunError",
]


class TrackwayError(Exception):
    """Base class of every error trackway raises on purpose."""


class ChartBuildError(TrackwayError, ValueError):
    """The chart is malformed; the message names the stage and the fix."""


class StateValueError(TrackwayError, TypeError):
    """A value cannot be stored faithfully in the commit log (refused at the write)."""

    def __init__(self, message: str, *, key: str, stage_path: str | None) -> None:
        super().__init__(message)
        self.key = key
        self.stage_path = stage_path


class StateValidationError(TrackwayError, TypeError):
    """A write does not match the chart's state model (refused at the write)."""

    def __init__(self, message: str, *, key: str, stage_path: str | None) -> None:
        super().__init__(message)
        self.key = key
        self.stage_path = stage_path


class ReadOnlyStateError(TrackwayError, TypeError):
    """Committed state was mutated in place; history is immutable."""


class ExecutorUsageError(TrackwayError, RuntimeError):
    """The executor was called in a way it cannot honour (the message says the right call)."""


class InputValidationError(TrackwayError, ValueError):
    """The run input fails the chart's declared input schema; nothing ran."""

    def __init__(self, message: str, *, issues: list[dict[str, str]]) -> None:
        super().__init__(message)
        self.issues = issues


class UnknownRunError(TrackwayError, LookupError):
    """The store holds no run (or checkpoint) with that id."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class CheckpointError(TrackwayError, ValueError):
    """The checkpoint is corrupt or cannot be resumed here; the message says why."""


class ChartMismatchError(CheckpointError):
    """The checkpoint was made by another chart, or by this chart before it changed."""


class CheckpointClaimedError(CheckpointError):
    """The checkpoint was already resumed; a checkpoint resumes exactly once."""


class RunError(TrackwayError):
    """A run ended ``failed``; ``.snapshot`` holds everything it committed."""

    snapshot: Snapshot | None

    def __init__(self, message: str, *, stage_path: str | None = None) -> None:
        super().__init__(message)
        self.stage_path = stage_path
        self.snapshot = None


class StageError(RunError):
    """A stage raised. Its writes were committed with outcome ``error``."""


class LoopLimitError(RunError):
    """A loop went round more often than the executor's ``max_iterations`` allows."""


class UnknownBranchError(RunError):
    """A decider or selector returned a branch key the chart does not declare."""


class MergeConflictError(RunError):
    """Two parallel branches wrote the same key and the merge policy forbids it."""

    def __init__(self, message: str, *, stage_path: str | None, key: str, branches: list[str]):
        super().__init__(message, stage_path=stage_path)
        self.key = key
        self.branches = branches


class ParallelLimitError(RunError):
    """``parallel_for_each`` was given more items than ``max_branches``."""


class RunTimeoutError(RunError, TimeoutError):
    """The run's ``timeout=`` elapsed; the stage in flight committed as ``cancelled``."""


class StoreError(RunError):
    """The store failed: unreachable, not writable, or a write failed mid-run."""


class OutputValidationError(RunError):
    """The run's final state fails the chart's declared output schema (every commit is kept)."""

    def __init__(self, message: str, *, issues: list[dict[str, str]]) -> None:
        super().__init__(message)
        self.issues = issues
