"""The exception tree: every error trackway raises on purpose is a :class:`TrackwayError`.

Caller misuse, refused values, unreadable documents, failed runs and failed stores are kept
apart; the other layers add their subtrees (``trackway.tools``: ``ToolError``;
``trackway.agent``: ``AgentError`` and ``ProviderError``)::

    TrackwayError
    ├── ConfigurationError       an option a library object cannot take     (ValueError too)
    │   └── SealRequiredError    a hidden value would rest in clear: give the store a seal
    ├── UnknownKeywordError      a misspelled keyword; says the nearest one  (TypeError too)
    ├── ChartBuildError          a malformed chart, raised by the builder or build()
    ├── ExecutorUsageError       run_sync inside an event loop, bad executor options
    ├── InputValidationError     the run input fails the chart's input schema
    ├── OutOfRangeError          state_at(k), served_at(k) beyond the log    (IndexError too)
    ├── StateValueError          a write the commit log cannot hold faithfully
    ├── StateValidationError     a write the chart's state model refuses
    ├── ReadOnlyStateError       an in-place mutation of committed state
    ├── MissingKeyError          scope["k"] read a key the state does not hold (KeyError too)
    ├── StageContractError       a stage, mapping or items= function broke its contract
    ├── DocumentError            a persisted document this version cannot read
    │   ├── CorruptCheckpointError   (also a CheckpointError)
    │   └── CorruptStoreError        (also a StoreError)
    ├── CheckpointError          a checkpoint that cannot be resumed here
    │   ├── ChartMismatchError       the checkpoint is from another chart, or the chart changed
    │   ├── CheckpointClaimedError   the checkpoint was already resumed (it resumes once)
    │   ├── ForgedCheckpointError    not the checkpoint the run made (signature, store copy)
    │   ├── RecoveryError            recover() cannot continue this run
    │   └── CorruptCheckpointError   the checkpoint is malformed or was edited
    ├── RunError                 a run that ended failed; carries .snapshot
    │   ├── StageError           a stage raised; the original exception is __cause__
    │   ├── LoopLimitError       a loop went round more than max_iterations times
    │   ├── UnknownBranchError   a decider or selector chose a branch that does not exist
    │   ├── MergeConflictError   parallel branches wrote the same key under "error_on_conflict"
    │   ├── ParallelLimitError   parallel_for_each got more items than max_branches
    │   ├── OutputValidationError    the final state fails the chart's output schema
    │   ├── RunTimeoutError      the run's timeout= elapsed                 (TimeoutError too)
    │   └── StoreWriteError      the store failed under a running run (also a StoreError)
    └── StoreError               a store failed: unreachable, not writable, damaged
        ├── UnknownRunError      no such run or checkpoint in the store      (LookupError too)
        ├── LeaseLostError       a worker's write of a run whose lease it lost was refused
        ├── SealError            a sealed value cannot be opened (no seal, another key, altered)
        ├── CorruptStoreError    a stored row this version cannot read: names the store, the
        │                        run and the column (also a DocumentError)
        └── StoreWriteError
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from ._snapshot import Snapshot

__all__ = [
    "ChartBuildError",
    "ChartMismatchError",
    "CheckpointClaimedError",
    "CheckpointError",
    "ConfigurationError",
    "CorruptCheckpointError",
    "CorruptStoreError",
    "DocumentError",
    "ExecutorUsageError",
    "ForgedCheckpointError",
    "InputValidationError",
    "LeaseLostError",
    "LoopLimitError",
    "MergeConflictError",
    "MissingKeyError",
    "OutOfRangeError",
    "OutputValidationError",
    "ParallelLimitError",
    "ReadOnlyStateError",
    "RecoveryError",
    "RunError",
    "RunTimeoutError",
    "SealError",
    "SealRequiredError",
    "StageContractError",
    "StageError",
    "StateValidationError",
    "StateValueError",
    "StoreError",
    "StoreWriteError",
    "TrackwayError",
    "TrackwayWarning",
    "UnknownBranchError",
    "UnknownKeywordError",
    "UnknownRunError",
]


class TrackwayError(Exception):
    """Base class of every error trackway raises on purpose."""

    quoted: tuple[str, ...] | None = None
    """The parts of the message that quote text from outside trackway (a server's answer,
    a value), so that a redaction policy with ``errors=True`` masks just those and keeps the
    rest: ``()`` when the message is trackway's own words only, ``None`` (the default) when
    it is not said, and such a policy then keeps none of the message."""


class TrackwayWarning(UserWarning):
    """Something that works but is probably not what was meant (e.g. a tool result that
    looks like an envelope but lacks its ``effects`` marker). Filter on this category."""


class ConfigurationError(TrackwayError, ValueError):
    """A library object was given an option it cannot take; the message names the fix."""


class UnknownKeywordError(TrackwayError, TypeError):
    """A keyword argument the function does not take (``flow_chart(..., idd=...)``): the
    message names the nearest one it does take, or lists them. A ``TypeError``, as Python's
    own, so ``except TypeError`` still catches it."""

    def __init__(
        self, message: str, *, where: str, keyword: str, accepted: tuple[str, ...]
    ) -> None:
        super().__init__(message)
        self.where = where
        self.keyword = keyword
        self.accepted = accepted


class ChartBuildError(TrackwayError, ValueError):
    """The chart is malformed; the message names the stage and the fix."""


class ExecutorUsageError(TrackwayError, RuntimeError):
    """The executor was called in a way it cannot honour (the message says the right call)."""


class InputValidationError(TrackwayError, ValueError):
    """The run input fails the chart's declared input schema; nothing ran."""

    def __init__(self, message: str, *, issues: list[dict[str, str]]) -> None:
        super().__init__(message)
        self.issues = issues


class OutOfRangeError(TrackwayError, IndexError):
    """A position beyond the log: ``state_at(k)`` past the last commit, a model call that
    the run never made."""


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


class MissingKeyError(TrackwayError, KeyError):
    """``scope[key]`` read a key the state does not hold (``scope.get`` takes a default)."""

    def __init__(self, message: str, *, key: str) -> None:
        super().__init__(message)
        self.key = key

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class StageContractError(TrackwayError, TypeError):
    """A stage function, decider, ``items=`` or ``input=``/``output=`` mapping returned or
    did something its kind does not allow (e.g. a mapping that pauses)."""


class DocumentError(TrackwayError, ValueError):
    """A persisted document (checkpoint, snapshot, conversation, recording, stored run) this
    version cannot read: not JSON, another format, or a field of the wrong shape.

    ``document`` says which kind it is, ``field`` the dotted path of the bad field (if one
    is to blame) and ``source`` the file or run it came from (if known).
    """

    def __init__(
        self,
        message: str,
        *,
        document: str = "document",
        field: str | None = None,
        source: str | None = None,
    ) -> None:
        super().__init__(message)
        self.document = document
        self.field = field
        self.source = source


class CheckpointError(TrackwayError, ValueError):
    """The checkpoint cannot be resumed here; the message says why."""


class ChartMismatchError(CheckpointError):
    """The checkpoint was made by another chart, or by this chart before it changed."""


class CheckpointClaimedError(CheckpointError):
    """The checkpoint was already resumed; a checkpoint resumes exactly once."""


class RecoveryError(CheckpointError):
    """``recover()`` cannot continue this run: it ended by itself (done, broken, failed by a
    rule), waits on a checkpoint, or its log does not match the chart."""


class ForgedCheckpointError(CheckpointError):
    """The checkpoint is not the one the run made: its signature does not match, or the
    store holds no such checkpoint, or holds it with other content."""


class CorruptCheckpointError(CheckpointError, DocumentError):
    """The checkpoint is malformed, or was edited after the run made it."""

    def __init__(
        self,
        message: str,
        *,
        document: str = "checkpoint",
        field: str | None = None,
        source: str | None = None,
    ) -> None:
        DocumentError.__init__(self, message, document=document, field=field, source=source)


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

    quoted = ()  # names the loop and the limit, nothing the run saw


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

    quoted = ()  # names the stage and the timeout, nothing the run saw


class OutputValidationError(RunError):
    """The run's final state fails the chart's declared output schema (every commit is kept)."""

    def __init__(self, message: str, *, issues: list[dict[str, str]]) -> None:
        super().__init__(message)
        self.issues = issues


class StoreError(TrackwayError):
    """A store failed: unreachable, not writable, or holding damaged data."""


class UnknownRunError(StoreError, LookupError):
    """The store holds no run (or checkpoint) with that id."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class CorruptStoreError(StoreError, DocumentError):
    """A store holds a row this version cannot read: changed by a program other than
    trackway, or a damaged file. ``source`` is the store (its file, or its URL without the
    password), ``run_id`` the run (when the row names one) and ``field`` the column
    (``"trackway_commits.doc"``); the store's other runs can still be read."""

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        run_id: str | None = None,
        field: str | None = None,
    ) -> None:
        DocumentError.__init__(self, message, document="stored run", field=field, source=source)
        self.run_id = run_id


class StoreWriteError(StoreError, RunError):
    """The store failed while a run was writing to it; the run ended ``failed``."""


class SealError(StoreError):
    """A sealed value could not be opened: the store was given no seal, the value was sealed
    under another key, or it was altered or moved to another row."""


class SealRequiredError(ConfigurationError):
    """A value a redaction policy hides would rest in clear: the store that takes it (a
    submit, an answer, a worker's store) needs ``seal=Seal(key)``."""


class LeaseLostError(StoreError):
    """A worker tried to write a run whose lease it no longer holds (it ran out, and another
    worker claimed the run): the write was refused, so the new holder's record stands."""


_E = TypeVar("_E", bound=BaseException)


def caused_by(err: _E, cause: BaseException | None) -> _E:
    """``err`` with ``cause`` as its ``__cause__`` (``None`` hides the context), as ``raise
    err from cause`` sets it. Compiled modules (docs/compiled.md) drop a ``from`` clause, so
    their raises chain through this too; in pure Python the ``from`` does the same again."""
    err.__cause__ = cause
    return err
