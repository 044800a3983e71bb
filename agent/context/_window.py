"""Context windowing as a stage: what each model call is served of an append-only history.

``.window(strategy)`` mounts a ``window`` stage as the loop target. Each visit asks the
strategy which turns to take out of the served window (it may choose only among what the
shared planner allows, :mod:`._window_plan`), commits a record of the visit to the ``window``
ledger and, when it changed, the ``window_view`` that :func:`~._request.assemble` applies:
the dropped message ranges and the one library message that stands in for them (a notice
naming tools and counts, or a summary). ``history`` is never edited, so the log keeps
everything and ``served_at`` rebuilds each windowed request exactly.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from trackway.engine import Scope, StagePath, thaw

from ..messages._errors import AgentBuildError
from ..messages._messages import LLMRequest, Message, sha256
from ..providers._provider import Provider
from ._config import emit as _emit
from ._window_plan import (
    PINS,
    FactHold,
    Removal,
    Turn,
    Turns,
    drop_notice,
    hold_facts,
    merge_ranges,
    plan_removal,
)

__all__ = [
    "SUMMARY_PREFIX",
    "WindowPlan",
    "WindowStrategy",
    "WindowVisit",
    "fold",
    "sliding_window",
    "standing_in_message",
    "summarize_oldest",
    "token_budget",
    "window_stage",
]

SUMMARY_PREFIX = (
    "[A summary of earlier messages that were left out of this request to fit the context "
    "window, written by a summarizer model — not by the person:]\n"
)
_SUMMARIZER_SYSTEM = (
    "Summarize the conversation excerpt between the markers for the assistant that will "
    "continue it: keep every fact, number, name, decision and open question; drop nothing "
    "that later steps may need; write plain prose, no preamble."
)


@dataclass(frozen=True)
class WindowVisit:
    """What a strategy sees at one visit: the turns still served (oldest first), the model
    call about to be made (``k``), the last call's reported usage (``None`` when it reported
    none), and the planner (``removable``)."""

    iteration: int
    k: int
    kept: tuple[Turn, ...]
    measured: Mapping[str, Any] | None
    history: Sequence[Any]
    summary: str | None
    _keep_last_tool_results: int = 2
    _paused: tuple[str, ...] = ()
    _facts: FactHold | None = None

    _base: list[Removal] = field(default_factory=list, compare=False, repr=False)
    _asked: list[int] = field(default_factory=list, compare=False, repr=False)

    def removable(self, keep_recent_turns: int) -> Removal:
        """The turns that may leave while the ``keep_recent_turns`` most recent stay, and
        the ones held with why (one planner pass per visit, whatever is asked). Under
        ``.findings()`` the ledger-fact hold applies too, spent outside those turns."""
        self._asked.append(keep_recent_turns)
        return self._removal(keep_recent_turns, keep_recent_turns)

    def _removal(self, keep_recent_turns: int, window: int) -> Removal:
        if not self._base:
            self._base.append(
                plan_removal(self.kept, 0, self._keep_last_tool_results, self._paused)
            )
        base = self._base[0]
        if keep_recent_turns > 0:
            recent = {t.head for t in self.kept[max(0, len(self.kept) - keep_recent_turns) :]}
            held = [
                h for h in base.held if h["turn"] not in recent or h["why"] != "last-tool-result"
            ]
            base = Removal([h for h in base.removable if h not in recent], held)
        return hold_facts(self.kept, base, window, self._facts)

    def messages(self, heads: Sequence[int]) -> list[dict[str, Any]]:
        """The messages of the turns starting at ``heads``."""
        by_head = {t.head: t for t in self.kept}
        return [thaw(self.history[i]) for h in heads for i in range(h, by_head[h].end)]


@dataclass
class WindowPlan:
    """A strategy's decision: the turns to take out (by head index), why, fields for the
    record, and an optional summary that stands in for everything left out."""

    remove: list[int]
    why: str
    details: dict[str, Any] = field(default_factory=dict)
    summary: str | None = None
    summary_call: dict[str, Any] | None = None


@runtime_checkable
class WindowStrategy(Protocol):
    """One small protocol: a ``name``, the ``settings`` to record, and ``plan(visit)``
    (``def`` or ``async def``) returning a :class:`WindowPlan`."""

    name: str

    def settings(self) -> dict[str, Any]: ...

    def plan(self, visit: WindowVisit) -> Any: ...


def _keep(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise AgentBuildError(f"{name}(keep_recent_turns={value!r}): use a whole number ≥ 1")
    return value


class _Sliding:
    name = "sliding_window"

    def __init__(self, keep_recent_turns: int) -> None:
        self.keep = _keep(self.name, keep_recent_turns)

    def settings(self) -> dict[str, Any]:
        return {"keep_recent_turns": self.keep}

    def plan(self, visit: WindowVisit) -> WindowPlan:
        removal = visit.removable(self.keep)
        why = f"older than the {self.keep} most recent turns"
        return WindowPlan(removal.removable, why, {"keep_recent_turns": self.keep})


def sliding_window(*, keep_recent_turns: int) -> WindowStrategy:
    """Serve the ``keep_recent_turns`` most recent turns (and whatever the planner holds)."""
    return _Sliding(keep_recent_turns)


class _Budget:
    name = "token_budget"

    def __init__(self, max_input_tokens: int, keep_recent_turns: int) -> None:
        if (
            isinstance(max_input_tokens, bool)
            or not isinstance(max_input_tokens, int)
            or max_input_tokens < 1
        ):
            raise AgentBuildError(
                f"token_budget(max_input_tokens={max_input_tokens!r}): use a whole number ≥ 1"
            )
        self.limit = max_input_tokens
        self.keep = _keep(self.name, keep_recent_turns)

    def settings(self) -> dict[str, Any]:
        return {"max_input_tokens": self.limit, "keep_recent_turns": self.keep}

    def plan(self, visit: WindowVisit) -> WindowPlan:
        measured = (visit.measured or {}).get("input_tokens")
        details: dict[str, Any] = {
            "max_input_tokens": self.limit,
            "measured_input_tokens": measured,
        }
        if measured is None:
            why = (
                "no input tokens were reported by the last model call, so nothing was "
                "measured and nothing removed (this strategy never guesses a count)"
            )
            return WindowPlan([], why, {**details, "unmeasured": True})
        if measured <= self.limit:
            return WindowPlan([], "under the input-token budget", {**details, "over_budget": False})
        removal = visit.removable(self.keep)
        why = f"the last call used {measured} input tokens, over the budget of {self.limit}"
        return WindowPlan(removal.removable, why, {**details, "over_budget": True})


def token_budget(*, max_input_tokens: int, keep_recent_turns: int = 6) -> WindowStrategy:
    """Take the oldest turns out once the last call's *reported* input tokens exceed
    ``max_input_tokens`` (a call that reported none is recorded as unmeasured)."""
    return _Budget(max_input_tokens, keep_recent_turns)


class _Summarize:
    name = "summarize_oldest"

    def __init__(self, keep_recent_turns: int, summarizer: Provider, model: str | None) -> None:
        self.keep = _keep(self.name, keep_recent_turns)
        if not callable(getattr(summarizer, "complete", None)):
            raise AgentBuildError(
                "summarize_oldest(summarizer=...) takes a provider (mock(...), openai(...), "
                "anthropic(...)): the summary is a model call"
            )
        self.summarizer = summarizer
        self.model = model or getattr(summarizer, "model", None) or "summarizer"

    def settings(self) -> dict[str, Any]:
        return {"keep_recent_turns": self.keep, "model": self.model}

    async def plan(self, visit: WindowVisit) -> WindowPlan:
        removal = visit.removable(self.keep)
        details: dict[str, Any] = {"keep_recent_turns": self.keep}
        if not removal.removable:
            return WindowPlan([], "nothing older than the kept turns may leave", details)
        why = f"older than the {self.keep} most recent turns, folded into a summary"
        return await fold(visit, removal.removable, self.summarizer, self.model, details, why)


async def fold(
    visit: WindowVisit,
    heads: list[int],
    summarizer: Provider,
    model: str,
    details: dict[str, Any],
    why: str,
    *,
    replaces_summary: bool = False,
) -> WindowPlan:
    """Fold the turns at ``heads`` (and the visit's earlier summary) into one summary: one
    call of ``summarizer`` over that text only, so its cost is the newly folded content. A
    failed call, or a summary not smaller than what it replaces, folds nothing and says so."""
    folded = visit.messages(heads)
    transcript = "\n".join(
        f"{m['role']}{' (' + m['name'] + ')' if m.get('name') else ''}: {m.get('content', '')}"
        for m in folded
    )
    if visit.summary:
        transcript = f"(earlier summary) {visit.summary}\n{transcript}"
    request = LLMRequest(
        model=model,
        system=_SUMMARIZER_SYSTEM,
        messages=(Message(role="user", content=f"<<<\n{transcript}\n>>>"),),
    )
    try:
        answer = await summarizer.complete(request)
    except Exception as exc:
        failed = f"the summarizer failed ({type(exc).__name__}), so nothing was folded"
        return WindowPlan([], failed, {**details, "summarizer_failed": type(exc).__name__})
    text = answer.content.strip()
    removed_chars = sum(len(m.get("content") or "") for m in folded)
    if replaces_summary:  # compaction: the new summary replaces the earlier one too
        removed_chars += len(visit.summary or "")
    if not text or len(text) >= removed_chars:
        larger = "the summary was not smaller than what it would replace, so nothing was folded"
        return WindowPlan([], larger, {**details, "replacement_not_smaller": True})
    usage = None if answer.usage is None else answer.usage.model_dump(exclude_none=True)
    call = {
        "model": model,
        "request_hash": sha256(request.canonical_json()),
        "usage": usage,
        "folded_messages": len(folded),
    }
    return WindowPlan(heads, why, details, text, call)


def summarize_oldest(
    *, keep_recent_turns: int, summarizer: Provider, model: str | None = None
) -> WindowStrategy:
    """Fold the turns older than ``keep_recent_turns`` into one summary written by
    ``summarizer`` (a provider; its call has its own receipt in the ``summaries`` ledger and
    does not shift the numbering of the agent's calls)."""
    return _Summarize(keep_recent_turns, summarizer, model)


class _Memo:
    """The turns of this run's history and which of them are still served."""

    def __init__(self) -> None:
        self.turns = Turns()
        self.listed: list[Turn] | None = None
        self.kept: list[Turn] = []
        self.counted = 0
        self.dropped: set[int] = set()
        self.standings: dict[str, str] = {}
        self.filed = 0

    def read_standings(self, rows: Sequence[Any]) -> dict[str, str]:
        """The model's current standing per result id (its last declaration), reading only
        the ledger rows filed since the last visit."""
        for i in range(self.filed, len(rows)):
            row = rows[i]
            if row["kind"] == "standing" and not row.get("unknown_id"):
                self.standings[row["id"]] = row["standing"]
        self.filed = len(rows)
        return self.standings


async def window_stage(
    scope: Scope,
    strategy: WindowStrategy,
    keep_last_tool_results: int,
    memo_key: Any,
    keep_ledger_facts: int | None = None,
) -> None:
    """One visit: plan, check against the planner, record, and update the view
    (``keep_ledger_facts``: the fact hold's ceiling under ``.findings()``, else ``None``)."""
    mount = StagePath.parse(scope.stage_path).parent
    memo = scope.run_local(("agent-window", memo_key, mount), _Memo)
    history = scope["history"]
    view = thaw(scope.get("window_view") or {})
    drop = view.get("drop", [])
    turns = memo.turns.advance(history)
    if turns is not memo.listed:  # a new memo (a resumed run) or history: read the view once
        memo.listed = turns
        memo.dropped = {t.head for t in turns if any(a <= t.head < b for a, b in drop)}
        memo.kept = [t for t in turns if t.head not in memo.dropped]
    else:  # only the turns added since the last visit
        memo.kept += [t for t in turns[memo.counted :] if t.head not in memo.dropped]
    memo.counted = len(turns)
    receipts = scope.get("receipts", ())
    measured = thaw(receipts[-1].get("usage")) if receipts else None
    pending = scope.get("pending_question")
    paused = (pending["call"]["id"],) if pending is not None else ()
    facts = None
    if keep_ledger_facts is not None:  # .findings(): the ledger is read, the hold armed
        records = scope.get("window") or ()
        down = len(records) >= 2 and all(_blocked(records[i]) for i in (-1, -2))
        read = memo.read_standings(scope.get("findings") or ())
        standings = MappingProxyType(read)  # this visit's view, O(1): never copied
        facts = FactHold(standings, keep_ledger_facts, down and keep_ledger_facts > 0)
    visit = WindowVisit(
        iteration=scope["iteration"],
        k=len(receipts) + 1,
        kept=tuple(memo.kept),
        measured=measured,
        history=history,
        summary=view.get("summary"),
        _keep_last_tool_results=keep_last_tool_results,
        _paused=paused,
        _facts=facts,
    )
    plan = strategy.plan(visit)
    if inspect.isawaitable(plan):
        plan = await plan
    if not isinstance(plan, WindowPlan):
        raise TypeError(
            f"window strategy {strategy.name!r} returned {plan!r}; plan(visit) returns a "
            "WindowPlan (remove=[] to keep everything)"
        )
    asked = visit._asked[-1] if visit._asked else None  # the fact hold is spent outside it
    check = visit._removal(0, asked or 0)  # the planner's own holds, whatever it keeps
    allowed = set(check.removable)
    refused = [h for h in plan.remove if h not in allowed]
    by_head = {t.head: t for t in memo.kept}
    removed = [by_head[h] for h in plan.remove if h in allowed and h in by_head]
    before = sum(t.chars for t in memo.kept) + len(_standing_in(view))
    record: dict[str, Any] = {
        "strategy": strategy.name,
        "iteration": visit.iteration,
        "k": visit.k,
        "why": plan.why,
        "removed": merge_ranges([t.head, t.end] for t in removed),
        "removed_messages": sum(t.count for t in removed),
    }
    retired = [i for t in removed for i in range(t.head, t.end) if "thinking" in history[i]]
    if retired:  # reasoning this request leaves out: no later request gets it back
        record["thinking_retired"] = retired
    if refused:  # the strategy asked for turns the planner holds: they stay
        record["refused"] = refused
    if check.held:
        record["held"] = check.held
    if removed or plan.summary is not None:
        gone = {t.head for t in removed}
        memo.dropped |= gone
        memo.kept = [t for t in memo.kept if t.head not in gone]
        tools = dict(view.get("dropped_tools", {}))
        for t in removed:
            for _, name in t.results:
                tools[name] = tools.get(name, 0) + 1
        count = view.get("dropped_messages", 0) + record["removed_messages"]
        view = {
            "drop": merge_ranges([*drop, *([t.head, t.end] for t in removed)]),
            "dropped_messages": count,
            "dropped_tools": tools,
        }
        if plan.summary is not None:
            view["summary"] = plan.summary
        else:
            view["notice"] = drop_notice(count, tools)
        scope["window_view"] = view
    record["chars_before"] = before
    record["chars_after"] = sum(t.chars for t in memo.kept) + len(_standing_in(view))
    if facts is not None:
        _file_facts(scope, record, facts, check, asked, removed, visit)
    record.update(plan.details)
    if plan.summary is not None:  # any strategy's summary: on the ledger, so replay has it
        record["summary_chars"] = len(plan.summary)
        made = len(scope.get("summaries", ())) + 1
        row = {"n": made, "at_k": visit.k, **(plan.summary_call or {}), "summary": plan.summary}
        scope.append("summaries", row)
    scope.append("window", record)
    _emit(
        scope,
        "context.window",
        {
            "strategy": strategy.name,
            "k": visit.k,
            "removed_messages": record["removed_messages"],
            "chars_before": before,
            "chars_after": record["chars_after"],
        },
    )


def _blocked(record: Mapping[str, Any]) -> bool:
    return record["removed_messages"] == 0 and bool(
        (record.get("ledger_facts") or {}).get("blocked")
    )


def _file_facts(
    scope: Scope,
    record: dict[str, Any],
    facts: FactHold,
    check: Removal,
    asked: int | None,
    removed: list[Turn],
    visit: WindowVisit,
) -> None:
    """The armed record's two keys: what the fact hold kept, and the standing of every tool
    result that left (absent for one the model never named)."""
    held: dict[str, Any] = {
        "pinned": [p.row() for p in check.pins],
        "yielded": check.yielded,
        "limit": facts.limit,
    }
    if asked is not None:
        held["keep_recent_turns"] = asked
        kept = visit.kept
        recent = {t.head for t in kept[max(0, len(kept) - asked) :]} if asked > 0 else set()
        outside = [
            h["why"]
            for h in check.held
            if h["turn"] not in recent and h["why"] != "current-request"
        ]
        if not removed and outside and all(why in PINS for why in outside):
            held["blocked"] = True  # removed nothing, and only pins stood in the way
    if facts.stand_down:
        held["stand_down"] = True
    record["ledger_facts"] = held
    dropped = [
        {"id": cid, "name": name, **({"standing": s} if (s := facts.standings.get(cid)) else {})}
        for t in removed
        for cid, name in t.results
    ]
    if dropped:
        record["dropped_standings"] = dropped
    _emit(
        scope,
        "context.ledger_facts",
        {
            "k": visit.k,
            "pinned": len(check.pins),
            "yielded": check.yielded,
            "limit": facts.limit,
            "stand_down": facts.stand_down,
            "dropped": len(dropped),
        },
    )


def _standing_in(view: Mapping[str, Any]) -> str:
    """The library message that stands in for what left (empty when nothing left)."""
    if view.get("summary") is not None:
        return SUMMARY_PREFIX + str(view["summary"])
    return str(view.get("notice") or "")


def standing_in_message(view: Mapping[str, Any]) -> dict[str, Any] | None:
    """The served library message of ``view`` (``None`` when nothing was left out)."""
    text = _standing_in(view)
    return {"role": "user", "content": text, "origin": "library"} if text else None
