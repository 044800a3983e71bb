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
