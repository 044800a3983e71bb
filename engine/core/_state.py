"""Versioned state: each key keeps its own ``(seq, value)`` history.

Applying a commit costs O(size of its ops): a ``set`` pushes one version, an ``append``
extends the key's one backing list in place and pushes a longer view of it. Reading the
current value is a dict lookup; reading the value after commit ``k`` is a bisect per key.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Final

from ._commit import Write
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
    for kind, _, _, raw in ops:
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


class _History:
    __slots__ = ("seqs", "values")

    def __init__(self, seq: int, value: Any) -> None:
        self.seqs = [seq]
        self.values = [value]

    def __reduce__(self) -> tuple[Any, ...]:
        # a compiled class is unpickled by calling __init__ with no arguments: rebuild it
        return (_history, (self.seqs, self.values))


def _history(seqs: list[int], values: list[Any]) -> _History:
    history = _History(seqs[0], values[0])
    history.seqs, history.values = seqs, values
    return history


class StateStore:
    """The state of one frame, with every version of every key kept.

    A store with a ``parent`` (a parallel branch) reads through to the parent for keys it
    has not written; its own deletes shadow the parent.
    """

    __slots__ = ("_keys", "_parent", "latest", "reads_through")

    def __init__(self, parent: StateStore | None = None) -> None:
        self._keys: dict[str, _History] = {}
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
        if h is None:
            self._keys[key] = _History(seq, value)
        elif h.seqs[-1] == seq:
            h.values[-1] = value
        else:
            h.seqs.append(seq)
            h.values.append(value)

    def current(self) -> dict[str, Any]:
        """Every live key of this frame (and its parent) with its current value."""
        out = {} if self._parent is None else self._parent.current()
        for key, h in self._keys.items():
            v = h.values[-1]
            if v is DELETED:
                out.pop(key, None)
            else:
                out[key] = v
        return out

    def at(self, seq: int) -> dict[str, Any]:
        """Every key's value after commit ``seq`` (own versions only)."""
        out: dict[str, Any] = {}
        for key, h in self._keys.items():
            i = bisect_right(h.seqs, seq) - 1
            if i >= 0:
                v = h.values[i]
                if v is not DELETED:
                    out[key] = v
        return out

    def value_at(self, key: str, seq: int) -> Any:
        h = self._keys.get(key)
        if h is None:
            return MISSING
        i = bisect_right(h.seqs, seq) - 1
        if i < 0:
            return MISSING
        v = h.values[i]
        return MISSING if v is DELETED else v

    def own_keys(self) -> Iterator[str]:
        return iter(self._keys)
