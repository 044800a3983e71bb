"""What the patterns (``swarm``, ``map_reduce``, ``tree_of_thoughts``) share: a runner mounted
once per slot of a ``parallel_for_each`` (so each item's member has its own name and its own
part of the log), the options every composition takes, and the patterns' error.

A for-each branch runs one chart for every item; to give each item's member a name of its
own (``map_0``, ``map_1``, ...), the branch chart is a decider on the branch's ``index``
whose branches mount the same runner under one name per slot. A replay then hands each slot
its own recorded answers, whatever order the concurrent items ran in.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from trackway.engine import Decision, FlowChart, Scope, flow_chart

from ..messages._errors import AgentBuildError, AgentError
from ..runtime._agent import Agent
from ._composition import _member_name, _noop, _runner, member_input

__all__ = [
    "PatternError",
    "check_count",
    "member_input",
    "score_of",
    "slot_chart",
    "slot_names",
]


class PatternError(AgentError, ValueError):
    """A pattern's own function answered something it cannot use (a ``split`` that returned
    no list of strings, an ``evaluate`` that returned no finite number): raised from the run,
    naming the function and what it must return."""


def check_count(kind: str, what: str, n: Any, least: int = 1) -> int:
    """``n`` as a whole number ≥ ``least``, or the build refused, naming the option."""
    if isinstance(n, bool) or not isinstance(n, int) or n < least:
        raise AgentBuildError(f"{kind}: {what}={n!r}; use a whole number ≥ {least}")
    return n


def slot_names(stem: str, n: int) -> list[str]:
    """The members' names of ``n`` slots: ``stem_0`` ... ``stem_{n-1}``."""
    return [f"{stem}_{i}" for i in range(n)]


def _result(child: Scope) -> dict[str, Any]:
    return {"result": child.get("final_answer", "")}


def slot_chart(stem: str, runners: list[Agent], chart_id: str) -> FlowChart:
    """The for-each branch: slot ``index`` runs ``runners[index]`` as member ``stem_index``
    on the branch's ``item`` (its message); the member's answer is the branch's ``result``."""
    names = slot_names(stem, len(runners))

    def pick(scope: Scope) -> Decision:
        index = int(scope["index"])
        return Decision(names[index], {"chosen": names[index], "index": index})

    d = flow_chart("_take", _noop, id="_take").decider("_slot", pick, id="_slot")
    for name, runner in zip(names, runners, strict=True):
        mounted = (
            flow_chart("_take", _noop, id="_take")
            .subflow(name, runner.spec(), id=name, input=member_input("item"), output=_result)
            .build(name=name, chart_id=f"_member_{chart_id}_{name}")
        )
        d = d.branch(name, name, mounted, id=f"_case_{name}")
    return d.end().build(name=f"{stem} slot", chart_id=f"_slots_{chart_id}_{stem}")


def runner_of(kind: str, name: str, runner: Any, taken: Mapping[str, Any]) -> Agent:
    """A member checked as a composition checks its members (a name, a runner)."""
    return _runner(kind, _member_name(kind, name, taken), runner)


def score_of(value: Any, where: str) -> float:
    """A score as a finite float, or :class:`PatternError` naming ``where``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise PatternError(
            f"{where} returned {value!r}; it must return a finite number (a higher score "
            "is a better thought)"
        )
    return float(value)
