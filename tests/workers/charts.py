"""Charts the worker tests submit, importable by the worker processes they start
(``trackway worker --charts tests.workers.charts:CHARTS``).

Every run of ``steps`` does ten stages of about 1 KB each; ``delay`` (seconds per stage)
makes runs long enough for a kill to land mid-run, ``fail_at`` fails that stage. ``approval``
pauses at its second stage and takes the answer on resume.
"""

from __future__ import annotations

import os
import time
from typing import Any

from trackway import FlowChart, flow_chart

STAGES = 10
PAYLOAD = "x" * 1000


def _step(n: int) -> Any:
    def stage(scope: Any) -> None:
        delay = scope.get("delay", 0)
        if delay:
            time.sleep(delay)
        if scope.get("fail_at") == n:
            raise RuntimeError(f"stage {n} fails on purpose")
        scope[f"s{n}"] = {"n": n, "payload": PAYLOAD, "seed": scope.get("seed", 0)}
        scope["total"] = scope.get("total", 0) + n

    return stage


def steps_chart() -> FlowChart:
    builder = flow_chart("Step 1", _step(1), id="s1")
    for n in range(2, STAGES + 1):
        builder = builder.then(f"Step {n}", _step(n), id=f"s{n}")
    return builder.build()


def _ask(scope: Any) -> None:
    scope["asked"] = True
    scope.pause({"question": "approve?", "seed": scope.get("seed", 0)})


def _take(scope: Any, value: Any) -> None:
    scope["answer"] = value


def approval_chart() -> FlowChart:
    return (
        flow_chart("Prepare", _step(1), id="prepare")
        .then("Ask", _ask, id="ask", on_resume=_take)
        .then("Finish", lambda s: s.__setitem__("done", f"answer={s['answer']}"), id="finish")
        .build()
    )


STEPS = steps_chart()
APPROVAL = approval_chart()
CHARTS = {"steps": STEPS, "approval": APPROVAL}


QUESTIONS = 6


def _question(n: int) -> Any:
    def stage(scope: Any) -> None:
        scope.pause({"question": f"question {n}?"})

    def take(scope: Any, value: Any) -> None:
        scope[f"a{n}"] = value

    return stage, take


def questions_chart() -> FlowChart:
    """Pauses ``QUESTIONS`` times; each answer lands in ``a<n>``."""
    ask, take = _question(1)
    builder = flow_chart("Ask 1", ask, id="q1", on_resume=take)
    for n in range(2, QUESTIONS + 1):
        ask, take = _question(n)
        builder = builder.then(f"Ask {n}", ask, id=f"q{n}", on_resume=take)
    return builder.build()


def _poison(scope: Any) -> None:
    """Kills the process driving it (as a segfault or the OOM killer would), once the runs
    claimed with it are under way."""
    time.sleep(scope.get("delay", 0.3))
    os._exit(17)


def poison_chart() -> FlowChart:
    return flow_chart("Prepare", _step(1), id="prepare").then("Die", _poison, id="die").build()


QUESTIONS_CHART = questions_chart()
CHARTS["questions"] = QUESTIONS_CHART
CHARTS["poison"] = poison_chart()


# -- a redacted agent (conversation_redaction) with a slow tool, for the sealing tests ------

SECRET_MESSAGE = "my card is 4111-1111-1111-1111, please check it"
SIDE_FILE = "TRACKWAY_TEST_SIDE_FILE"


def _lookup(args: Any, ctx: Any) -> str:
    """Writes what it was asked (the real value, never a marker) where the test reads it,
    then takes long enough for a kill to land."""
    side = os.environ.get(SIDE_FILE)
    if side:
        with open(side, "a", encoding="utf-8") as out:
            out.write(f"{os.getpid()} {args['card']}\n")
    time.sleep(float(os.environ.get("TRACKWAY_TEST_TOOL_DELAY", "0")))
    return f"card {args['card'][-4:]} is valid"


def _secret_respond(request: Any) -> Any:
    said = " ".join(str(m.content) for m in request.messages)
    if "[REDACTED]" in said:  # recovery fed the model a marker instead of the conversation
        raise RuntimeError(f"the model was served a redacted conversation: {said}")
    last = request.messages[-1]
    if last.role == "user":
        card = last.content.split("card is ")[1].split(",")[0]
        return {"tool_calls": [{"id": "c1", "name": "lookup", "args": {"card": card}}]}
    return f"checked: {last.content}"


def secret_agent() -> Any:
    from trackway import Agent, define_tool, mock
    from trackway.agent import conversation_redaction

    lookup = define_tool(
        name="lookup",
        description="Check a card.",
        input_schema={
            "type": "object",
            "properties": {"card": {"type": "string"}},
            "required": ["card"],
        },
        execute=_lookup,
    )
    return (
        Agent.create(
            provider=mock(respond=_secret_respond),
            model="m",
            name="secret_desk",
            redact=conversation_redaction(),
        )
        .tool(lookup)
        .build()
    )


SECRET_CHARTS = {"secret_desk": secret_agent()}
"""Served by workers whose store has a seal (``TRACKWAY_SEAL_KEY``)."""


def _heap(scope: Any) -> None:
    import gc

    scope["frozen"] = gc.get_freeze_count() > 0  # what the worker's process froze
    scope["young"] = gc.get_threshold()[0]  # and how often it collects young objects


# `trackway worker` freezes its startup heap while it serves (``--gc-freeze``, the default)
# and spaces its young collections (``--gc-young``)
HEAP_CHARTS = {"heap": flow_chart("Heap", _heap, id="heap").build()}
