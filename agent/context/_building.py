"""The builder's context doors: ``.window(...)`` (what each call is served of the history)
and ``.findings(...)`` (the ledger the model declares on, its served piece, its judge and the
window's hold of declared facts)."""

from __future__ import annotations

from typing import Any, Self

from ..messages._errors import AgentBuildError
from ._compaction import DEFAULT_KEEP_LEDGER_FACTS, check_keep_ledger_facts
from ._findings_plan import findings_options
from ._window import WindowStrategy

__all__ = ["ContextBuilding"]


class ContextBuilding:
    """``.window(...)`` and ``.findings(...)``, mixed into the agent builder."""

    _window: tuple[Any, int] | None
    _findings: bool
    _findings_plan: Any
    _findings_facts: int | None
    _ledger_facts_unrecorded: bool
    _create_facts: int | None

    def window(self, strategy: Any, *, keep_last_tool_results: int = 2) -> Self:
        """Serve each model call a window of the history: ``sliding_window(...)``,
        ``token_budget(...)``, ``summarize_oldest(...)`` or your own
        :class:`~trackway.agent.WindowStrategy`. A ``window`` stage runs before every call
        and records what it left out and why; ``history`` itself is never edited. The
        planner never drops the person's current request, half a call, a paused turn or the
        latest ``keep_last_tool_results`` results of each tool. One strategy per agent."""
        if not isinstance(strategy, WindowStrategy):
            raise AgentBuildError(
                "window(strategy) takes sliding_window(...), token_budget(...), "
                f"summarize_oldest(...) or an object with name, settings() and plan(visit); "
                f"got {strategy!r}"
            )
        if self._window is not None:
            raise AgentBuildError(
                "an agent has one window strategy: window(...) or compaction(...) was already given"
            )
        keep = keep_last_tool_results
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
            raise AgentBuildError(
                f"window(keep_last_tool_results={keep!r}): use a whole number ≥ 0 (0 holds none)"
            )
        self._window = (strategy, keep)
        return self

    def findings(
        self,
        *,
        serve: str = "ledger-and-facts",
        answer_ask: str = "none",
        judge: Any = None,
        keep_ledger_facts: int | bool | None = None,
    ) -> Self:
        """Let the model declare, on each tool call, why it makes it and how it judges
        earlier results (a reserved ``_findings`` argument on every served schema, peeled off
        before validation and the tool); filed on the ``findings`` ledger
        (``agent.findings()``). Results it judges noise or ruled-out are served as short
        tickets on later calls (``serve="ledger-only"``: facts too); once a standing is
        declared every call is served the ledger piece, composed from the record
        (``answer_ask="quote-facts"`` closes it with a short ask). ``judge``: a
        :class:`~trackway.agent.classify.Classifier` that reads each tool result and files a
        judgment row beside the model's standing. ``history`` keeps everything. Under a
        window, turns whose result it declared a fact are held beyond the kept turns, newest
        first, up to ``keep_ledger_facts`` (default 4, ``Agent.create``'s when given; 0 or
        False: off)."""
        self._findings_plan = findings_options(serve, answer_ask, judge)
        self._findings = True
        if keep_ledger_facts is not None:
            self._findings_facts = check_keep_ledger_facts(keep_ledger_facts, "findings")
        return self

    def _ledger_facts(self) -> int | None:
        """The fact hold's ceiling: ``.findings()``'s, else ``Agent.create``'s, else the
        default; ``None`` without ``.findings()`` (or replaying a recording made before)."""
        if not self._findings or self._ledger_facts_unrecorded:
            return None
        given = self._findings_facts if self._findings_facts is not None else self._create_facts
        return DEFAULT_KEEP_LEDGER_FACTS if given is None else given
