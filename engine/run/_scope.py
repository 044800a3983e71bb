"""The tracked scope a stage reads and writes state through: :class:`TrackedScope`, the run
layer's implementation of the :class:`~trackway.engine.Scope` protocol (``chart._scope_api``).

The engine makes and calls it as this class, never through the protocol, so the compiled build
keeps its calls native (docs/compiled.md). Its public members' documentation is the protocol's.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar, cast

from orjson import dumps

from ..core._commit import Emitted, Op, Write
from ..core._errors import MissingKeyError, StateValueError
from ..core._state import DELETED, MISSING, fold_ops
from ..core._values import (
    DUMP_OPTIONS,
    EVENT_PAYLOAD,
    FrozenDict,
    FrozenList,
    check_key,
    encode_value,
    to_plain,
)

if TYPE_CHECKING:
    from ..observe._redact import RedactionPolicy
    from ._context import Strand

__all__ = ["PauseSignal", "TrackedScope"]


_T = TypeVar("_T")

_HELD: ContextVar[tuple[TrackedScope, list[tuple[object, Any]]] | None] = ContextVar(
    "trackway_held_emits", default=None
)
"""The scope whose emits the current task holds, and the list they go to: see
:meth:`TrackedScope._hold_emits`."""


class PauseSignal(BaseException):
    """Raised by ``scope.pause``; a BaseException so ``except Exception`` cannot swallow it."""

    def __init__(self, data: bytes, payload: Any) -> None:
        super().__init__("stage paused")
        self.data = data
        self.payload = payload


class TrackedScope:
    """A stage's handle on state (the :class:`~trackway.engine.Scope` a stage function
    gets): tracked reads, staged writes, events and control.

    Reads see committed state plus this stage's own staged writes (``_touched``, folded
    into ``_staged`` on demand). Writes are validated and serialized when made, kept in
    ``_ops``, and become one commit when the stage ends (return, raise or pause); the keys
    read (``_reads``) go on the commit too.
    """

    __slots__ = (
        "_broke",
        "_deep",
        "_events",
        "_latest",
        "_ops",
        "_reads",
        "_rec",
        "_staged",
        "_store",
        "_strand",
        "_touched",
        "stage_id",
        "stage_path",
    )

    def __init__(self, strand: Strand, stage_path: str, stage_id: str) -> None:
        self._strand = strand
        self._store = store = strand.frame.store
        self._latest = store.latest  # own keys' newest values: a read is one lookup
        self._deep = store.reads_through  # a key it never wrote is read from a parent
        self._rec = strand.run.recorders  # read on every tracked read and write
        self.stage_path = stage_path
        self.stage_id = stage_id
        # the lists are made at the first write and emit (a stage awaiting a model call holds
        # its scope across the await, so a server with many runs in flight keeps each one)
        self._ops: list[Write] | tuple[()] = ()
        self._touched: dict[str, list[Write]] = {}
        self._staged: dict[str, Any] = {}
        self._reads: dict[str, None] = {}
        self._events: list[Emitted] | tuple[()] = ()
        self._broke: str | None = None

    # -- reads ---------------------------------------------------------------------------

    @property
    def run_id(self) -> str:
        return self._strand.run.run_id

    @property
    def redaction(self) -> RedactionPolicy | None:
        redactor = self._strand.run.redactor
        return None if redactor is None else redactor.policy

    def hide_value(self, text: str) -> None:
        if not isinstance(text, str) or not text:
            raise TypeError(
                f"hide_value(text) hides a non-empty str, not {text!r}: pass the text as it "
                "would appear in the record"
            )
        self._strand.run.hide_value(text)

    def unquoted(self, text: str) -> str:
        """``text`` with the texts this run hides (``hide_value``) masked: for what goes
        outside the record, such as a log line."""
        redactor = self._strand.run.redactor
        hidden = None if redactor is None else redactor.hidden
        return text if hidden is None else str(hidden.mask(text))

    def run_local(self, key: Hashable, factory: Callable[[], _T]) -> _T:
        return self._strand.run.locals.get(key, factory)

    def _peek(self, key: str) -> Any:
        if key in self._touched:
            staged = self._staged.get(key, MISSING)
            if staged is MISSING:
                staged = fold_ops(self._store.get(key), self._touched[key], in_place=False)
                self._staged[key] = staged
            return MISSING if staged is DELETED else staged
        return self._store.get(key)

    def _track(self, key: str, value: Any) -> None:
        self._reads[key] = None
        rec = self._rec
        if rec.on_read:
            rec.read(self, key, value)

    # The reads below inline ``_peek``, ``StateStore.get`` and ``_track`` (a stage makes
    # dozens per run of a loop): a key this stage has not written is one lookup in the
    # store's newest values (its parent's, for a key a branch never wrote).

    def _committed(self, key: str) -> Any:
        value = self._latest.get(key, MISSING)
        if value is DELETED:
            return MISSING
        if value is MISSING and self._deep:
            return self._store.get(key)
        return value

    def __getitem__(self, key: str) -> Any:
        if key in self._touched:
            value = self._peek(key)
        else:
            value = self._latest.get(key, MISSING)
            if value is DELETED or (value is MISSING and self._deep):
                value = self._committed(key)
        self._reads[key] = None
        if self._rec.on_read:
            self._rec.read(self, key, value)
        if value is MISSING:
            keys = set(self._store.current()) | set(self._touched)
            present = sorted(k for k in keys if self._peek(k) is not MISSING)
            raise MissingKeyError(
                f"state has no key {key!r} (read in stage {self.stage_path!r}); keys present: "
                f"{present}. Use scope.get({key!r}, default) for a key that may be absent.",
                key=key,
            )
        return value

    def get(self, key: str, default: Any = None) -> Any:
        if key in self._touched:
            value = self._peek(key)
        else:
            value = self._latest.get(key, MISSING)
            if value is DELETED or (value is MISSING and self._deep):
                value = self._committed(key)
        self._reads[key] = None
        if self._rec.on_read:
            self._rec.read(self, key, value)
        return default if value is MISSING else value

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        value = self._peek(key)
        self._track(key, value)
        return value is not MISSING

    # -- writes --------------------------------------------------------------------------

    def _stage(self, op: Write) -> None:
        made = self._ops
        if isinstance(made, tuple):
            made = self._ops = []
        made.append(op)
        key = op[1]
        ops = self._touched.get(key)
        if ops is None:
            self._touched[key] = [op]
        else:
            ops.append(op)
            self._staged.pop(key, None)
        rec = self._rec
        if rec.on_write:
            rec.write(self, Op._make(op))

    # The writes take their key as ``object`` and refuse a non-str one with a
    # StateValueError that names it: a compiled build (docs/compiled.md) checks a ``str``
    # parameter itself, with a TypeError that names neither the key nor the stage.

    def _encode(self, key: object, value: Any) -> tuple[str, bytes, Any]:
        if type(key) is not str:
            raise StateValueError(
                f"state keys are str; stage {self.stage_path!r} wrote the key {key!r}",
                key=repr(key),
                stage_path=self.stage_path,
            )
        data, owned = encode_value(value, key, self.stage_path)
        return key, data, owned

    def __setitem__(self, key: object, value: Any) -> None:
        key, data, owned = self._encode(key, value)
        validator = self._strand.validator
        if validator is not None:
            validator.check_set(key, data, self.stage_path)
        self._stage(("set", key, data, owned))

    def __delitem__(self, key: object) -> None:
        key = self._encode(key, None)[0]
        if self._strand.validator is not None:
            self._strand.validator.check_delete(key, self.stage_path)
        self._stage(("delete", key, b"null", None))

    def append(self, key: object, item: Any) -> None:
        self._append(key, [item])

    def extend(self, key: object, items: Iterable[Any]) -> None:
        if isinstance(items, (str, bytes, Mapping)):
            raise StateValueError(
                f"scope.extend({key!r}, ...) in stage {self.stage_path!r} needs a list of items, "
                f"not a {type(items).__name__}; use scope.append for a single item",
                key=key if type(key) is str else repr(key),
                stage_path=self.stage_path,
            )
        self._append(key, list(items))

    def _append(self, key: object, items: list[Any]) -> None:
        key, data, owned = self._encode(key, items)
        current = self._peek(key)
        if current is not MISSING and not isinstance(current, FrozenList):
            raise StateValueError(
                f"cannot append to state key {key!r} in stage {self.stage_path!r}: it holds a "
                f"{type(current).__name__}, and append needs a list (or an absent key)",
                key=key,
                stage_path=self.stage_path,
            )
        validator = self._strand.validator
        if validator is not None:
            validator.check_append(key, data, self.stage_path)
        self._stage(("append", key, data, owned))

    def _set_built(self, key: str, value: Any) -> None:
        """``scope[key] = value`` for a value the library built of plain JSON only (str, int
        within 64 bits, finite float, bool, None, lists, dicts with str keys: no tuple, no
        frozen view, no subclass) and hands over: serialized once and not decoded back, so
        later reads see ``value`` itself, read-only (the library keeps no other handle on
        it). Anything orjson refuses takes the checked path, which names the problem."""
        try:
            data = b"%b" % dumps(value, option=DUMP_OPTIONS)  # exact size: see _values.exact_bytes
        except TypeError:
            self[key] = value
            return
        validator = self._strand.validator
        if validator is not None:
            validator.check_set(key, data, self.stage_path)
        self._stage(("set", key, data, value))

    def _extend_built(self, key: str, items: list[Any]) -> None:
        """:meth:`extend` for items the library built and hands over, as :meth:`_set_built`
        says (``items`` is the list the log keeps)."""
        try:
            data = b"%b" % dumps(items, option=DUMP_OPTIONS)
        except TypeError:
            self._append(key, list(items))
            return
        if key in self._touched:
            current = self._peek(key)
        else:  # _peek inlined, as the reads above inline it
            current = self._latest.get(key, MISSING)
            if current is DELETED or (current is MISSING and self._deep):
                current = self._committed(key)
        if current is not MISSING and type(current) is not FrozenList:
            self._append(key, list(items))  # the checked path says what is wrong
            return
        validator = self._strand.validator
        if validator is not None:
            validator.check_append(key, data, self.stage_path)
        self._stage(("append", key, data, items))

    def _set_reused(
        self, key: str, value: Any, kept: tuple[bytes, Any] | None
    ) -> tuple[bytes, Any]:
        """``scope[key] = value`` for a value a stage builds alike run after run (an agent's
        settings, its tools): where its JSON is ``kept``'s, the write holds ``kept``'s
        engine-owned value instead of a fresh decode, so those runs share one read-only object
        (and what is cached by its identity). Else the checked path writes it. Returns what to
        keep for the next run (the one write a key takes, as ``scope[key] = value``)."""
        try:
            data = b"%b" % dumps(value, default=to_plain, option=DUMP_OPTIONS)
        except TypeError:
            data = None
        # ``kept[1] == value`` as well: the checked path's test (the value is what its JSON
        # decodes to), so a tuple or a NaN that writes the same JSON is refused as before
        if kept is None or data != kept[0] or kept[1] != value:
            self[key] = value  # checked: refuses what would not come back from JSON
            op = cast("list[Write]", self._ops)[-1]  # a list once written
            return (op[2], op[3])
        validator = self._strand.validator
        if validator is not None:
            validator.check_set(key, data, self.stage_path)
        self._stage(("set", key, data, kept[1]))
        return kept

    def merge(self, key: object, values: Mapping[str, Any]) -> None:
        if not isinstance(values, Mapping):
            raise StateValueError(
                f"scope.merge({key!r}, ...) in stage {self.stage_path!r} needs a mapping, "
                f"got {type(values).__name__}",
                key=key if type(key) is str else repr(key),
                stage_path=self.stage_path,
            )
        key, data, owned = self._encode(key, values if type(values) is dict else dict(values))
        current = self._peek(key)
        if current is not MISSING and not isinstance(current, FrozenDict):
            raise StateValueError(
                f"cannot merge into state key {key!r} in stage {self.stage_path!r}: it holds a "
                f"{type(current).__name__}, and merge needs a dict (or an absent key)",
                key=key,
                stage_path=self.stage_path,
            )
        op: Write = ("merge", key, data, owned)
        validator = self._strand.validator
        if validator is not None:
            validator.check_merged(key, fold_ops(current, [op], in_place=False), self.stage_path)
        self._stage(op)

    # -- events and control --------------------------------------------------------------

    def emit(self, name: object, payload: Any = None) -> None:
        held = _HELD.get()
        if held is not None and held[0] is self:
            held[1].append((name, payload))
            return
        if not isinstance(name, str) or not name.isprintable():
            name = check_key(name, self.stage_path, "event name")
        data, owned = encode_value(payload, name, self.stage_path, EVENT_PAYLOAD)
        event = (name, data)
        events = self._events
        if isinstance(events, tuple):
            events = self._events = []
        events.append(event)
        rec = self._rec
        # the listeners get the copy decoded at the write, never a new one; an emit nobody
        # wants (``Recorder.wants_emit``) makes no event object
        if rec.on_emit and (rec.emit_wanted is None or rec.emit_wanted(name)):
            rec.emit(self, event, owned)

    def _hold_emits(self) -> list[tuple[object, Any]]:
        """From here to the end of the current task (a context of its own), this scope's
        :meth:`emit` calls are held in the list returned, unchecked and unheard, for the
        caller to emit in an order of its choosing: the agent's concurrent tool calls, each a
        task, emit in call order once all are done. Other scopes (a run nested in the task)
        and other tasks emit as usual."""
        held: list[tuple[object, Any]] = []
        _HELD.set((self, held))
        return held

    def _emit_built(self, name: str, payload: dict[str, Any]) -> None:
        """:meth:`emit` for a payload the library built of exact JSON values only (plain
        str, int within 64 bits, finite float, bool, None, dicts with str keys, lists and
        frozen views: no tuple, no subclass): serialized once and not decoded back, so the
        listeners get a read-only view of ``payload`` itself (the library keeps no other
        handle on it). A user's payload goes through :meth:`emit`, which checks that it
        comes back from JSON as it was."""
        try:
            data = dumps(payload, default=to_plain, option=DUMP_OPTIONS)
        except TypeError:  # not JSON after all: the checked path names the part
            self.emit(name, payload)
            return
        event = (name, b"%b" % data)  # data at its exact size
        events = self._events
        if isinstance(events, tuple):
            events = self._events = []
        events.append(event)
        rec = self._rec
        if rec.on_emit and (rec.emit_wanted is None or rec.emit_wanted(name)):
            rec.emit(self, event, payload)

    def pause(self, payload: Any = None) -> NoReturn:
        data, owned = encode_value(payload, "pause", self.stage_path, "the pause payload")
        raise PauseSignal(data, owned)

    def break_(self, reason: object = None) -> None:
        if reason is not None:
            if not isinstance(reason, str):
                raise StateValueError(
                    f"scope.break_(reason) in stage {self.stage_path!r} takes a str or None, "
                    f"got {type(reason).__name__} {reason!r}; pass text, e.g. "
                    "scope.break_(str(reason)), and write data to state instead",
                    key="break reason",
                    stage_path=self.stage_path,
                )
            text = reason if type(reason) is str else str.__str__(reason)
            encode_value(text, "break reason", self.stage_path, "the break reason")
        if self._broke is None:
            self._broke = reason if reason is not None else ""

    def __repr__(self) -> str:
        return f"<Scope {self.stage_path} reads={len(self._reads)} writes={len(self._ops)}>"
