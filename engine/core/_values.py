"""State values: serialized once at the write, frozen for ever after (the read-only views
are in ``_frozen``, re-exported here).

Every value written to state is encoded with orjson exactly once. The bytes go into the commit
log; the decoded copy (owned by the engine, never by the caller) is what later reads see,
wrapped in read-only views so an in-place mutation fails loudly instead of rewriting history.
A value orjson cannot round-trip exactly (an int beyond 64 bits, NaN or infinity, a tuple, an
arbitrary object, a str with a lone surrogate, a cycle, lists and dicts nested deeper than
orjson's limit) is refused with :class:`StateValueError`, and so is a state key a store cannot
hold (a control character, a lone surrogate).

A good value pays only for orjson's own work (and its key for one ``str.isprintable``): only
a value orjson refuses, or one that does not come back equal, is walked to name the offending
part, and that walk ends on cycles and shared parts.
"""

from __future__ import annotations

import enum
import math
import unicodedata
from collections.abc import Iterator, Mapping
from typing import Any, NoReturn, TypeAlias

import orjson

from ._errors import StateValueError, caused_by
from ._frozen import FrozenDict, FrozenList, freeze, to_plain

__all__ = [
    "DUMP_OPTIONS",
    "EVENT_PAYLOAD",
    "JSON",
    "MAX_DEPTH",
    "SCALAR_TYPES",
    "FrozenDict",
    "FrozenList",
    "check_key",
    "encode_entries",
    "encode_value",
    "freeze",
    "key_fault",
    "thaw",
    "to_plain",
]

JSON: TypeAlias = bool | int | float | str | list["JSON"] | dict[str, "JSON"] | None

_INT_MIN = -(2**63)
_INT_MAX = 2**64 - 1
_PLAIN = (str, bool, type(None))
DUMP_OPTIONS = orjson.OPT_PASSTHROUGH_SUBCLASS
MAX_DEPTH = 254
"""The most levels of lists and dicts one value may nest: orjson refuses a 255th."""
_KEY_CONTROLS_ALLOWED = "\t\n"


SCALAR_TYPES = frozenset((str, int, float, bool, type(None)))
"""The Python types of JSON's scalars, exactly (no subclass): copied as they are."""


def thaw(value: Any) -> Any:
    """Return a deep, mutable, plain-JSON copy of a (possibly frozen) state value.

    A frozen view of scalars only (the engine's own decoded values: str keys, finite
    numbers) is copied one level, which is all its copy needs, and so is a plain dict whose
    values JSON holds exactly as they are (see :func:`_json_exact_flat`); anything else goes
    through JSON."""
    t = type(value)
    if t is FrozenDict:
        data = value._data
        if all(type(v) in SCALAR_TYPES for v in data.values()):
            return dict(data)
    elif t is FrozenList:
        raw = value._raw()
        if all(type(v) in SCALAR_TYPES for v in raw):
            return list(raw)
    elif t is dict:
        if _json_exact_flat(value):
            return dict(value)
    elif isinstance(value, _PLAIN) or t is int or t is float:
        return value
    return orjson.loads(orjson.dumps(value, default=to_plain))


def _json_exact_flat(data: dict[Any, Any]) -> bool:
    """Whether JSON gives ``data`` back as it is, one level deep: printable str keys, and
    values that are printable str, bool, None or an int within 64 bits (a float may be NaN,
    a nested value takes the round trip, and a lone surrogate is not printable)."""
    for key, value in data.items():
        if type(key) is not str or not key.isprintable():
            return False
        kind = type(value)
        if kind is str:
            if not value.isprintable():
                return False
        elif kind is int:
            if not _INT_MIN <= value <= _INT_MAX:
                return False
        elif kind is not bool and value is not None:
            return False
    return True


def exact_bytes(data: bytes) -> bytes:
    """``data`` copied to its exact size. orjson hands back bytes that keep their whole
    working buffer (4 KB and up, however short the JSON): anything kept for the life of a
    run (the log, a request's message bytes, a memo's keys) is copied first. ``%b`` makes
    the copy in one allocation (``bytes(memoryview(data))`` costs ~8x as much)."""
    return b"%b" % data


_TRUE, _FALSE, _NULL = b"true", b"false", b"null"


def to_bytes(value: Any) -> bytes:
    """Serialize an already-accepted state value (frozen views allowed)."""
    return exact_bytes(orjson.dumps(value, default=to_plain, option=DUMP_OPTIONS))


def encode_entries(
    values: Mapping[Any, Any], what: str, stage_path: str | None
) -> Iterator[tuple[str, bytes, Any]]:
    """Each entry of a mapping of state keys as ``(key, json_bytes, engine_owned_copy)``,
    encoded once; a key that is not a ``str`` is refused naming ``what`` the mapping is."""
    for key, value in values.items():
        if type(key) is not str:
            raise StateValueError(
                f"{what} has the key {key!r}; state keys are str", key=repr(key), stage_path=None
            )
        data, owned = encode_value(value, key, stage_path)
        yield key, data, owned


def encode_value(
    value: Any, key: str, stage_path: str | None, what: str | None = None
) -> tuple[bytes, Any]:
    """Serialize ``value`` once and return ``(json_bytes, engine_owned_copy)``.

    Raises :class:`StateValueError` naming the key (or ``what`` it is, e.g. an event
    payload), the stage and the offending part when the value would not come back from JSON
    exactly as it was written. Without ``what``, ``key`` is a state key and is checked too
    (see :func:`check_key`).
    """
    if what is None and (type(key) is not str or not key.isprintable()):
        check_key(key, stage_path)
    t = type(value)
    if t is int:
        if not _INT_MIN <= value <= _INT_MAX:
            _refuse(key, stage_path, what, f"the int {value} does not fit in 64 bits")
        return b"%d" % value, value
    if t is str:
        try:
            return exact_bytes(orjson.dumps(value)), value
        except orjson.JSONEncodeError as exc:  # a lone surrogate
            _refuse(key, stage_path, what, _problem_in(value, exc))
    if value is None:
        return _NULL, None
    if t is bool:
        return (_TRUE if value else _FALSE), value
    if t is float:
        if not math.isfinite(value):
            _refuse(
                key, stage_path, what, f"{value} is not a finite number (JSON has no NaN or inf)"
            )
        return exact_bytes(orjson.dumps(value)), value
    if t is FrozenList or t is FrozenDict:
        # Already engine-owned and immutable: share it, serialize only for the log.
        try:
            return to_bytes(value), value
        except TypeError as exc:  # a view made by hand over a list the engine never checked
            _refuse(key, stage_path, what, _problem_in(value, exc))
    try:
        data = orjson.dumps(value, default=to_plain, option=DUMP_OPTIONS)
    except TypeError as exc:  # orjson.JSONEncodeError is a TypeError
        _refuse(key, stage_path, what, _problem_in(value, exc))
    owned = orjson.loads(data)
    if owned != value:  # an acyclic value within MAX_DEPTH (orjson wrote it): this ends
        _refuse(key, stage_path, what, _find_problem(value, "value") or "it does not round-trip")
    return exact_bytes(data), owned


def check_key(key: object, stage_path: str | None, what: str = "state key") -> str:
    """Refuse a state key (or an event name) the log and its stores cannot hold: see
    :func:`key_fault`; else return it. Callers skip it for printable keys
    (``key.isprintable()``): this is the slow path."""
    where = f" in stage {stage_path!r}" if stage_path else " in the run input"
    if not isinstance(key, str):
        raise StateValueError(
            f"{what}s are str; cannot use {key!r} ({type(key).__name__}){where}; "
            f"pass a str, e.g. str({key!r})",
            key=repr(key),
            stage_path=stage_path,
        )
    fault = key_fault(key)
    if fault is not None:
        raise StateValueError(
            f"cannot use {what} {key!r}{where}: {fault}", key=key, stage_path=stage_path
        )
    return key


def key_fault(key: str) -> str | None:
    """Why ``key`` cannot be a state key, with the fix (``None`` if it can): a lone surrogate
    (not valid Unicode text, so no store can write it), or a control character other than tab
    and newline (a NUL, a terminal escape: keys are names, shown in logs and narratives, and
    held to the rule of stage ids)."""
    if key.isprintable():
        return None
    for i, char in enumerate(key):
        kind = unicodedata.category(char)
        if kind == "Cs":
            return (
                f"it holds a lone surrogate {char!r} at index {i}, which is not valid Unicode "
                "text; clean it first, e.g. key.encode('utf-8', 'replace').decode()"
            )
        if kind == "Cc" and char not in _KEY_CONTROLS_ALLOWED:
            return (
                f"it holds the control character {char!r} at index {i}; keys are names and may "
                "not hold control characters other than tab and newline (a NUL, a terminal "
                "escape), so remove it or choose another key"
            )
    return None


EVENT_PAYLOAD = "\x00event payload"
"""``what`` for an event's payload: the error names the event (``key``) when it is made,
so an emit formats nothing on its way."""


def _refuse(key: str, stage_path: str | None, what: str | None, problem: str) -> NoReturn:
    if what == EVENT_PAYLOAD:
        what = f"the payload of event {key!r}"
    where = f" in stage {stage_path!r}" if stage_path else " in the run input"
    refused = StateValueError(
        f"cannot store {what or f'state key {key!r}'}{where}: {problem}. Values must be JSON "
        "(dict with str keys, list, str, int within 64 bits, finite float, bool, None); "
        "convert first, e.g. list(a_tuple), str(a_datetime), model.model_dump(mode='json').",
        key=key,
        stage_path=stage_path,
    )
    raise caused_by(refused, None) from None


def _problem_in(value: Any, exc: Exception) -> str:
    """What orjson refused in ``value``, by path (error path only)."""
    return _find_problem(value, "value") or f"it is not JSON (orjson: {exc})"


_Id: TypeAlias = tuple[int, int]
"""A container's identity in a walk: ``id`` of the list or dict holding the items, and the
length of a :class:`FrozenList` view (``-1`` for the rest)."""


def _find_problem(value: Any, path: str) -> str | None:
    """Describe the first part of ``value`` that JSON cannot hold exactly (error path only).

    A depth-first walk in document order that ends on any object graph: it keeps the
    containers on the current path (one met again among them is a cycle) and the height of
    every container found clean (a part shared by several parents is walked once).
    """
    opened = _open(value, path)
    if opened is None:
        return _leaf_problem(value, path)
    if isinstance(opened, str):
        return opened
    on_path: dict[_Id, str] = {opened[0]: path}
    heights: dict[_Id, int] = {}
    # one entry per open container: identity, its remaining parts, its height so far
    stack: list[tuple[_Id, Iterator[tuple[Any, str]], list[int]]] = [(*opened, [0])]
    while stack:
        ident, parts, height = stack[-1]
        part = next(parts, None)
        if part is None:
            stack.pop()
            del on_path[ident]
            heights[ident] = height[0] + 1
            if stack:
                above = stack[-1][2]
                above[0] = max(above[0], height[0] + 1)
            continue
        item, where = part
        opened = _open(item, where)
        if opened is None:
            problem = _leaf_problem(item, where)
            if problem is not None:
                return problem
            continue
        if isinstance(opened, str):
            return opened
        child, child_parts = opened
        if child in on_path:
            return (
                f"{where} refers back to itself (it is {on_path[child]}, which contains it): "
                "JSON cannot hold a cycle; write a copy without the back reference"
            )
        depth = len(stack) + 1  # of this container; the value itself is depth 1
        known = heights.get(child)
        if depth + (known or 1) - 1 > MAX_DEPTH:
            return (
                f"{_abbreviated(where)} is nested deeper than {MAX_DEPTH} levels of lists and "
                "dicts (orjson's limit); flatten it, or store the deep part as a JSON string"
            )
        if known is not None:
            height[0] = max(height[0], known)
            continue
        on_path[child] = where
        stack.append((child, child_parts, [0]))
    return None


def _open(item: Any, where: str) -> tuple[_Id, Iterator[tuple[Any, str]]] | str | None:
    """A list's or dict's identity and parts (a problem if a dict key is not JSON); None for
    anything else."""
    t = type(item)
    if t is FrozenList:
        backing, n = item._backing, item._n
        return (id(backing), n), ((backing[i], f"{where}[{i}]") for i in range(n))
    if isinstance(item, list):
        return (id(item), -1), ((v, f"{where}[{i}]") for i, v in enumerate(item))
    if t is FrozenDict:
        data = item._data
    elif isinstance(item, dict):
        data = item
    else:
        return None
    for k in data:
        if type(k) is not str:
            return f"{where} has the non-str key {k!r} (JSON keys are strings)"
        if _surrogate_at(k) >= 0:
            return (
                f"{where} has the key {k!r}, a str with a lone surrogate (not valid Unicode "
                "text); clean it first, e.g. key.encode('utf-8', 'replace').decode()"
            )
    return (id(data), -1), ((v, f"{where}[{k!r}]") for k, v in data.items())


def _leaf_problem(item: Any, where: str) -> str | None:
    t = type(item)
    if t is str:
        at = _surrogate_at(item)
        if at < 0:
            return None
        return (
            f"{where} is a str with a lone surrogate ({item[at]!r} at index {at}), which is not "
            "valid Unicode text; clean it first, e.g. text.encode('utf-8', 'replace').decode()"
        )
    if t is float and not math.isfinite(item):
        return f"{where} is {item}, which JSON cannot represent"
    if t is int and not _INT_MIN <= item <= _INT_MAX:
        return f"{where} is an int beyond 64 bits"
    if t is tuple:
        return f"{where} is a tuple (JSON has only lists; write a list)"
    if t in (bool, int, float, type(None)):
        return None
    if isinstance(item, enum.Enum) and isinstance(item, (int, str)):
        # IntEnum, StrEnum: orjson writes the value, which compares equal to the member
        return _leaf_problem(item.value, where)
    return f"{where} is a {t.__module__}.{t.__qualname__}, not a JSON value"


def _surrogate_at(text: str) -> int:
    """The index of the first surrogate code point in ``text`` (-1 if none): UTF-8, and so
    JSON, cannot hold one."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return -1


def _abbreviated(path: str, limit: int = 80) -> str:
    """``path`` cut to about ``limit`` characters at segment boundaries: ``value[0]...[0]``."""
    if len(path) <= limit:
        return path
    head = path[: max(path.rfind("[", 0, limit - 20), path.find("["))]
    tail = path[path.find("[", len(path) - 20) :]
    return f"{head}...{tail}"
