"""Charts shared by the pause tests and the subprocess that resumes them elsewhere."""

from __future__ import annotations

from trackway import FlowChart, flow_chart

CALLS: dict[str, int] = {}


def counted(name: str, write: str | None = None):
    def stage(scope):
        CALLS[name] = CALLS.get(name, 0) + 1
        if write:
            scope[write] = CALLS[name]

    return stage


def ask(scope):
    CALLS["ask"] = CALLS.get("ask", 0) + 1
    scope["asked"] = True
    scope.pause({"question": "approve?", "amount": scope.get("amount", 0)})


def take_answer(scope, value):
    scope["answer"] = value


def approval_chart() -> FlowChart:
    return (
        flow_chart("Prepare", counted("prepare", "prepared"), id="prepare")
        .then("Ask", ask, id="ask", on_resume=take_answer)
        .then("Finish", lambda s: s.__setitem__("done", f"answer={s['answer']}"), id="finish")
        .build()
    )


def deep_chart() -> FlowChart:
    """A pause three subflows down (shared, isolated, shared)."""
    level3 = (
        flow_chart("Before", counted("l3-before"), id="before")
        .then("Ask", ask, id="ask", on_resume=take_answer)
        .then("After", lambda s: s.__setitem__("l3", s["answer"]), id="after")
        .build()
    )
    level2 = (
        flow_chart("L2 start", counted("l2-start"), id="l2-start")
        .subflow("Level 3", level3, id="level3")
        .build()
    )
    level1 = (
        flow_chart("L1 start", counted("l1-start"), id="l1-start")
        .subflow("Level 2", level2, id="level2", input={"seed": "outer"}, output={"from_l2": "l3"})
        .build()
    )
    return (
        flow_chart("Root start", counted("root-start", "outer"), id="root-start")
        .subflow("Level 1", level1, id="level1")
        .then("Root end", lambda s: s.__setitem__("end", s["from_l2"]), id="root-end")
        .build()
    )
