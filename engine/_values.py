"""State values: serialized once at the write, frozen for ever after.

Every value written to state is encoded with orjson exactly once. The bytes go into the commit
log; the decoded copy (owned by the engine, never by the caller) is what later reads see,
wrapped in read-only views so an in-place mutation fails loudly instead of rewriting history.
A value orjson cannot round-trip exactly (an int beyond 64 bits, NaN or infinity, a tuple, an
arbitrary object) is refused with :class:`StateValueError`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NoReturn, TypeAlias, overload

import orjson

from ._errors import ReadOnlyStateError, StateValueError

__all__ = ["JSON", "FrozenDict", "FrozenList", "encode_value", "freeze", "thaw"]

JSON: TypeAlias = bool | int | float | str | list["JSON"] | dict[str, "JSON"] | None

_INT_MIN = -(2**63)
_INT_MAX = 2**64 - 1
_PLAIN = (str, bool, type(None))
_DUMP_OPTIONS = orjson.OPT_PASSTHROUGH_SUBCLASS


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
        return f"FrozenList({self._raw()!r})"

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
        return f"FrozenDict({self._data!r})"

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
        return FrozenDict(value)
    if t is list:
        return FrozenList(value)
    return value


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


def thaw(value: Any) -> Any:
    """Return a deep, mutable, plain-JSON copy of a (possibly frozen) state value."""
    if isinstance(value, _PLAIN) or type(value) in (int, float):
        return value
    return orjson.loads(orjson.dumps(value, default=to_plain))


def _exact(data: bytes) -> bytes:
    # orjson hands back bytes that keep their whole working buffer (4 KB and up); the log
    # keeps values for the life of the run, so copy them to their exact size.
    return bytes(memoryview(data))


_TRUE, _FALSE, _NULL = b"true", b"false", b"null"


def to_bytes(value: Any) -> bytes:
    """Serialize an already-accepted state value (frozen views allowed)."""
    return _exact(orjson.dumps(value, default=to_plain, option=_DUMP_OPTIONS))


def encode_value(
    value: Any, key: str, stage_path: str | None, what: str | None = None
) -> tuple[bytes, Any]:
    """Serialize ``value`` once and return ``(json_bytes, engine_owned_copy)``.

    Raises :class:`StateValueError` naming the key (or ``what`` it is, e.g. an event
    payload), the stage and the offending part when the value would not come back from JSON
    exactly as it was written.
    """
    t = type(value)
    if t is int:
        if not _INT_MIN <= value <= _INT_MAX:
            _refuse(key, stage_path, what, f"the int {value} does not fit in 64 bits")
        return b"%d" % value, value
    if t is str:
        return _exact(orjson.dumps(value)), value
    if value is None:
        return _NULL, None
    if t is bool:
        return (_TRUE if value else _FALSE), value
    if t is float:
        if not math.isfinite(value):
            _refuse(
                key, stage_path, what, f"{value} is not a finite number (JSON has no NaN or inf)"
            )
        return _exact(orjson.dumps(value)), value
    if t is FrozenList or t is FrozenDict:
        # Already engine-owned and immutable: share it, serialize only for the log.
        return to_bytes(value), value
    try:
        data = orjson.dumps(value, default=to_plain, option=_DUMP_OPTIONS)
    except (orjson.JSONEncodeError, TypeError):
        _refuse(key, stage_path, what, _find_problem(value, "value") or "it is not JSON")
    owned = orjson.loads(data)
    if owned != value:
        _refuse(key, stage_path, what, _find_problem(value, "value") or "it does not round-trip")
    return _exact(data), owned


def _refuse(key: str, stage_path: str | None, what: str | None, problem: str) -> NoReturn:
    where = f" in stage {stage_path!r}" if stage_path else " in the run input"
    raise StateValueError(
        f"cannot store {what or f'state key {key!r}'}{where}: {problem}. Values must be JSON "
        "(dict with str keys, list, str, int within 64 bits, finite float, bool, None); "
        "convert first, e.g. list(a_tuple), str(a_datetime), model.model_dump(mode='json').",
        key=key,
        stage_path=stage_path,
    )


def _find_problem(value: Any, path: str) -> str | None:
    """Describe the first part of ``value`` that JSON cannot hold exactly (error path only)."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        t = type(item)
        if t is float and not math.isfinite(item):
            return f"{where} is {item}, which JSON cannot represent"
        if t is int and not _INT_MIN <= item <= _INT_MAX:
            return f"{where} is an int beyond 64 bits"
        if t is tuple:
            return f"{where} is a tuple (JSON has only lists; write a list)"
        if t is FrozenDict or isinstance(item, dict):
            for k, v in (item._data if t is FrozenDict else item).items():
                if type(k) is not str:
                    return f"{where} has the non-str key {k!r} (JSON keys are strings)"
                stack.append((v, f"{where}[{k!r}]"))
            continue
        if t is FrozenList or isinstance(item, list):
            stack.extend((v, f"{where}[{i}]") for i, v in enumerate(item))
            continue
        if t in (str, bool, int, float, type(None)):
            continue
        return f"{where} is a {t.__module__}.{t.__qualname__}, not a JSON value"
    return None
