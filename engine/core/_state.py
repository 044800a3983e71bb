"""Versioned state: each key keeps its own ``(seq, value)`` history, as one flat list.

Applying a commit costs O(size of its ops): a ``set`` pushes one version, an ``append``
extends the key's one backing list in place and pushes a longer view of it. Reading the
current value is a dict lookup; reading the value after commit ``k`` is a bisect per key.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Final

from ._commit import Write, write_value
from ._frozen import list_view
from ._values import FrozenDict, FrozenList, freeze

__all__ = ["DELETED", "MISSING", "StateStore", "fold_ops"]


class _Sentinel:
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


MISSING: Final = _Sentinel("MISSING")
"""The value of an absent key in read events (``ReadEvent.value``) and lookups."""
DELETED: Final = _Sentinel("DELETED")


def fold_ops(current: Any, ops: Iterable[Write], *, in_place: bool) -> Any:
    """Apply one key's ops, in order, to its current value and return the new value.

    ``in_place`` lets an append extend the backing list of ``current`` when ``current`` is
    its newest view (committing); staging passes ``False`` so nothing shared is touched.
    """
    value = current
    for op in ops:
        kind = op[0]
        raw = write_value(op)
        if kind == "set":
            # A fresh backing list: extending the op's own list later would rewrite the log.
            value = FrozenList(list(raw)) if type(raw) is list else freeze(raw)
        elif kind == "append":
            if isinstance(value, FrozenList):
                if in_place and value.at_tip():
                    value._backing.extend(raw)
                    value = FrozenList(value._backing)
                else:
                    value = FrozenList([*value._raw(), *raw])
            else:  # absent or deleted: an append starts a new list
                value = FrozenList(list(raw))
        elif kind == "merge":
            base = value._data if isinstance(value, FrozenDict) else {}
            value = FrozenDict({**base, **raw})
        else:
            value = DELETED
    return value


def _last_at(h: list[Any] | tuple[Any, Any], seq: int) -> int:
    """In a key's versions ``[seq0, value0, seq1, value1, ...]`` (seqs ascending), the index
    of the newest version's seq at or before ``seq``; -2 when every version is later."""
    lo, hi = 0, len(h) >> 1
    while lo < hi:
        mid = (lo + hi) >> 1
        if h[mid << 1] > seq:
            hi = mid
        else:
            lo = mid + 1
    return (lo - 1) << 1


class StateStore:
    """The state of one frame, with every version of every key kept.

    A store with a ``parent`` (a parallel branch) reads through to the parent for keys it
    has not written; its own deletes shadow the parent.
    """

    __slots__ = ("_keys", "_parent", "latest", "reads_through")

    def __init__(self, parent: StateStore | None = None) -> None:
        # each key's versions as one flat list, ``[seq0, value0, seq1, value1, ...]``: one
        # object per key for the cyclic collector to walk, not three (a run holds its state
        # across every await, so a server with many runs in flight pays for each one); a key
        # with one version keeps a plain ``(seq, value)`` tuple, which the collector stops
        # walking once it finds a scalar value in it
        self._keys: dict[str, list[Any] | tuple[Any, Any]] = {}
        self._parent = parent
        self.reads_through = parent is not None
        """Whether a key this store never wrote is read from a parent."""
        self.latest: dict[str, Any] = {}
        """Each own key's newest value (``DELETED`` after a delete): a scope reads an own key
        with one lookup here (see ``Scope.__getitem__``)."""

    def get(self, key: str) -> Any:
        """The current value of ``key``, or ``MISSING``."""
        v = self.latest.get(key, MISSING)
        if v is MISSING:
            return MISSING if self._parent is None else self._parent.get(key)
        return MISSING if v is DELETED else v

    def get_own(self, key: str) -> Any:
        """The current value of ``key`` in this store only (no parent), or ``MISSING``."""
        v = self.latest.get(key, MISSING)
        return MISSING if v is DELETED else v

    def seed(self, key: str, value: Any, seq: int = 0) -> None:
        self._push(key, seq, value)

    def apply(self, seq: int, ops: Sequence[Write]) -> None:
        """Apply one commit's writes in order (a key written twice keeps one version for
        ``seq``: its last)."""
        for op in ops:
            kind, key, _, raw = op
            if raw is None and kind != "delete":  # a log's container, kept as JSON only
                raw = write_value(op)
            if kind == "set":  # no need of the current value; a fresh backing list (fold_ops)
                value = list_view(list(raw), len(raw)) if type(raw) is list else freeze(raw)
            else:
                current = self.get(key)
                if kind == "append" and type(current) is FrozenList and current.at_tip():
                    current._backing.extend(raw)
                    value = list_view(current._backing, len(current._backing))
                else:
                    value = fold_ops(current, (op,), in_place=True)
            self._push(key, seq, value)

    def _push(self, key: str, seq: int, value: Any) -> None:
        self.latest[key] = value
        h = self._keys.get(key)
        if h is None:  # a key written once (most are) keeps a plain tuple: see __init__
            self._keys[key] = (seq, value)
        elif isinstance(h, tuple):
            self._keys[key] = (seq, value) if h[0] == seq else [h[0], h[1], seq, value]
        elif h[-2] == seq:
            h[-1] = value
        else:
            h.append(seq)
            h.append(value)

    def current(self) -> dict[str, Any]:
        """Every live key of this frame (and its parent) with its current value."""
        if self._parent is None:  # a run's own state: its newest values, deletes left out
            return {key: v for key, v in self.latest.items() if v is not DELETED}
        out = self._parent.current()
        for key, v in self.latest.items():  # each key's newest value (``_push`` keeps both)
            if v is DELETED:
                out.pop(key, None)
            else:
                out[key] = v
        return out

    def at(self, seq: int) -> dict[str, Any]:
        """Every key's value after commit ``seq`` (own versions only)."""
        out: dict[str, Any] = {}
        for key, h in self._keys.items():
            i = _last_at(h, seq)
            if i >= 0:
                v = h[i + 1]
                if v is not DELETED:
                    out[key] = v
        return out

    def value_at(self, key: str, seq: int) -> Any:
        h = self._keys.get(key)
        if h is None:
            return MISSING
        i = _last_at(h, seq)
        if i < 0:
            return MISSING
        v = h[i + 1]
        return MISSING if v is DELETED else v

    def seq_before(self, key: str, before: int) -> int | None:
        """The seq of ``key``'s newest own version written before commit ``before``."""
        h = self._keys.get(key)
        if h is None:
            return None
        i = _last_at(h, before - 1)
        return None if i < 0 else int(h[i])

    def own_keys(self) -> Iterator[str]:
        return iter(self._keys)
