"""Fan-out on Ray (``runner=ray_runner()``): the same run as on one machine.

Every check runs the same chart twice, once with its branches in this process and once with
each branch a Ray task on a local Ray instance (2 CPUs, started once for this module), and
compares what the runs committed: every commit, field by field (values, paths, frames,
outcomes, details, attempts), in order, with only the timestamps and the run id set aside.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from trackway import Agent, Commit, Executor, MemoryStore, RunResult, StageError, flow_chart, mock
from trackway.agent import load_recording, receipts, run_many_sync, served_at
from trackway.engine import (
    ChartBuildError,
    ConfigurationError,
    RayBranchError,
    Retry,
    RunTimeoutError,
    ray_runner,
)

from ..backends import run_async

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", autouse=True)
def ray_local() -> Iterator[None]:
    """One local Ray instance for the module: 2 CPUs, no dashboard, shut down after."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _same(commit: Commit) -> Commit:
    """A commit with what may differ between two runs of one chart set aside."""
    return commit._replace(run_id="", started_at=0.0, ended_at=0.0)


def _assert_same_run(here: RunResult, there: RunResult) -> None:
    assert there.status == here.status
    assert dict(there.state) == dict(here.state)
    ours, theirs = here.snapshot.history(), there.snapshot.history()
    assert [_same(c) for c in theirs] == [_same(c) for c in ours]
    # the bytes a store keeps, too
    assert [_same(c).to_bytes() for c in theirs] == [_same(c).to_bytes() for c in ours]


def _both(chart_of: Any, input: dict[str, Any] | None = None, **run: Any) -> list[RunResult]:
    return [Executor(chart_of(runner)).run_sync(input, **run) for runner in (None, ray_runner())]


# -- the same log -------------------------------------------------------------------------


def _square(scope: Any) -> None:
    item = scope["item"]
    scope["seen"] = [scope["index"], item["n"]]  # stays in the branch's frame
    scope.emit("squared", {"n": item["n"]})
    scope["result"] = {"n": item["n"], "square": item["n"] ** 2, "base": scope["base"]}


def _thousand(runner: Any) -> Any:
    return (
        flow_chart("Load", lambda s: s.__setitem__("items", [{"n": n} for n in range(1000)]))
        .parallel_for_each(
            "Square",
            items="items",
            branch=_square,
            into="squares",
            max_branches=1000,
            runner=runner,
        )
        .then("Sum", lambda s: s.__setitem__("total", sum(r["square"] for r in s["squares"])))
        .build()
    )


def test_a_thousand_items_give_the_same_state_and_the_same_commits() -> None:
    here, there = _both(_thousand, {"base": 7})
    _assert_same_run(here, there)
    assert there.state["total"] == sum(n * n for n in range(1000))
    branch = there.snapshot.history()[1]
    assert (branch.stage_path, branch.frame) == ("square#1/0#0", "square#1/0")
    assert len(there.snapshot.history()) == 1003  # load, 1000 branches, merge, sum


def test_the_commits_reach_the_store_as_inline_branch_commits_do() -> None:
    stores = [MemoryStore(), MemoryStore()]
    results = [
        Executor(_thousand(runner), store=store).run_sync({"base": 1})
        for runner, store in zip((None, ray_runner()), stores, strict=True)
    ]
    loaded = [store.load(result.run_id) for result, store in zip(results, stores, strict=True)]
    assert [_same(c) for c in loaded[1].commits] == [_same(c) for c in loaded[0].commits]
    assert [c.seq for c in loaded[1].commits] == list(range(1, 1004))


def _flaky(folder: Path) -> Any:
    """A stage that fails its first attempt in each branch (the marker is a file: the
    attempts may run in different processes)."""

    def stage(scope: Any) -> None:
        marker = folder / f"{scope['item']}"
        if not marker.exists():
            marker.touch()
            raise ConnectionError(f"flaky {scope['item']}")
        scope["result"] = scope["item"] + 100

    return stage


def _note(scope: Any) -> None:
    scope.append("log", f"note {scope['who']}")


def _fork_chart(folder: Path) -> Any:
    inner = (
        flow_chart("Ask", lambda s: s.__setitem__("q", s["who"] + "?"), id="ask")
        .then("Note", _note, id="note")
        .build(name="inner", chart_id="inner")
    )
    flaky = flow_chart(
        "Retry", _flaky(folder), id="retry", retry=Retry(attempts=2, backoff=0)
    ).build(name="flaky", chart_id="flaky")

    def chart(runner: Any) -> Any:
        return (
            flow_chart("Start", lambda s: None, id="start")
            .fork(
                "Fan",
                {"a": _note, "b": ("Inner", inner), "c": flaky},
                merge="last",
                runner=runner,
            )
            .build()
        )

    return chart


def test_a_fork_of_functions_and_charts_with_retries_merges_the_same(tmp_path: Path) -> None:
    results = []
    for n, runner in enumerate((None, ray_runner())):
        folder = tmp_path / str(n)
        folder.mkdir()
        chart = _fork_chart(folder)(runner)
        results.append(Executor(chart).run_sync({"who": "ann", "item": 1, "log": []}))
    here, there = results
    _assert_same_run(here, there)
    assert there.state["log"] == ["note ann", "note ann"] and there.state["result"] == 101
    retried = next(c for c in there.snapshot.history() if c.stage_id == "retry")
    assert retried.attempts == 2
    assert retried.detail["failed_attempts"] == [{"type": "ConnectionError", "message": "flaky 1"}]


# -- failures -----------------------------------------------------------------------------


def _fails_on_three(scope: Any) -> None:
    if scope["item"] == 3:
        raise ValueError(f"item {scope['item']} is bad")
    scope["result"] = scope["item"]


def _failing(runner: Any) -> Any:
    return (
        flow_chart("Start", lambda s: None, id="start")
        .parallel_for_each(
            "Each",
            items="xs",
            branch=_fails_on_three,
            into="out",
            max_branches=10,
            runner=runner,
        )
        .build()
    )


def test_a_branch_that_raises_fails_the_fork_the_same_way() -> None:
    here, there = _both(_failing, {"xs": list(range(8))}, raise_on_error=False)
    assert here.status == there.status == "failed"
    assert type(there.error) is type(here.error) is StageError
    assert str(there.error) == str(here.error)
    assert there.error.stage_path == here.error.stage_path == "each#1/3#0"
    with pytest.raises(StageError) as info:
        Executor(_failing(ray_runner())).run_sync({"xs": list(range(8))})
    assert isinstance(info.value.__cause__, ValueError)
    assert str(info.value.__cause__) == "item 3 is bad"
    # the branches before the failed one, then its error: nothing after it
    _assert_same_run(here, there)
    assert [c.stage_path for c in there.snapshot.history()][-1] == "each#1/3#0"


def _pauses(scope: Any) -> None:
    scope.pause({"question": "ok?"})


def test_a_branch_that_pauses_is_reported_by_name() -> None:
    chart = (
        flow_chart("Start", lambda s: None, id="start")
        .fork("Fan", {"a": _note, "ask": _pauses}, runner=ray_runner())
        .build()
    )
    with pytest.raises(RayBranchError, match=r"branch 'ask' at 'fan#1' paused .*without runner="):
        Executor(chart).run_sync({"who": "x", "log": []})


def test_a_branch_that_cannot_be_pickled_is_named_with_the_fix() -> None:
    lock = threading.Lock()

    def holds_a_lock(scope: Any) -> None:
        with lock:
            scope["result"] = 1

    chart = (
        flow_chart("Start", lambda s: None, id="start")
        .fork("Fan", {"a": _note, "locked": holds_a_lock}, runner=ray_runner())
        .build()
    )
    with pytest.raises(RayBranchError) as info:
        Executor(chart).run_sync({"who": "x", "log": []})
    message = str(info.value)
    assert "branch 'locked' at 'fan#1'" in message and "holds_a_lock" in message
    assert "must pickle" in message and "without runner=" in message


async def _sleeps(scope: Any) -> None:
    await anyio.sleep(60)
    scope["result"] = 1


def _sleepy(runner: Any) -> Any:
    return (
        flow_chart("Start", lambda s: None, id="start")
        .parallel_for_each(
            "Wait", items="xs", branch=_sleeps, into="out", max_branches=10, runner=runner
        )
        .build()
    )


def _quick_fan_out() -> float:
    """Seconds a small Ray fan-out takes: long if cancelled tasks still hold the CPUs."""
    started = time.monotonic()
    chart = (
        flow_chart("Start", lambda s: None, id="start")
        .fork("Fan", {"a": _note, "b": _note}, merge="last", runner=ray_runner())
        .build()
    )
    Executor(chart).run_sync({"who": "x", "log": []})
    return time.monotonic() - started


def test_a_timeout_ends_the_run_and_cancels_the_ray_tasks() -> None:
    started = time.monotonic()
    with pytest.raises(RunTimeoutError):
        Executor(_sleepy(ray_runner())).run_sync({"xs": [1, 2]}, timeout=1.0)
    assert time.monotonic() - started < 10
    assert _quick_fan_out() < 20  # the 60 s sleepers no longer hold both CPUs


def test_cancelling_the_run_cancels_the_ray_tasks() -> None:
    async def main() -> float:
        started = time.monotonic()
        with anyio.move_on_after(1.0):
            await Executor(_sleepy(ray_runner())).run({"xs": [1, 2]})
        return time.monotonic() - started

    assert run_async(main) < 10
    assert _quick_fan_out() < 20


def test_concurrency_bounds_the_ray_tasks_in_flight() -> None:
    async def slow(scope: Any) -> None:
        await anyio.sleep(0.2)
        scope["result"] = scope["item"]

    chart = (
        flow_chart("Start", lambda s: None, id="start")
        .parallel_for_each(
            "Each",
            items="xs",
            branch=slow,
            into="out",
            max_branches=10,
            concurrency=1,
            runner=ray_runner(),
        )
        .build()
    )
    result = Executor(chart).run_sync({"xs": [1, 2, 3]})
    spans = [(c.started_at, c.ended_at) for c in result.snapshot.history()[1:4]]
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))  # one at a time


# -- agents -------------------------------------------------------------------------------


def _answer(request: Any) -> str:
    return f"answer to {request.messages[-1].content}"


def _agent_chart(runner: Any) -> Any:
    agent = Agent.create(provider=mock(respond=_answer), model="m").system("Be brief.").build()
    ask = (
        flow_chart("Ask", lambda s: s.__setitem__("q", f"question {s['item']}"), id="ask")
        .subflow(
            "Agent",
            agent.spec(),
            id="agent",
            input={"message": "q"},
            output={"result": "final_answer"},
        )
        .build(name="ask", chart_id="ask")
    )
    return (
        flow_chart("Start", lambda s: None, id="start")
        .parallel_for_each(
            "Each", items="xs", branch=ask, into="answers", max_branches=10, runner=runner
        )
        .build()
    )


def test_served_at_holds_for_an_agent_run_inside_a_ray_branch() -> None:
    here, there = _both(_agent_chart, {"xs": [1, 2, 3]})
    _assert_same_run(here, there)
    assert list(there.state["answers"]) == [f"answer to question {n}" for n in (1, 2, 3)]
    rs = receipts(there.snapshot)
    assert len(rs) == 3
    for k, receipt in enumerate(rs, start=1):
        assert served_at(there.snapshot, k).hash == receipt["request_hash"]
    assert served_at(there.snapshot, 2).messages[-1].content == "question 2"
    assert [r["request_hash"] for r in rs] == [r["request_hash"] for r in receipts(here.snapshot)]


# -- run_many -----------------------------------------------------------------------------


def _score(scope: Any) -> None:
    if scope["amount"] < 0:
        raise ValueError("a negative amount")
    scope["risk"] = "high" if scope["amount"] > 1000 else "low"


def test_run_many_on_ray_gives_the_same_report_and_recordings(tmp_path: Path) -> None:
    chart = flow_chart("Score", _score, id="score").build()
    inputs = [{"amount": a} for a in (10, 5000, -1, 700, 3)]
    heard: list[int] = []
    reports = []
    for name, runner in (("here", None), ("ray", ray_runner())):
        folder = tmp_path / name
        folder.mkdir()
        reports.append(
            run_many_sync(
                chart,
                inputs,
                concurrency=2,
                recordings=folder,
                runner=runner,
                on_progress=lambda done, total, item: heard.append(done),
            )
        )
    here, there = reports
    assert [(i.index, i.status, i.output, i.error) for i in there.items] == [
        (i.index, i.status, i.output, i.error) for i in here.items
    ]
    assert there.counts == {"done": 4, "failed": 1}
    assert heard == [1, 2, 3, 4, 5] * 2
    for item, mine in zip(there.items, here.items, strict=True):
        assert item.recording == tmp_path / "ray" / f"{item.index}.jsonl"
        theirs, ours = load_recording(item.recording), load_recording(mine.recording)
        assert [_same(c) for c in theirs.commits] == [_same(c) for c in ours.commits]


def test_run_many_on_ray_runs_an_agent_and_refuses_a_store() -> None:
    agent = Agent.create(provider=mock(respond=_answer), model="m").build()
    report = run_many_sync(agent, ["a", "b"], runner=ray_runner())
    assert [item.output for item in report.items] == ["answer to a", "answer to b"]
    with pytest.raises(ConfigurationError, match="cannot write to this process's MemoryStore"):
        run_many_sync(Executor(_agent_chart(None), store=MemoryStore()), [{}], runner=ray_runner())


# -- the runner itself ----------------------------------------------------------------------


def test_runner_options_are_checked_and_a_wrong_runner_is_refused() -> None:
    assert repr(ray_runner(num_cpus=0.5)) == "ray_runner(num_cpus=0.5, max_retries=3)"
    with pytest.raises(ConfigurationError, match="num_cpus must be a number"):
        ray_runner(num_cpus=-1)
    with pytest.raises(ConfigurationError, match=r"ray_runner\(max_retries=...\)"):
        ray_runner(options={"max_retries": 2})
    with pytest.raises(ChartBuildError, match="runner= takes ray_runner()"):
        flow_chart("S", _note).fork("F", {"a": _note}, runner="ray")  # type: ignore[arg-type]


def test_building_a_ray_chart_does_not_import_ray() -> None:
    code = (
        "import sys\n"
        "from trackway import flow_chart\n"
        "from trackway.engine import ray_runner\n"
        "flow_chart('S', lambda s: None).fork('F', {'a': lambda s: None}, runner=ray_runner())"
        ".build()\n"
        "print('ray' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "False"


# -- the worker's side, in this process -----------------------------------------------------


def test_the_worker_side_runs_a_branch_as_run_parallel_does() -> None:
    """What a Ray worker runs for one branch, called here: the same commits as the branch
    of an inline run (Ray itself is only the transport)."""
    from trackway.engine.chart._chart import Branch
    from trackway.engine.scale import _ray_runner
    from trackway.engine.scale._ray_branches import _remote_branch, _Shared, _Task

    here = Executor(_thousand(None)).run_sync({"base": 3})
    shared = _Shared(here.run_id, "square#1", (Branch("each", "Square", fn=_square),),
                     None, None, None, 10, None)  # fmt: skip
    parent = {"base": 3, "items": [{"n": n} for n in range(1000)]}
    try:
        outcome = _remote_branch(shared, parent, _Task(0, "5", {"item": {"n": 5}, "index": 5}, 9.0))
    finally:  # the worker's loop, kept between tasks there, is closed here
        if _ray_runner._LOOP is not None:
            _ray_runner._LOOP.close()
            _ray_runner._LOOP = None
    (commit,) = outcome.commits
    assert outcome.error is None and outcome.paused_at is None
    assert _same(commit) == _same(here.snapshot.history()[6])._replace(seq=0)


def test_an_exception_crosses_back_with_its_class_and_attributes() -> None:
    from trackway.engine import MergeConflictError
    from trackway.engine.scale._ray_branches import _pack, _unpack

    sent = MergeConflictError("both wrote k", stage_path="f#1", key="k", branches=["a", "b"])
    back = _unpack(_pack(sent))
    assert type(back) is MergeConflictError and str(back) == "both wrote k"
    assert (back.key, back.branches, back.stage_path) == ("k", ["a", "b"], "f#1")

    class Odd(Exception):
        def __init__(self, *, needed: str) -> None:
            super().__init__(needed)
            self.lock = threading.Lock()  # cannot pickle: the attributes are left behind

    odd = _unpack(_pack(Odd(needed="x")))
    assert type(odd).__name__ == "Odd" and str(odd) == "x"


def test_run_many_on_a_worker_returns_the_item_and_its_snapshot() -> None:
    from trackway.agent.compose._run_many import _remote_item

    chart = flow_chart("Score", _score, id="score").build()
    item, snapshot = run_async(_remote_item, Executor(chart), (4, {"amount": 5000}))
    assert (item.index, item.status, item.output["risk"]) == (4, "done", "high")
    assert snapshot is not None and snapshot.run_id == item.run_id


def _dies(scope: Any) -> None:
    import os

    os._exit(1)  # the worker process dies mid-branch


def test_a_branch_whose_worker_dies_fails_the_run_by_name() -> None:
    chart = (
        flow_chart("Start", lambda s: None, id="start")
        .fork("Fan", {"a": _note, "gone": _dies}, runner=ray_runner(max_retries=0))
        .build()
    )
    result = Executor(chart).run_sync({"who": "x", "log": []}, raise_on_error=False)
    assert isinstance(result.error, RayBranchError)
    assert "branch 'gone' at 'fan#1' did not come back from Ray" in str(result.error)
    assert [c.stage_path for c in result.snapshot.history()] == ["start#0", "fan#1/a#0"]


def test_a_failed_branch_lets_the_later_tasks_end_before_cancelling_the_rest() -> None:
    # Ray's core worker aborts the driver when a cancel meets the reply of a task that is
    # completing ("Tried to complete task that was not pending": it killed CI twice on this
    # test's fork). The tasks after a failed one get a grace to end, and only those still
    # running after it are cancelled. A stand-in for ray: the race cannot be caused on
    # demand (a stress loop of 1,500 failing forks under load hit it within ~400 before).
    from trackway.engine.scale._ray_runner import _GRACE, _cancel

    class FakeRay:
        def __init__(self) -> None:
            self.waited: list[float] = []
            self.cancelled: list[str] = []

        def wait(self, refs: list[str], num_returns: int, timeout: float) -> Any:
            self.waited.append(timeout)
            return [r for r in refs if r.startswith("quick")], [
                r for r in refs if not r.startswith("quick")
            ]

        def cancel(self, ref: str) -> None:
            self.cancelled.append(ref)

    fake = FakeRay()
    _cancel(fake, ["quick-1", "slow-2", "quick-3"], _GRACE)
    assert fake.waited == [_GRACE] and fake.cancelled == ["slow-2"]
    assert _GRACE >= 0.2
    _cancel(fake, [], _GRACE)  # nothing to wait for: no call at all
    assert fake.waited == [_GRACE]


class _Heard:
    """Every event a recorder hears, as (hook, stage path, what it says), and the order of
    the branch events against the merge's commits."""

    name = "heard"

    def __init__(self) -> None:
        self.events: list[tuple[str, str, Any]] = []

    def on_stage_start(self, e: Any) -> None:
        self.events.append(("start", e.stage_path, e.stage_id))

    def on_stage_end(self, e: Any) -> None:
        self.events.append(("end", e.stage_path, e.outcome))

    def on_read(self, e: Any) -> None:
        self.events.append(("read", e.stage_path, e.key))

    def on_write(self, e: Any) -> None:
        self.events.append(("write", e.stage_path, e.op.key))

    def on_emit(self, e: Any) -> None:
        self.events.append(("emit", e.stage_path, (e.name, dict(e.payload))))

    def on_commit(self, e: Any) -> None:
        self.events.append(("commit", e.stage_path, e.seq))


def test_branch_events_reach_the_runs_recorders_as_on_one_machine() -> None:
    """Stage, read, write and emit events of every Ray branch are heard by the run's
    recorders: the same events as the inline run's, each branch's before its commit."""
    heard = {}
    for label, runner in (("here", None), ("ray", ray_runner())):
        rec = _Heard()
        chart = (
            flow_chart("Load", lambda s: s.__setitem__("items", [{"n": n} for n in range(6)]))
            .parallel_for_each(
                "Square",
                items="items",
                branch=_square,
                into="squares",
                max_branches=6,
                runner=runner,
            )
            .build()
        )
        result = Executor(chart, recorders=[rec]).run_sync({"base": 2})
        assert result.status == "done"
        heard[label] = rec.events
    here, there = heard["here"], heard["ray"]
    branch = [e for e in there if e[0] != "commit" and "/" in e[1]]
    assert len(branch) > 6 * 3  # every branch started, read, wrote, emitted and ended
    assert sorted(map(repr, branch)) == sorted(
        repr(e) for e in here if e[0] != "commit" and "/" in e[1]
    )
    assert [e for e in there if e[0] == "emit"] == [  # declaration order on Ray
        ("emit", e[1], e[2]) for e in sorted(
            (e for e in here if e[0] == "emit"), key=lambda e: e[2][1]["n"])
    ]  # fmt: skip
    for at, (hook, path, _) in enumerate(there):  # a branch's events come before its commit
        if hook == "commit" and "/" in path:
            assert all(e[1] != path or e[0] == "commit" for e in there[at + 1 :]), path
