"""Compaction: bounding what the model is shown across turns and follow-ups.

``.compaction(summarizer, threshold_chars=...)`` mounts the ``window`` stage with the
:class:`Compaction` strategy. While the served conversation (the content characters of the
messages still served, plus the summary standing in for the folded ones) is at or under
``threshold_chars`` it does nothing and costs nothing. Past it, one ``summarizer`` call folds
the earlier summary and the turns that became old since (everything the planner lets leave
beyond the ``keep_recent_turns`` most recent turns: never the person's current request, half
a call, a paused turn, the pinned results or a held fact) into one new summary. The call has
its own receipt on the ``summaries`` ledger; the ``window_view`` committed with it serves the
summary in place of every folded message; ``history`` is never edited.

A conversation continued from the run (``agent.checkpoint()``, ``follow_up``) carries the
view in ``Conversation.carry["compaction"]``: the next run's ``seed`` commits it, so its first
call is already served the summary instead of the folded messages, and the next fold starts
from that summary. ``served_at`` reads the committed view; ``replay`` reads each visit's
decision and summary from the record (no summarizer call).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Self

from trackway.engine import Scope, thaw

from ..messages._errors import AgentBuildError, InvalidRunInputError
from ..providers._provider import Provider
from ._window import SUMMARY_PREFIX, WindowPlan, WindowVisit, fold

__all__ = [
    "DEFAULT_KEEP_LEDGER_FACTS",
    "Compaction",
    "CompactionBuilding",
    "carry_compaction",
    "check_carried",
    "check_keep_ledger_facts",
    "seed_compaction",
    "window_settings",
]

DEFAULT_KEEP_LEDGER_FACTS = 4
"""How many fact turns ``.findings()`` holds beyond a window's kept turns by default."""


def check_keep_ledger_facts(value: Any, where: str) -> int:
    """``keep_ledger_facts`` as a ceiling: a whole number ≥ 0, ``False`` for 0 (off)."""
    if value is False:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise AgentBuildError(
            f"{where}(keep_ledger_facts={value!r}): use a whole number ≥ 0 — how many turns "
            f"whose result the model declared a fact stay served beyond the window's kept "
            f"turns (default {DEFAULT_KEEP_LEDGER_FACTS}); 0 or False switches the hold off"
        )
    return value


def _whole(name: str, value: Any, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise AgentBuildError(f"compaction({name}={value!r}): use a whole number ≥ {least}")
    return value


class Compaction:
    """The strategy ``.compaction(...)`` mounts (see the module docstring)."""

    name = "compaction"

    def __init__(
        self, summarizer: Provider, threshold_chars: int, keep_recent_turns: int, model: str | None
    ) -> None:
        if not callable(getattr(summarizer, "complete", None)):
            raise AgentBuildError(
                "compaction(summarizer=...) takes a provider (mock(...), openai(...), "
                "anthropic(...)): the summary is a model call"
            )
        self.summarizer = summarizer
        self.threshold = _whole("threshold_chars", threshold_chars, 1)
        self.keep = _whole("keep_recent_turns", keep_recent_turns, 1)
        self.model = model or getattr(summarizer, "model", None) or "summarizer"

    def settings(self) -> dict[str, Any]:
        return {
            "threshold_chars": self.threshold,
            "keep_recent_turns": self.keep,
            "model": self.model,
        }

    async def plan(self, visit: WindowVisit) -> WindowPlan:
        served = sum(t.chars for t in visit.kept)
        if visit.summary is not None:
            served += len(SUMMARY_PREFIX) + len(visit.summary)
        details: dict[str, Any] = {"threshold_chars": self.threshold, "served_chars": served}
        if served <= self.threshold:
            return WindowPlan([], "the served conversation is within the threshold", details)
        details["over_threshold"] = True
        removal = visit.removable(self.keep)
        if not removal.removable:
            why = "over the threshold, but nothing older than the kept turns may leave"
            return WindowPlan([], why, details)
        why = f"over {self.threshold} characters: older turns folded into the summary"
        return await fold(
            visit,
            removal.removable,
            self.summarizer,
            self.model,
            details,
            why,
            replaces_summary=True,
        )


class CompactionBuilding:
    """``.compaction(...)``."""

    _window: tuple[Any, int] | None

    def compaction(
        self,
        summarizer: Provider,
        *,
        threshold_chars: int,
        keep_recent_turns: int = 4,
        model: str | None = None,
        keep_last_tool_results: int = 2,
    ) -> Self:
        """Bound what the model is shown across turns and follow-ups: once the served
        conversation passes ``threshold_chars`` characters, one ``summarizer`` call folds the
        earlier summary and the turns older than the ``keep_recent_turns`` most recent into a
        new summary (its own receipt, on the ``summaries`` ledger), served in their place by
        every later call and by a conversation continued from the run. ``history`` is never
        edited; the planner's holds apply (``keep_last_tool_results`` as in ``.window()``).
        An agent has one: ``.window(...)`` or ``.compaction(...)``."""
        if self._window is not None:
            raise AgentBuildError(
                "compaction(...) and window(...) both choose what each call is served, and an "
                "agent has one: keep compaction(...) to bound a conversation across turns, or "
                "window(...) to fit each call"
            )
        keep = keep_last_tool_results
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
            raise AgentBuildError(
                f"compaction(keep_last_tool_results={keep!r}): use a whole number ≥ 0 (0 holds "
                "none)"
            )
        self._window = (Compaction(summarizer, threshold_chars, keep_recent_turns, model), keep)
        return self


def window_settings(strategy: Any, keep_last: int, keep_facts: int | None) -> dict[str, Any]:
    """``settings["window"]``: what each call is served depends on it (the fact ceiling only
    on an agent with ``.findings()``)."""
    out = {"strategy": strategy.name, **strategy.settings(), "keep_last_tool_results": keep_last}
    if keep_facts is not None:
        out["keep_ledger_facts"] = keep_facts
    return out


def carry_compaction(strategy: Any, state: Mapping[str, Any]) -> dict[str, Any] | None:
    """What a conversation continued from a compacting run carries: its last view (the
    folded ranges and the summary), or ``None`` when nothing was folded."""
    if getattr(strategy, "name", None) != "compaction":
        return None
    view = state.get("window_view")
    if not view or view.get("summary") is None:
        return None
    return {"compaction": thaw(view)}


def check_carried(history: Sequence[Mapping[str, Any]], carry: Mapping[str, Any]) -> None:
    """Refuse, before a run starts, a carried compaction that does not cover whole turns of
    the conversation's history (a view that would serve half a call), or has no summary."""
    view = carry.get("compaction")
    if view is None:
        return
    drop = view.get("drop") if isinstance(view, Mapping) else None
    ok = isinstance(view, Mapping) and isinstance(view.get("summary"), str)
    ok = ok and isinstance(drop, list) and bool(drop)
    for pair in drop if ok and isinstance(drop, list) else ():
        a, b = pair if isinstance(pair, list) and len(pair) == 2 else (None, None)
        if not (isinstance(a, int) and isinstance(b, int) and 0 <= a < b <= len(history)):
            ok = False
            break
        if history[a].get("role") == "tool" or (
            b < len(history) and history[b].get("role") == "tool"
        ):
            ok = False
            break
    if not ok:
        raise InvalidRunInputError(
            "continue_from carries a compaction that does not fit its history (folded ranges "
            "must be whole turns of it, with a summary): pass the Conversation as "
            "agent.checkpoint() made it, or drop carry['compaction'] to serve every message"
        )


def seed_compaction(scope: Scope) -> None:
    """Commit the view a continued conversation carried (checked by ``run_input``)."""
    carried = scope.get("carried")
    view = None if carried is None else carried.get("compaction")
    if view is not None:
        scope["window_view"] = thaw(view)
