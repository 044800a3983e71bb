"""Coverage items and the refusals the declared-result helpers share.

An item names one piece of ground: a non-empty string, or a mapping with ``what`` and the
optional ``why``, ``short``, ``kind`` (not_checked / cannot_cover only) and ``count``
(in_progress only). ``short`` and ``kind`` are for the record and never served to the model.
"""

from __future__ import annotations

import difflib
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from trackway.tools.define._errors import ToolError

__all__ = [
    "ITEM_KINDS",
    "RECORD_ONLY_KEYS",
    "SHORT_MAX",
    "DeclarationRefused",
    "ListName",
    "check_list",
    "jsonable",
    "kind_problem",
    "nonempty_str",
    "normalize_items",
    "plain_copy",
    "read_items",
    "record_item",
    "refuse_unknown",
    "served_item",
    "short_problem",
]

SHORT_MAX = 80
"""The most characters a ``short`` may have."""
ITEM_KINDS: tuple[str, ...] = ("existence", "scope")
"""The values a ``kind`` may take."""
RECORD_ONLY_KEYS: tuple[str, ...] = ("short", "kind")
"""Item keys kept on the record and never served to the model."""

ListName = Literal["checked", "not_checked", "cannot_cover", "in_progress"]

_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})
_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


class DeclarationRefused(ToolError, ValueError):
    """A declared result (absent, coverage, described_result) was written wrongly; the message
    says the fix in plain words and ``field`` names the argument at fault."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(f"{message} (field: {field})")
        self.message = message
        self.field = field

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.message, self.field))


def _suggestion(name: str, known: Sequence[str]) -> str:
    snake = _CAMEL.sub(r"_\1", name).lower()
    if snake != name and snake in known:
        return f" — did you mean {snake}?"
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    if close:
        return f" — did you mean {close[0]}?"
    return f" — the keys read here are: {', '.join(known)}"


def refuse_unknown(keys: Iterable[Any], known: Sequence[str], where: str = "") -> None:
    """Refuse the first key of ``keys`` that is not in ``known``: a key nobody reads would be
    lost without a word. ``where`` prefixes the field (``"checked[0]"``, ``"period"``)."""
    for key in keys:
        if key in known:
            continue
        name = str(key)
        field = f"{where}.{name}" if where else name
        raise DeclarationRefused(
            f"`{name}` is not read here, so it would be dropped{_suggestion(name, known)}",
            field,
        )


def nonempty_str(value: Any, field: str, what: str = "a non-empty string") -> str:
    """``value`` when it is a string with visible content; otherwise refuse, naming ``field``."""
    if not isinstance(value, str):
        raise DeclarationRefused(f"`{field}` must be {what}, not {type(value).__name__}", field)
    if not value.strip():
        raise DeclarationRefused(f"`{field}` is empty — write {what}", field)
    return value


def check_list(value: Any, field: str) -> Sequence[Any]:
    """``value`` when it is a list (or tuple); a bare string or anything else is refused."""
    if isinstance(value, str):
        example = repr(value) if len(value) <= 40 else "'...'"
        raise DeclarationRefused(
            f"`{field}` is a single string — pass a list, e.g. {field}=[{example}]", field
        )
    if not isinstance(value, list | tuple):
        raise DeclarationRefused(
            f"`{field}` must be a list, not {type(value).__name__} — pass a list", field
        )
    return value


def short_problem(value: Any, what: str) -> str | None:
    """Why ``value`` cannot be a ``short`` for an item whose ``what`` is given, or None when it
    can: one line of plain visible text, at most 80 characters and no longer than ``what``."""
    if not isinstance(value, str):
        return f"must be a string, not {type(value).__name__}"
    for char in value:
        if unicodedata.category(char) in _HIDDEN_CATEGORIES:
            return (
                f"must be one line of plain visible text; it holds U+{ord(char):04X} "
                "(a control, format or separator character)"
            )
    if not value.strip():
        return "is empty — leave it out rather than write nothing"
    if len(value) > SHORT_MAX:
        return f"is {len(value)} characters; keep it to {SHORT_MAX} at most"
    if len(value) > len(what):
        return "is longer than `what`; a short form should be shorter than what it shortens"
    return None


def kind_problem(value: Any, list_name: str) -> str | None:
    """Why ``value`` cannot be a ``kind`` on an item of ``list_name``, or None when it can."""
    if list_name not in ("not_checked", "cannot_cover"):
        return "is only taken on not_checked and cannot_cover items"
    if value not in ITEM_KINDS:
        return f"must be 'existence' or 'scope', not {value!r}"
    return None


def _item(entry: Any, list_name: ListName, field: str) -> dict[str, Any]:
    if isinstance(entry, str):
        return {"what": nonempty_str(entry, field)}
    if not isinstance(entry, Mapping):
        raise DeclarationRefused(
            f"`{field}` must be a string or a mapping with `what`, not {type(entry).__name__}",
            field,
        )
    refuse_unknown(entry.keys(), ("what", "why", "short", "kind", "count"), field)
    if "what" not in entry:
        raise DeclarationRefused(f"`{field}` needs `what`: the ground it names", f"{field}.what")
    item: dict[str, Any] = {"what": nonempty_str(entry["what"], f"{field}.what")}
    if "why" in entry:
        item["why"] = nonempty_str(entry["why"], f"{field}.why", "a non-empty reason")
    if "count" in entry:
        count = entry["count"]
        if list_name != "in_progress":
            raise DeclarationRefused("`count` is only taken on in_progress items", f"{field}.count")
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise DeclarationRefused(
                f"`count` must be a positive whole number, not {count!r}", f"{field}.count"
            )
        item["count"] = count
    if "short" in entry:
        problem = short_problem(entry["short"], item["what"])
        if problem is not None:
            raise DeclarationRefused(f"`short` {problem}", f"{field}.short")
        item["short"] = entry["short"]
    if "kind" in entry:
        problem = kind_problem(entry["kind"], list_name)
        if problem is not None:
            raise DeclarationRefused(f"`kind` {problem}", f"{field}.kind")
        item["kind"] = entry["kind"]
    return item


def normalize_items(value: Any, list_name: ListName, prefix: str = "") -> list[dict[str, Any]]:
    """Check one list of items and return each as a dict holding only the keys given.

    ``prefix`` is put before the field name in a refusal (``"coverage."``). Every
    ``cannot_cover`` entry needs a ``why``: a permanent blind spot needs a reason a reader can
    act on, escalate or disprove.
    """
    field = f"{prefix}{list_name}"
    items = [_item(e, list_name, f"{field}[{i}]") for i, e in enumerate(check_list(value, field))]
    if list_name == "cannot_cover":
        for i, item in enumerate(items):
            if "why" not in item:
                raise DeclarationRefused(
                    f"`{field}[{i}]` needs a `why`: ground a tool can never see needs a reason "
                    "a reader can act on",
                    f"{field}[{i}].why",
                )
    return items


def served_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """The item as the model reads it: ``short`` and ``kind`` are record-only and dropped."""
    return {k: v for k, v in item.items() if k not in RECORD_ONLY_KEYS}


def record_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """The item as the run records it: every key, ``short`` and ``kind`` included."""
    return dict(item)


def jsonable(value: Any, field: str) -> Any:
    """A plain copy of ``value`` (dicts, lists, str, int, float, bool, None); anything that JSON
    cannot carry is refused, naming where it sits."""
    if value is None or isinstance(value, str | bool):
        return value
    if isinstance(value, int):
        if not -(2**63) <= value < 2**64:
            raise DeclarationRefused(
                f"`{field}` is a whole number beyond 64 bits, which JSON readers cannot carry "
                "exactly — pass it as a string",
                field,
            )
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise DeclarationRefused(f"`{field}` is {value!r}, which JSON cannot carry", field)
        return value
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, inner in value.items():
            if not isinstance(key, str):
                raise DeclarationRefused(
                    f"`{field}` has the key {key!r}; JSON keys are strings", field
                )
            out[key] = jsonable(inner, f"{field}.{key}")
        return out
    if isinstance(value, list | tuple):
        return [jsonable(inner, f"{field}[{i}]") for i, inner in enumerate(value)]
    raise DeclarationRefused(
        f"`{field}` is a {type(value).__name__}, which JSON cannot carry — convert it to "
        "str, a number, a list or a dict",
        field,
    )


def plain_copy(value: Any) -> Any:
    """A copy of ``value`` in which every mapping is a new dict and every list or tuple a new
    list, so what is served or recorded cannot be changed through the caller's objects."""
    if isinstance(value, Mapping):
        return {k: plain_copy(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain_copy(v) for v in value]
    return value


def _filled(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def read_items(
    value: Any, list_name: ListName
) -> tuple[list[Any], list[dict[str, Any]], list[str]] | None:
    """Read one list of a hand-built envelope: ``(served, recorded, problems)``, or None when
    it is not a list of items (the envelope is then plain data).

    Served entries are as written less ``short`` and ``kind``; a bad ``short`` or ``kind`` is
    left out of the record and named in ``problems`` (a None one counts as not declared).
    """
    if not isinstance(value, list | tuple):
        return None
    served: list[Any] = []
    recorded: list[dict[str, Any]] = []
    problems: list[str] = []
    for i, entry in enumerate(value):
        if _filled(entry):
            served.append(entry)
            recorded.append({"what": entry})
            continue
        if not isinstance(entry, Mapping) or not _filled(entry.get("what")):
            return None
        why = entry.get("why")
        if why is not None and not isinstance(why, str):
            return None
        served.append({k: plain_copy(v) for k, v in entry.items() if k not in RECORD_ONLY_KEYS})
        item: dict[str, Any] = {"what": entry["what"]}
        if _filled(why):
            item["why"] = why
        count = entry.get("count")
        if list_name == "in_progress" and type(count) is int and count > 0:
            item["count"] = count
        for key, check in (("short", short_problem), ("kind", kind_problem)):
            found = entry.get(key)
            if found is None:
                continue
            problem = check(found, entry["what"] if key == "short" else list_name)
            if problem is None:
                item[key] = found
            else:
                problems.append(f"{list_name}[{i}].{key} {problem}")
        recorded.append(item)
    return served, recorded, problems
