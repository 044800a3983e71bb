"""The serving workload shared by every system in ``bench_serving.py``: a model that sleeps
``MODEL_S`` per call and stamps when each call starts and returns, the traces those stamps
make, what a trace says about the framework's added time, the garbage collector's time and
what it promotes, and an RSS sampler.

A run is ``TOOL_TURNS`` model calls that each ask for one tool call, then one call that
answers: ``TOOL_TURNS + 1`` model calls. A run's trace is ``[run_start, call_start,
call_end, ..., run_end]``. The framework-added time of a model call is the time from the
previous model call returning (the run's start, for the first call) to this call starting;
the last call also carries the time from its return to the run's end (teardown).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import threading
import time
from collections.abc import Sequence
from typing import Any

MODEL_S = 0.020  # the injected model latency, per call
TOOL_TURNS = 3
CALLS = TOOL_TURNS + 1
TOOL_NAME = "lookup"
TOOL_DOC = "Look a key up."
TOOL_RESULT = "ok"
PAGE = os.sysconf("SC_PAGE_SIZE")


def clock() -> float:
    return time.perf_counter()


def answer_for(key: str) -> str:
    return f"done {key}"


class Traces:
    """Per-run stamps, keyed by the run's first user message (``go <i>``)."""

    def __init__(self) -> None:
        self.by_key: dict[str, list[float]] = {}

    def start(self, key: str) -> None:
        self.by_key[key] = [clock()]

    def end(self, key: str) -> None:
        self.by_key[key].append(clock())

    async def model_call(self, key: str) -> int:
        """Stamp the call's start, sleep ``MODEL_S``, stamp its return; the call's index."""
        import asyncio

        trace = self.by_key[key]
        index = (len(trace) - 1) // 2
        trace.append(clock())
        await asyncio.sleep(MODEL_S)
        trace.append(clock())
        return index


def added_per_call(traces: Sequence[list[float]]) -> list[float]:
    """Framework-added seconds per model call, over every run (see the module doc)."""
    out: list[float] = []
    for trace in traces:
        if len(trace) != 2 * CALLS + 2:
            raise AssertionError(f"a run made {(len(trace) - 2) // 2} model calls, not {CALLS}")
        prev = trace[0]
        for k in range(CALLS):
            start, end = trace[1 + 2 * k], trace[2 + 2 * k]
            out.append(start - prev)
            prev = end
        out[-1] += trace[-1] - prev
    return out


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    i = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[i]


def rss_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * PAGE


def settle_heap() -> int:
    """Collect garbage and hand freed heap back to the OS (glibc ``malloc_trim``), so the
    next cell's RSS baseline is not the last cell's leftovers; the RSS after it."""
    gc.collect()
    gc.collect()
    with contextlib.suppress(OSError):  # not glibc: the baseline keeps what malloc kept
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    return rss_bytes()


class GcTime:
    """Seconds spent in the cyclic garbage collector while entered (``gc.callbacks``), and
    how many full (generation 2) collections ran."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.full = 0
        self._t = 0.0

    def _hook(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._t = clock()
        else:
            self.seconds += clock() - self._t
            self.full += info["generation"] == 2

    def __enter__(self) -> GcTime:
        gc.callbacks.append(self._hook)
        return self

    def __exit__(self, *exc: Any) -> None:
        gc.callbacks.remove(self._hook)


class Promotions:
    """Objects promoted to the old generation while entered (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.count = 0
        self._young = 0

    def _hook(self, phase: str, info: dict[str, Any]) -> None:
        if info["generation"] != 1:  # only a generation-1 collection promotes to the old one
            return
        if phase == "start":
            self._young = len(gc.get_objects(0)) + len(gc.get_objects(1))
        else:
            self.count += self._young - info["collected"]

    def __enter__(self) -> Promotions:
        gc.callbacks.append(self._hook)
        return self

    def __exit__(self, *exc: Any) -> None:
        gc.callbacks.remove(self._hook)


class RssPeak:
    """A thread that samples this process's RSS every ``every`` seconds; ``peak`` is the
    largest sample (the RSS at ``__enter__`` included)."""

    def __init__(self, every: float = 0.005) -> None:
        self.every = every
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_bytes())
            self._stop.wait(self.every)

    def __enter__(self) -> RssPeak:
        self.peak = rss_bytes()
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_bytes())
