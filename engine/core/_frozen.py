"""Read-only views of the values the engine owns: committed state is never edited in place.

A read hands out a :class:`FrozenList` or :class:`FrozenDict` over the engine's decoded copy
(nested parts come back as views too), so an in-place mutation fails loudly instead of
rewriting history; :func:`~trackway.engine.thaw` gives a mutable copy. They print as the
list or dict they stand for. Split from
``_values`` (the encoding and its refusals) along the seam between a value and its view.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NoReturn, overload

from ._errors import ReadOnlyStateError

__all__ = ["FrozenDict", "FrozenList", "freeze", "list_view", "to_plain"]


_ABSENT: Any = object()


def _read_only(what: str) -> NoReturn:
    raise ReadOnlyStateError(
        f"committed state is read-only: {what} would rewrite history. Build a new value and "
        "write it back, e.g. scope['k'] = [*scope['k'], item], or use scope.append / "
        "scope.merge; thaw(value) gives a mutable copy."
    )


class FrozenList(Sequence[Any]):
    """A read-only view of the first ``length`` items of a list the engine owns.

    Appends to a key extend one backing list in place and hand out views of growing length,
    so every version of a growing list shares storage and costs O(1) to keep.
    """

    __slots__ = ("_backing", "_n")

    def __init__(self, backing: list[Any], length: int | None = None) -> None:
        self._backing = backing
        self._n = len(backing) if length is None else length

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> FrozenList: ...
    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return FrozenList(self._raw()[index])
        if index < 0:
            index += self._n
        if not 0 <= index < self._n:
            raise IndexError("list index out of range")
        return freeze(self._backing[index])

    def __iter__(self) -> Iterator[Any]:
        backing = self._backing
        for i in range(self._n):
            yield freeze(backing[i])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenList):
            other_raw: object = other._raw()
        elif isinstance(other, list):
            other_raw = other
        else:
            return NotImplemented
        return self._raw() == other_raw

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        # what it reads as: a list (``print(result.state)`` shows plain lists and dicts);
        # type() still says FrozenList, and a mutation still fails loudly
        return repr(self._raw())

    def __add__(self, other: Sequence[Any]) -> list[Any]:
        return [*self, *other]

    def __radd__(self, other: Sequence[Any]) -> list[Any]:
        return [*other, *self]

    def _raw(self) -> list[Any]:
        backing = self._backing
        return backing if self._n == len(backing) else backing[: self._n]

    def at_tip(self) -> bool:
        """True when nothing was appended to the backing list after this view."""
        return self._n == len(self._backing)

    def append(self, item: object) -> NoReturn:
        _read_only("list.append")

    def extend(self, items: object) -> NoReturn:
        _read_only("list.extend")

    def insert(self, index: int, item: object) -> NoReturn:
        _read_only("list.insert")

    def pop(self, index: int = -1) -> NoReturn:
        _read_only("list.pop")

    def remove(self, item: object) -> NoReturn:
        _read_only("list.remove")

    def sort(self, *args: object, **kwargs: object) -> NoReturn:
        _read_only("list.sort")

    def clear(self) -> NoReturn:
        _read_only("list.clear")

    def __setitem__(self, index: object, value: object) -> NoReturn:
        _read_only("item assignment")

    def __delitem__(self, index: object) -> NoReturn:
        _read_only("item deletion")

    def __iadd__(self, other: object) -> NoReturn:
        _read_only("+=")


class FrozenDict(Mapping[str, Any]):
    """A read-only view of a dict the engine owns; nested values come back frozen too."""

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> Any:
        return freeze(self._data[key])

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def get(self, key: str, default: Any = None) -> Any:
        # Mapping.get goes through __getitem__ and a KeyError: one lookup here
        value = self._data.get(key, _ABSENT)
        return default if value is _ABSENT else freeze(value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenDict):
            return self._data == other._data
        if isinstance(other, dict):
            return self._data == other
        if isinstance(other, Mapping):
            return self._data == dict(other.items())
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self._data)  # a dict, as FrozenList's repr is a list

    def __or__(self, other: Mapping[str, Any]) -> dict[str, Any]:
        return {**{k: freeze(v) for k, v in self._data.items()}, **other}

    def __setitem__(self, key: str, value: object) -> NoReturn:
        _read_only("item assignment")

    def __delitem__(self, key: str) -> NoReturn:
        _read_only("item deletion")

    def update(self, *args: object, **kwargs: object) -> NoReturn:
        _read_only("dict.update")

    def pop(self, *args: object) -> NoReturn:
        _read_only("dict.pop")

    def setdefault(self, *args: object) -> NoReturn:
        _read_only("dict.setdefault")

    def clear(self) -> NoReturn:
        _read_only("dict.clear")

    def __ior__(self, other: object) -> NoReturn:
        _read_only("|=")


def freeze(value: Any) -> Any:
    """Wrap an engine-owned value in a read-only view (scalars come back as they are)."""
    t = type(value)
    if t is dict:
        view: Any = _new(FrozenDict)  # FrozenDict(value) without its __init__ frame
        view._data = value
        return view
    if t is list:
        return list_view(value, len(value))
    return value


def list_view(backing: list[Any], length: int) -> FrozenList:
    """``FrozenList(backing, length)`` without its ``__init__`` frame: a read of a list
    and every append make one (the engine's hot path)."""
    view = _new(FrozenList)
    view._backing = backing
    view._n = length
    return view


_new = object.__new__


def to_plain(value: Any) -> Any:
    """orjson ``default`` hook: frozen views and plain dict/list subclasses become JSON."""
    if isinstance(value, FrozenList):
        return value._raw()
    if isinstance(value, FrozenDict):
        return value._data
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, list):
        return list(value)
    raise TypeError(type(value).__name__)
