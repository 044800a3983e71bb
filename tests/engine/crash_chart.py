"""A slow counting loop run in a child process that the crash test kills mid-run."""

from __future__ import annotations

import sys
import time

from trackway import Executor, FlowChart, SqliteStore, flow_chart

N = 60


def step(scope):
    i = scope.get("i", 0) + 1
    # Printed when this stage starts: under "sync", every earlier commit is already durable.
    print(f"started {i}", flush=True)
    time.sleep(0.01)
    scope["i"] = i
    scope.append("seen", i)
    if i == N:
        scope.break_("counted")


def chart() -> FlowChart:
    return flow_chart("Step", step).loop_to("step").build()


if __name__ == "__main__":
    path, durability = sys.argv[1], sys.argv[2]
    store = SqliteStore(path)
    Executor(chart(), store=store, durability=durability, queue_size=4).run_sync()
