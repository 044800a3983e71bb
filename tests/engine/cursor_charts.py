"""Charts that pause at every kind of cursor: a stage, nested subflows, a fork, a selector,
a for-each and a decider branch. Shared by the cursor tests and by the script that wrote the
``trackway.checkpoint/1`` fixtures (``fixtures/make_v1_checkpoints.py``), so the old
checkpoints resume on the same charts today."""

from __future__ import annotations

from collections.abc import Callable

from trackway import FlowChart, flow_chart

from .pause_charts import approval_chart, deep_chart


def _ask(key: str) -> Callable[..., None]:
    def ask(scope):
        scope[f"asked_{key}"] = True
        scope.pause({"question": key})

    return ask


def _take(key: str) -> Callable[..., None]:
    def take(scope, value):
        scope[f"answer_{key}"] = value

    return take


def fork_chart() -> FlowChart:
    """A fork whose chart branch pauses while its function branch finishes."""
    slow = (
        flow_chart("Prepare", lambda s: s.__setitem__("prepared", 1), id="prepare")
        .then("Ask", _ask("slow"), id="ask", on_resume=_take("slow"))
        .build()
    )
    return (
        flow_chart("Start", lambda s: s.__setitem__("start", 1), id="start")
        .fork("Fan", {"fast": lambda s: s.__setitem__("fast", 1), "slow": slow}, id="fan")
        .then("End", lambda s: s.__setitem__("end", s["answer_slow"]), id="end")
        .build()
    )


def selector_chart() -> FlowChart:
    """A selector choosing two branches, one of which pauses."""

    def pick(scope):
        return ["a", "b"]

    def b(scope):
        scope.pause({"question": "b"})

    return (
        flow_chart("Start", lambda s: s.__setitem__("n", 2), id="start")
        .selector("Pick", pick, id="pick")
        .branch("a", "A", lambda s: s.__setitem__("a", 1))
        .branch("b", "B", b)
        .branch("c", "C", lambda s: s.__setitem__("c", 1))
        .end()
        .then("End", lambda s: s.__setitem__("end", True), id="end")
        .build()
    )


def for_each_chart() -> FlowChart:
    """A for-each over three items whose odd items pause."""

    def body(scope):
        item = scope["item"]
        if item % 2:
            scope.pause({"item": item})
        scope["result"] = item * 10

    return (
        flow_chart("Items", lambda s: s.__setitem__("items", [1, 2, 3]), id="items")
        .parallel_for_each(
            "Each", items="items", branch=body, into="results", max_branches=5, id="each"
        )
        .then("End", lambda s: s.__setitem__("total", len(s["results"])), id="end")
        .build()
    )


def decider_chart() -> FlowChart:
    """A decider branch that pauses inside a loop (the cursor keeps the decision)."""

    def route(scope):
        return "ask" if scope.get("round", 0) < 1 else "done"

    def ask(scope):
        scope["round"] = scope.get("round", 0) + 1
        scope.pause({"round": scope["round"]})

    return (
        flow_chart("Start", lambda s: s.__setitem__("go", True), id="start")
        .decider("Route", route, id="route")
        .branch("ask", "Ask", ask, id="ask", loop_to="route", on_resume=_take("round"))
        .branch("done", "Done", lambda s: s.__setitem__("finished", True), id="done")
        .end()
        .build()
    )


CHARTS: dict[str, Callable[[], FlowChart]] = {
    "stage": approval_chart,
    "subflows": deep_chart,
    "fork": fork_chart,
    "selector": selector_chart,
    "for_each": for_each_chart,
    "decider": decider_chart,
}
