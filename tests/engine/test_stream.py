"""``Executor.stream``: commits as they are made, with back-pressure, on asyncio and trio."""

from __future__ import annotations

import anyio
import pytest

from tests.backends import run_async
from trackway import Commit, Executor, MemoryStore, StageError, flow_chart
from trackway.engine import ExecutorUsageError, RedactionPolicy, RunStream, StateValueError

from . import pause_charts as pc


def counting_chart(n: int, started: list[int] | None = None, seen: list[Commit] | None = None):
    def step(s):
        if started is not None and seen is not None:
            started.append(len(seen))  # how many commits the reader had when this stage began
        s["i"] = s.get("i", 0) + 1
        if s["i"] == n:
            s.break_("done")

    return flow_chart("Step", step).loop_to("step").build()


def test_the_stream_yields_every_commit_in_log_order_then_the_result():
    ex = Executor(counting_chart(5))

    async def main() -> tuple[list[Commit], RunStream]:
        seen = []
        async with ex.stream({"i": 0}) as commits:
            assert commits.result is None and commits.run_id.startswith("run-")
            async for commit in commits:
                seen.append(commit)
        return seen, commits

    seen, stream = run_async(main)
    assert stream.result is not None and stream.result.status == "broken"
    assert tuple(seen) == stream.result.snapshot.commits and len(seen) == 5
    assert stream.result.run_id == stream.run_id


def test_a_slow_reader_holds_the_run_back():
    seen: list[Commit] = []
    started: list[int] = []
    ex = Executor(counting_chart(12, started, seen))

    async def main() -> None:
        async with ex.stream(buffer=2) as commits:
            async for commit in commits:
                await anyio.sleep(0.005)
                seen.append(commit)

    run_async(main)
    assert len(seen) == 12
    # stage i + 1 starts only once the channel took commit i: the reader has at least
    # i - buffer - 1 (one more may be in the reader's hands, not yet appended here)
    for i, had in enumerate(started):
        assert had >= i - 3, (i, had, started)
    assert started[-1] >= 8  # without back-pressure the run would be over before any read


def test_parallel_branches_stream_in_declaration_order_under_back_pressure():
    async def slow(s):
        await anyio.sleep(0.01)
        s["slow"] = 1

    def fast(s):
        s["fast"] = 1

    chart = flow_chart("Start", lambda s: None).fork("Fan", {"a": slow, "b": fast}).build()

    async def main() -> tuple[list[str], list[str]]:
        async with Executor(chart).stream(buffer=1) as commits:
            paths = [c.stage_path async for c in commits]
        assert commits.result is not None
        return paths, [c.stage_path for c in commits.result.snapshot.commits]

    paths, logged = run_async(main)
    assert paths == logged == ["start#0", "fan#1/a#0", "fan#1/b#0", "fan#1"]


def test_a_paused_run_ends_the_stream_with_its_checkpoint():
    async def main() -> RunStream:
        async with Executor(pc.approval_chart()).stream({"amount": 3}) as commits:
            assert [c.outcome async for c in commits] == ["ok", "paused"]
        return commits

    stream = run_async(main)
    assert stream.result is not None and stream.result.status == "paused"
    assert stream.result.checkpoint.payload == {"question": "approve?", "amount": 3}


def test_a_failed_run_raises_after_its_last_commit_unless_asked_not_to():
    def boom(s):
        s["partial"] = 1
        raise ValueError("planned")

    ex = Executor(flow_chart("Ok", lambda s: None).then("Boom", boom).build())

    async def raising() -> list[str]:
        seen = []
        async with ex.stream() as commits:
            with pytest.raises(StageError, match="planned"):
                async for commit in commits:
                    seen.append(commit.outcome)
        return seen

    assert run_async(raising) == ["ok", "error"]

    async def quiet() -> RunStream:
        async with ex.stream(raise_on_error=False) as commits:
            assert len([c async for c in commits]) == 2
        return commits

    result = run_async(quiet).result
    assert result is not None and result.status == "failed" and result.error is not None


def test_leaving_early_cancels_the_run_and_a_store_can_recover_it():
    store = MemoryStore()
    reached: list[int] = []

    async def step(s):
        s["i"] = s.get("i", 0) + 1
        reached.append(s["i"])
        await anyio.sleep(0.01)
        if s["i"] == 50:
            s.break_("done")

    ex = Executor(flow_chart("Step", step).loop_to("step").build(), store=store)

    async def main() -> RunStream:
        async with ex.stream(buffer=1) as commits:
            async for commit in commits:
                if commit.seq == 3:
                    break
        return commits

    stream = run_async(main)
    assert stream.result is None
    stored = store.load(stream.run_id)
    assert stored.status == "failed" and stored.error is not None
    assert stored.error.type == "Cancelled"
    assert len(reached) < 10  # the run stopped with its reader
    recovered = ex.recover_sync(stream.run_id)
    assert recovered.status == "broken" and recovered.state["i"] == 50


def test_stream_usage_errors_name_the_fix():
    ex = Executor(counting_chart(2))
    with pytest.raises(ExecutorUsageError, match="buffer"):
        ex.stream(buffer=0)

    async def bad_input() -> None:
        async with ex.stream({"i": object()}):
            pytest.fail("the block is not entered")

    with pytest.raises(StateValueError):  # the input is checked before anything runs
        run_async(bad_input)

    async def without_block() -> None:
        async for _ in ex.stream():
            pass

    with pytest.raises(ExecutorUsageError, match="async with executor.stream"):
        run_async(without_block)

    async def twice() -> None:
        stream = ex.stream()
        async with stream:
            pass
        async with stream:
            pass

    with pytest.raises(ExecutorUsageError, match="runs its run once"):
        run_async(twice)


def test_a_redaction_policy_applies_to_what_is_streamed():
    def write(s):
        s["card"] = "4111"
        s["ok"] = True

    ex = Executor(flow_chart("Write", write).build(), redact=RedactionPolicy(keys=["card"]))

    async def main() -> list[Commit]:
        async with ex.stream() as commits:
            return [c async for c in commits]

    (commit,) = run_async(main)
    assert {op.key: op.value for op in commit.ops} == {"card": "[REDACTED]", "ok": True}


def test_a_failed_run_raises_its_own_error_not_a_group() -> None:
    def boom(scope: object) -> None:
        raise RuntimeError("planned")

    executor = Executor(flow_chart("A", lambda s: None).then("B", boom).build())

    async def main() -> None:
        async with executor.stream({}) as commits:
            async for _commit in commits:
                pass

    with pytest.raises(StageError, match="raised RuntimeError: planned"):
        run_async(main)
