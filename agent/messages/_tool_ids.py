"""One id per tool call in a model turn.

Tool results are paired with their calls by id, and the vendors' APIs refuse a turn that
repeats one. Some gateways split one call into several blocks that share its id (each with a
piece of the arguments); those are merged back. Calls that share an id but are separate
(their arguments do not join into one object) keep the first id and the others get
``<id>~2``, ``<id>~3``, ... Every repair is returned, for the receipt and an event.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from trackway.engine import thaw
from trackway.engine.core._values import FrozenList

from ._messages import ToolCall
from ._payload import UNPARSED_ARGUMENTS, parse_arguments

__all__ = ["call_repairs", "unique_calls"]


def _raw(args: dict[str, Any]) -> str:
    """The argument text the model wrote for ``args``."""
    if not args:
        return ""
    raw = args.get(UNPARSED_ARGUMENTS)
    if len(args) == 1 and isinstance(raw, str):
        return raw
    return orjson.dumps(args).decode()


def _merged(calls: list[ToolCall]) -> ToolCall | None:
    """The one call that ``calls`` (pieces sharing an id) were split from, if they were."""
    if len({c.name for c in calls}) != 1:
        return None
    joined = "".join(_raw(c.args) for c in calls)
    args = parse_arguments(joined)
    if UNPARSED_ARGUMENTS in args and len(args) == 1:
        return None
    return ToolCall(id=calls[0].id, name=calls[0].name, args=args)


def _parsed(args: dict[str, Any]) -> dict[str, Any]:
    """A kept-as-written piece that was a whole call after all, parsed as one."""
    return parse_arguments(_raw(args))


def unique_calls(raw_calls: Sequence[Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The calls of a committed ``response`` with one id each, and the repairs made. Calls
    that need no repair are the committed dicts themselves: read them, never change them.

    A pure function of the recorded answer: ``call-llm`` commits the answer as the model
    gave it and files the repairs in its receipt, and the stages that act on the calls
    apply it again, so a replay of the recorded answer repeats them exactly.
    """
    if not raw_calls:
        return [], []
    # the committed calls are shared read-only, never copied
    calls = list(raw_calls._raw()) if isinstance(raw_calls, FrozenList) else thaw(raw_calls)
    if len(calls) < 2 or len({c["id"] for c in calls}) == len(calls):
        return calls, []
    calls = thaw(calls)
    fixed, repairs = _unique([ToolCall.model_validate(c) for c in calls])
    return [c.model_dump(mode="json", exclude_none=True) for c in fixed], repairs


def call_repairs(calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
    """The repairs :func:`unique_calls` makes to ``calls`` (for the receipt)."""
    if len(calls) < 2 or len({c.id for c in calls}) == len(calls):
        return []
    return _unique(calls)[1]


def _unique(calls: Sequence[ToolCall]) -> tuple[list[ToolCall], list[dict[str, Any]]]:
    groups: dict[str, list[ToolCall]] = {}
    for call in calls:
        groups.setdefault(call.id, []).append(call)
    merged = {i: _merged(g) for i, g in groups.items() if len(g) > 1}
    taken = {c.id for c in calls}
    seen: dict[str, int] = {}
    out: list[ToolCall] = []
    renamed: dict[str, list[str]] = {}
    for call in calls:  # in the model's order; a merged call stands where its first piece did
        n = seen[call.id] = seen.get(call.id, 0) + 1
        whole = merged.get(call.id)
        if whole is not None:
            if n == 1:
                out.append(whole)
        elif len(groups[call.id]) == 1:
            out.append(call)
        elif n == 1:
            out.append(call.model_copy(update={"args": _parsed(call.args)}))
        else:
            new_id = f"{call.id}~{n}"
            while new_id in taken:
                new_id += "~"
            taken.add(new_id)
            renamed.setdefault(call.id, []).append(new_id)
            out.append(call.model_copy(update={"id": new_id, "args": _parsed(call.args)}))
    repairs: list[dict[str, Any]] = []
    for call_id, whole in merged.items():
        if whole is not None:
            repairs.append({"id": call_id, "action": "merged", "parts": len(groups[call_id])})
        else:
            repairs.append({"id": call_id, "action": "renamed", "as": renamed[call_id]})
    return out, repairs
