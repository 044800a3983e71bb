"""Charts that a child process runs and SIGKILLs itself in, at an exact moment, for the
recovery tests (``test_recovery.py``).

Run as ``python -m tests.engine.crash_depth DB RAN CHART MODE TARGET [ANSWER]``:

* every stage appends ``<its stage path>`` to the file ``RAN`` before doing anything, so the
  test can count how often each stage really ran, across the crash and the recovery;
* ``MODE`` says when the process kills itself (``os.kill(getpid(), SIGKILL)``, a real kill):
  ``start`` when the stage at path ``TARGET`` starts; ``commit`` when the store is about to
  write the commit at path ``TARGET``; ``checkpoint`` when the store is about to save a
  checkpoint; ``resume`` when ``on_resume`` runs (the run is resumed from the checkpoint in
  ``TARGET``, a file, with ``ANSWER``); ``none`` never.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from trackway import Commit, Executor, FlowChart, SqliteStore, flow_chart
from trackway.engine import Checkpoint

MODE = {"mode": "none", "target": "", "ran": ""}


def _die() -> None:
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def _ran(scope: Any) -> None:
    if MODE["ran"]:
        with open(MODE["ran"], "a", encoding="utf-8") as fh:
            fh.write(scope.stage_path + "\n")
    if MODE["mode"] == "start" and scope.stage_path == MODE["target"]:
        _die()


def stage(key: str, value: Any = 1) -> Callable[[Any], None]:
    def run(scope: Any) -> None:
        _ran(scope)
        scope[key] = value

    return run


def bump(key: str) -> Callable[[Any], None]:
    def run(scope: Any) -> None:
        _ran(scope)
        scope[key] = scope.get(key, 0) + 1

    return run


def selector_chart() -> FlowChart:
    def pick(scope: Any) -> list[str]:
        _ran(scope)
        return ["a", "b"]

    def branch(name: str) -> FlowChart:
        return (
            flow_chart(f"{name}1", stage(f"{name}1"), id=f"{name}1")
            .then(f"{name}2", stage(f"{name}2"), id=f"{name}2")
            .build()
        )

    return (
        flow_chart("Start", stage("start"), id="start")
        .selector("Pick", pick, id="pick")
        .branch("a", "A", branch("a"))
        .branch("b", "B", branch("b"))
        .branch("c", "C", branch("c"))
        .end()
        .then("End", stage("end"), id="end")
        .build()
    )


def subflow_fork_chart() -> FlowChart:
    inner = (
        flow_chart("S1", stage("s1"), id="s1")
        .fork("Fan", {"x": stage("x"), "y": stage("y")}, id="fan")
        .then("S2", stage("s2"), id="s2")
        .build()
    )
    return (
        flow_chart("Start", stage("start"), id="start")
        .subflow("Sub", inner, id="sub", input={}, output={"s2": "s2", "x": "x"})
        .then("End", stage("end"), id="end")
        .build()
    )


def for_each_chart() -> FlowChart:
    def first(scope: Any) -> None:
        _ran(scope)
        scope["seen"] = scope["item"]

    def second(scope: Any) -> None:
        _ran(scope)
        scope["result"] = scope["seen"] * 10

    body = flow_chart("E1", first, id="e1").then("E2", second, id="e2").build()
    return (
        flow_chart("Items", stage("items", [1, 2, 3]), id="items")
        .parallel_for_each(
            "Each", items="items", branch=body, into="out", max_branches=5, id="each"
        )
        .then("End", stage("end"), id="end")
        .build()
    )


def loop_chart() -> FlowChart:
    body = flow_chart("Inner", bump("n"), id="inner").then("Check", bump("m"), id="check").build()

    def again(scope: Any) -> str:
        _ran(scope)
        return "more" if scope["n"] < 3 else "stop"

    return (
        flow_chart("Start", stage("start"), id="start")
        .subflow("Body", body, id="body")
        .decider("Again", again, id="again")
        .branch("more", "More", bump("loops"), id="more", loop_to="body")
        .branch("stop", "Stop", stage("done"), id="stop")
        .end()
        .build()
    )


def pause_chart() -> FlowChart:
    def ask(scope: Any) -> None:
        _ran(scope)
        scope["asked"] = True
        scope.pause({"question": "pay?"})

    def answer(scope: Any, value: Any) -> None:
        _ran(scope)
        if MODE["mode"] == "resume":
            _die()
        scope["answer"] = value

    def pay(scope: Any) -> None:
        _ran(scope)
        payments = scope.get("payments", 0)
        scope["payments"] = payments + 1

    return (
        flow_chart("Start", stage("start"), id="start")
        .then("Ask", ask, id="ask", on_resume=answer)
        .then("Pay", pay, id="pay")
        .build()
    )


CHARTS: dict[str, Callable[[], FlowChart]] = {
    "selector": selector_chart,
    "subflow_fork": subflow_fork_chart,
    "for_each": for_each_chart,
    "loop": loop_chart,
    "pause": pause_chart,
}


class KillingStore(SqliteStore):
    """A SqliteStore whose process kills itself just before a chosen write."""

    def append(self, run_id: str, commits: Sequence[Commit]) -> None:
        if MODE["mode"] == "commit" and any(c.stage_path == MODE["target"] for c in commits):
            _die()
        super().append(run_id, commits)

    def save_checkpoint(self, checkpoint: Checkpoint) -> None:
        if MODE["mode"] == "checkpoint":
            _die()
        super().save_checkpoint(checkpoint)


def main(argv: list[str]) -> None:
    db, ran, chart, mode, target, *rest = argv
    MODE.update(mode=mode, target=target, ran=ran)
    store = KillingStore(db)
    executor = Executor(CHARTS[chart](), store=store, max_iterations=20)
    if mode == "resume":
        checkpoint = Checkpoint.from_json(Path(target).read_bytes())
        executor.resume_sync(checkpoint, rest[0])
    else:
        result = executor.run_sync()
        if result.checkpoint is not None:
            print(result.checkpoint.to_json().decode(), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
