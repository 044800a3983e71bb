from __future__ import annotations

import time

import pytest

from trackway import Executor, Snapshot, flow_chart
from trackway.engine import deferred


class Collect:
    name = "collect"

    def __init__(self):
        self.seen: list[tuple[str, int]] = []
        self.at: list[float] = []

    def on_write(self, event):
        self.seen.append(("write", event.seq))
        self.at.append(time.perf_counter())

    def on_commit(self, commit):
        self.seen.append(("commit", commit.seq))

    def on_run_end(self, event):
        self.seen.append(("end", event.seq))


def counting_chart(n):
    def step(s):
        i = s.get("i", 0) + 1
        s["i"] = i
        if i == n:
            s.break_()

    return flow_chart("Step", step).loop_to("step").build()


def test_deferred_delivers_everything_in_order_before_run_returns():
    inline, later = Collect(), Collect()
    result = Executor(counting_chart(50), recorders=[inline, deferred(later)]).run_sync()
    assert later.seen == inline.seen and later.seen[-1] == ("end", 50)
    (stats,) = result.snapshot.observer_stats
    assert stats.recorder == "collect" and stats.delivered == 101 and stats.dropped == 0
    assert Snapshot.from_json(result.snapshot.to_json()).observer_stats == (stats,)


def test_drop_oldest_counts_drops_and_block_loses_nothing():
    dropping, blocking = Collect(), Collect()
    result = Executor(
        counting_chart(300),
        recorders=[
            deferred(dropping, max_queue=10),
            deferred(blocking, max_queue=10, overflow="block"),
        ],
    ).run_sync()
    drop_stats, block_stats = result.snapshot.observer_stats
    total = 601  # 300 writes + 300 commits + run end
    assert drop_stats.delivered + drop_stats.dropped == total and drop_stats.dropped > 0
    assert len(dropping.seen) == drop_stats.delivered
    assert dropping.seen[-1] == ("end", 300)  # the newest events survive
    assert block_stats.dropped == 0 and len(blocking.seen) == total
    assert block_stats.inline_flushes > 0 and block_stats.max_depth == 10


def test_deferred_events_are_delivered_after_the_stage_not_inside_it():
    later = Collect()
    marks = []

    def stage(s):
        s["x"] = 1
        marks.append(len(later.seen))  # nothing delivered yet while the stage runs

    Executor(flow_chart("S", stage).build(), recorders=[deferred(later)]).run_sync()
    assert marks == [0] and ("write", 0) in later.seen


def test_a_failing_deferred_recorder_is_isolated():
    class Bad:
        def on_commit(self, commit):
            raise RuntimeError("nope")

    result = Executor(counting_chart(3), recorders=[deferred(Bad())]).run_sync()
    assert result.status == "broken"
    assert [f.hook for f in result.snapshot.recorder_failures] == ["on_commit"] * 3


def test_bad_deferred_options():
    with pytest.raises(ValueError, match="max_queue"):
        deferred(Collect(), max_queue=0)
    with pytest.raises(ValueError, match="overflow"):
        deferred(Collect(), overflow="sample")  # type: ignore[arg-type]
