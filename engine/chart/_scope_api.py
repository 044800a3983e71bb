"""The :class:`Scope` a stage function is written against: what it may read, write, emit and
do with its run, as a protocol.

A chart names its stage functions' parameter (``StageFn``, ``ResumeFn``, a mapper) and sits
below the run layer, which implements the interface (``run._scope.TrackedScope``, a compiled
class on the compiled build). Declaring it here keeps the run layer above the chart; user code
annotates ``scope: Scope`` as it always did. ``tests/engine/test_scope_interface.py`` keeps the
protocol and the class member for member alike.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, NoReturn, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from ..observe._redact import RedactionPolicy

__all__ = ["Scope"]

_T = TypeVar("_T")


@runtime_checkable
class Scope(Protocol):
    """A stage's handle on state: tracked reads, staged writes, events and control.

    Reads see committed state plus this stage's own staged writes. Writes are validated and
    serialized when made, and become one commit when the stage ends (return, raise or pause).
    """

    # -- the stage and its run -----------------------------------------------------------

    @property
    def run_id(self) -> str:
        """The id of the run this stage executes in."""
        ...

    @property
    def stage_id(self) -> str:
        """The id of the node running: the stage (or decider, selector, subflow, ...)."""
        ...

    @property
    def stage_path(self) -> str:
        """Where in the run this execution is (``route#2``, ``fan#1/a/step#0``): the path
        its commit is logged under (:class:`~trackway.engine.StagePath` parses it)."""
        ...

    @property
    def redaction(self) -> RedactionPolicy | None:
        """The run's redaction policy (``None`` without one): code that writes outside the
        record, such as a log line, hides what the policy hides."""
        ...

    def hide_value(self, text: str) -> None:
        """Mask ``text`` wherever this run's record goes from now on: the store's rows, the
        snapshot, recordings, recorders and events keep a marker in its place inside any
        string (the live run, and what a stage reads, keep the real value). For a secret a
        stage fetched: mark it before it is written. The text itself is kept by the run
        only; a run resumed elsewhere does not know it."""
        ...

    def unquoted(self, text: str) -> str:
        """``text`` with every text this run hides (:meth:`hide_value`) masked: for what a
        stage writes outside the record, such as a log line or a row in another system."""
        ...

    def run_local(self, key: Hashable, factory: Callable[[], _T]) -> _T:
        """A value that lives and dies with this run, made by ``factory()`` on first use.

        For caches a stage keeps between its executions (parsed messages, running hashes):
        never committed, never recorded, never seen by a resumed run, freed (and closed, if
        it has ``close()``) when the run ends. State that matters goes through
        ``scope[...] =``, so it is in the log.
        """
        ...

    # -- reads ---------------------------------------------------------------------------

    def __getitem__(self, key: str) -> Any:
        """Tracked read of ``key``: its value (read-only), or :class:`MissingKeyError`
        naming the keys present when it is absent."""
        ...

    def get(self, key: str, default: Any = None) -> Any:
        """Tracked read that returns ``default`` when ``key`` is absent."""
        ...

    def __contains__(self, key: object) -> bool:
        """Tracked check that ``key`` is present."""
        ...

    # -- writes --------------------------------------------------------------------------

    def __setitem__(self, key: object, value: Any) -> None:
        """Stage ``value`` (JSON: checked and serialized now) under ``key``, a ``str``."""
        ...

    def __delitem__(self, key: object) -> None:
        """Stage the deletion of ``key``."""
        ...

    def append(self, key: object, item: Any) -> None:
        """Append one item to the list at ``key`` (a new list if absent). Logs the item only."""
        ...

    def extend(self, key: object, items: Iterable[Any]) -> None:
        """Append several items to the list at ``key``. Logs the new items only."""
        ...

    def merge(self, key: object, values: Mapping[str, Any]) -> None:
        """Shallow-merge ``values`` into the dict at ``key`` (a new dict if absent).

        Logs only the merged entries; building the new version copies that one dict.
        """
        ...

    # -- events and control --------------------------------------------------------------

    def emit(self, name: object, payload: Any = None) -> None:
        """Record a named user event in this stage's commit and tell the recorders.

        ``name`` follows the rules of state keys (a str without control characters other
        than tab and newline); ``payload`` those of state values.
        """
        ...

    def pause(self, payload: Any = None) -> NoReturn:
        """Pause the run here: this stage's writes commit (outcome ``paused``) and the run
        returns ``status="paused"`` with a checkpoint. Resuming calls the stage's
        ``on_resume(scope, value)``. ``payload`` (JSON) says what the run is waiting for.
        """
        ...

    def break_(self, reason: object = None) -> None:
        """End the chart this stage runs in once this stage commits (the first reason wins).

        ``reason`` is a str or None; anything else raises :class:`StateValueError`.
        """
        ...
