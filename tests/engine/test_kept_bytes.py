"""Bytes kept for a run's life are kept at their exact size.

orjson hands back bytes that hold on to their whole working buffer (4 KB and up, however
short the JSON). Whatever outlives the call (a stored commit, a request's message bytes, a
memo key) is copied to its size first; these tests measure what is kept with tracemalloc
and fail by a wide margin (about 4 KB an item) if a copy is dropped."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from typing import Any

from trackway import Executor, MemoryStore, flow_chart
from trackway.agent.messages._messages import canonical_json
from trackway.engine.core._values import exact_bytes, to_bytes


def _kept_per_item(make: Callable[[int], Any], n: int = 500) -> float:
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        held = [make(i) for i in range(n)]
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert len(held) == n
    return kept / n


def test_exact_bytes_copies_to_size_and_keeps_the_value():
    import orjson

    raw = orjson.dumps({"a": 1})
    assert exact_bytes(raw) == raw
    assert _kept_per_item(lambda i: orjson.dumps({"a": i})) > 2_000  # the leak is real
    assert _kept_per_item(lambda i: exact_bytes(orjson.dumps({"a": i}))) < 200


def test_canonical_json_and_state_bytes_keep_no_buffer():
    assert _kept_per_item(lambda i: canonical_json({"role": "user", "content": str(i)})) < 200
    assert _kept_per_item(lambda i: to_bytes({"n": i})) < 200


def test_memory_store_keeps_a_short_run_in_a_few_kilobytes():
    chart = (
        flow_chart("A", lambda s: s.__setitem__("a", 1), id="a")
        .then("B", lambda s: s.__setitem__("b", "x"), id="b")
        .then("C", lambda s: s.__setitem__("c", [1, 2]), id="c")
        .build()
    )
    store = MemoryStore()
    Executor(chart, store=store).run_sync()  # warm: first-run caches are not the store's
    runs = 40

    def stored(_: int) -> None:
        Executor(chart, store=store).run_sync()

    per_run = _kept_per_item(stored, runs)
    assert len(store.list_runs()) == runs + 1
    # measured ~2.3 KB a run kept; each stored commit holding its 4 KB buffer made ~14 KB
    assert per_run < 6_000, f"{per_run:.0f} bytes kept per stored run"
