"""Tellers: how the narrative tells the stages of one kind of chart in a few human lines.

A chart whose stages are machinery (an agent's loop, a composition's structure) reads and
writes many keys of its own at every stage; told key by key, its narrative buries what
happened. A :class:`Teller` claims such charts by id and tells each of its stages from the
stage's commit alone (writes, emitted events, detail), so a narrative told live and one told
from the log say the same. The agent layer registers its tellers when ``trackway.agent`` is
imported; ``narrative(detail="full")`` ignores every teller.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from trackway.engine import Commit

from ._wording import summarize

__all__ = ["Teller", "Telling", "register_teller", "teller_for"]


class Telling:
    """What a teller is given besides the commit: the frame's chart id and the narrative's
    wording options, with the helpers that apply them."""

    __slots__ = ("chart_id", "max_value_chars", "values")

    def __init__(self, chart_id: str, values: bool, max_value_chars: int) -> None:
        self.chart_id = chart_id
        self.values = values
        self.max_value_chars = max_value_chars

    def value(self, value: Any) -> str:
        """A state value in short, as the narrative words values (``max_value_chars``)."""
        return summarize(value, self.max_value_chars)

    def text(self, text: str) -> str:
        """A text (a message, an answer, a tool's result) quoted, cut after twice
        ``max_value_chars`` characters and then followed by its full length, so a reader
        knows it was cut: ``"Paris is sunny..." (412 chars)``. Without values, its length."""
        limit = 2 * self.max_value_chars
        if not self.values:
            return f"({len(text)} chars)"
        if len(text) <= limit:
            return summarize(text, limit)
        return f"{summarize(text, limit)} ({len(text)} chars)"


class Teller(NamedTuple):
    """Tells the stages of the charts ``charts(chart_id)`` accepts whose stage id is in
    ``stages``: ``tell(commit, telling)`` returns the stage's lines (none: the stage is not
    worth a line). A claimed chart's subflow boundaries are the teller's too (their commits
    come to ``tell`` with kind ``subflow-input`` and ``subflow-output``); its other stages
    are told in full, read by read."""

    name: str
    charts: Callable[[str], bool]
    stages: frozenset[str]
    tell: Callable[[Commit, Telling], Sequence[str]]


_TELLERS: list[Teller] = []


def register_teller(teller: Teller) -> None:
    """Tell the charts ``teller`` claims its way (the first registered that claims a chart
    wins); registering a teller of the same name again replaces it."""
    _TELLERS[:] = [t for t in _TELLERS if t.name != teller.name]
    _TELLERS.append(teller)


def teller_for(chart_id: str) -> Teller | None:
    """The teller that claims ``chart_id``, if any."""
    for teller in _TELLERS:
        if teller.charts(chart_id):
            return teller
    return None
