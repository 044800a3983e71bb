"""What the model reads of what a tool returned: a declared result (``absent``, ``coverage``,
``described_result``) or an envelope recognized strictly, JSON that holds the value exactly,
then the tool's ceiling (refuse, never cut), the agent's cap (cut, saying so) and the
repeated-call nudge."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

import orjson

from trackway.engine import thaw
from trackway.engine.run._scope import TrackedScope
from trackway.tools import Tool
from trackway.tools.results._declared_read import read_declared
from trackway.tools.results._outcome import read_envelope

from ..artifacts._place import placed
from ..context._config import AgentConfig
from ..context._config import emit as _emit
from ._nudge import NUDGE_LATER, nudged

__all__ = ["ROW_FLAGS", "Outcome", "served"]

_new_tuple = tuple.__new__


class Outcome(NamedTuple):
    """What one call came to: its status, what the model reads, any declared effects, flags
    for its row (``refused``, ``truncated``), and the coverage it declared."""

    status: str
    content: str
    effects: tuple[Any, ...] = ()
    flags: dict[str, Any] | None = None
    declared: dict[str, Any] | None = None
    """What the result said it covered (``absent``, ``coverage``, ``described_result``)."""
    runs: tuple[dict[str, Any], ...] = ()
    """Inner runs the call made (a chart or an agent as a tool), for ``tool_runs``."""


def served(
    cfg: AgentConfig,
    tool: Tool,
    scope: TrackedScope,
    call: Mapping[str, Any],
    iteration: int,
    result: Any,
) -> Outcome:
    """The outcome of a value ``execute`` returned: its status, the text the model reads,
    the effects and coverage it declared; a value JSON cannot hold exactly is a failure."""
    status, statement = "success", None
    effects: tuple[Any, ...] = ()  # not tuple[()]: a compiled build holds a local to its type
    if type(result) is str:  # plain text: neither a declared result nor an envelope
        return _measured(cfg, tool, scope, call, iteration, _text_outcome(tool, result), True)
    declared = read_declared(tool.name, result)
    if declared is None:
        try:
            envelope = read_envelope(tool.name, result)
        except ValueError as exc:
            return Outcome("failure", f"Error: {exc}")
        if envelope is not None:
            result, chosen, listed = envelope
            status, effects = chosen or "success", tuple(listed)
            declared = read_declared(tool.name, result)  # an envelope around a declared result
            if declared is not None and chosen is None:
                status = declared.status
    else:
        status = declared.status
    if declared is not None:
        result, statement = declared.served, declared.statement
    if isinstance(result, str):
        text = result if type(result) is str else str.__str__(result)  # a subclass: its text
    else:
        try:
            dumped = orjson.dumps(result, default=thaw)
            faithful = orjson.loads(dumped) == thaw(result) and _finite(result)
        except (TypeError, orjson.JSONEncodeError, ValueError) as exc:
            not_json = f"Error: {tool.name} returned a value that is not JSON ({exc})"
            return Outcome("failure", not_json)
        if not faithful:  # e.g. NaN would silently become null
            inexact = f"Error: {tool.name} returned a value JSON cannot hold exactly"
            return Outcome("failure", inexact)
        text = dumped.decode()
    owed = tool.period is not None and (statement is None or statement.get("period") is None)
    undeclared = {"period": "undeclared"} if owed else None  # owes a period and said none
    done = Outcome(status, text, effects, undeclared, statement)
    return _measured(cfg, tool, scope, call, iteration, done, isinstance(result, str))


def _text_outcome(tool: Tool, text: str) -> Outcome:
    """What :func:`served` makes of a plain str result."""
    undeclared = None if tool.period is None else {"period": "undeclared"}
    return _new_tuple(Outcome, ("success", text, (), undeclared, None, ()))


def _finite(value: Any) -> bool:
    """No NaN or infinity anywhere in ``value`` (JSON would turn them into null)."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, Mapping):
        return all(_finite(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return all(_finite(v) for v in value)
    return True


ROW_FLAGS = (
    "refused",
    "truncated",
    "chars_returned",
    "nudged",
    "gate",
    "assumed",
    "asked",
    "period",
    "error",
    "pick",
    "middleware",
    "withheld",
    "scrubbed",
    "rewritten",
    "nested",
    "consent",
    "masked",
    "redacted",
    "tool_chars",
    "artifacts",
)
"""Row keys a replay takes from the recording as they were."""


def _measured(
    cfg: AgentConfig,
    tool: Tool,
    scope: TrackedScope,
    call: Mapping[str, Any],
    iteration: int,
    done: Outcome,
    is_text: bool = False,
) -> Outcome:
    """The tool's own ceiling first (refuse, never cut), then placement (a longer result
    stored, its ticket served: ``is_text`` says it is text, not JSON), then the agent's cap
    (cut, saying so). None measures when it is not set."""
    size = len(done.content)
    ceiling = tool.result_ceiling
    if ceiling is not None and size > ceiling["max_chars"]:
        limit = ceiling["max_chars"]
        narrow = ceiling.get("narrow_by")
        how = " — e.g. pass " + ", ".join(repr(n) for n in narrow) if narrow else ""
        refusal = (
            f"Result too large: {tool.name} returned {size} chars, over its declared "
            f"{limit}-char ceiling. Narrow the request and call again{how}. No data was "
            "returned."
        )
        event: dict[str, Any] = {
            "id": call["id"],
            "name": tool.name,
            "iteration": iteration,
            "size_chars": size,
            "max_chars": limit,
        }
        if narrow:
            event["narrow_by"] = list(narrow)
        if done.status != "success":
            event["declared_status"] = done.status
        _emit(scope, "tools.result_refused", event)  # sizes only: the payload goes nowhere
        flags = {**(done.flags or {}), "refused": True, "chars_returned": size}
        done = Outcome("invalid", refusal, done.effects, flags)  # what it covered went too
        size = len(refusal)
    elif (
        cfg.artifacts is not None and size > cfg.artifacts.max_inline_chars and cfg.artifacts.store
    ):
        media = "text/plain" if is_text else "application/json"
        served, flag = placed(cfg, tool, scope, call, iteration, done.content, media)
        flags = {**(done.flags or {}), "artifacts": flag}
        done = done._replace(content=served, flags=flags)
        size = len(served)
    cap = cfg.max_tool_result_chars
    if cap is not None and size > cap:
        cut = size - cap
        text = (
            f"{done.content[:cap]}\n[truncated: the first {cap} of {size} characters are "
            f"shown; {cut} were cut]"
        )
        _emit(
            scope,
            "tools.result_truncated",
            {"id": call["id"], "name": tool.name, "iteration": iteration, "size_chars": size},
        )
        flags = {**(done.flags or {}), "truncated": True, "chars_returned": size}
        flags.setdefault("tool_chars", cap)  # the tool's own text ends where the line starts
        done = Outcome(done.status, text, done.effects, flags)
    if cfg.repeated_call_nudge and done.status == "success" and not NUDGE_LATER.get():
        done = nudged(scope, call, done)
    return done
