"""The artifacts case of ``bench_agent.py``: what placement and redemption cost per call.

Four configurations of one agent whose tool returns a result of a given size, each timed by
the ``tool-calls`` stage's commit (``ended_at - started_at``), the median over runs (mock
model, the first 3 left out):

- ``none``: no artifacts; the small result served inline;
- ``idle``: ``.artifacts(...)`` on a SQLite run store, a result under the threshold (what
  configuring artifacts costs a call that places nothing: the target is no measurable cost);
- ``place``: a 1 MB JSON result placed in that store (the put, with its durable commit);
- ``redeem``: a tool that ``wants`` that 1 MB artifact (the get in a worker thread, the JSON
  decoded into its arguments).
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path
from typing import Any

from _common import fresh_heap

from trackway.agent import Agent, mock
from trackway.engine import SqliteStore
from trackway.tools import RunStoreArtifacts, tool

RUNS = 25
BIG_ROWS = 12_000  # ~1 MB of JSON
WHO = {"tenant": "acme", "principal": "ana", "conversation_id": "bench"}
TARGET_IDLE = 1.25  # idle / none: configuring artifacts costs a small call nothing much
TARGET_PLACE_MS = 100.0  # placing 1 MB in SQLite (synchronous=FULL), per call
TARGET_REDEEM_MS = 100.0


@tool(result_kind="dataset/rows")
def rows(n: int) -> list[dict[str, Any]]:
    """Rows."""
    return [{"city": f"city {i}", "sales": i, "note": "x" * 40} for i in range(n)]


@tool(wants={"data": "dataset/rows"})
def count(data: list[dict[str, Any]]) -> str:
    """Count rows."""
    return str(len(data))


def _stage_us(agent: Agent) -> float:
    (commit,) = [c for c in agent.snapshot().history() if c.stage_id == "tool-calls"]
    return (commit.ended_at - commit.started_at) * 1e6


def _run(store: Any, call: dict[str, Any], artifacts: bool) -> float:
    b = Agent.create(provider=mock(replies=[{"tool_calls": [call]}, "ok"]), model="m")
    b = b.tool(rows)
    if artifacts:  # (a wants tool without a store is refused at build)
        b = b.tool(count).artifacts(store, max_inline_chars=4000)
    agent = b.build()
    agent.run_sync("go", identity=WHO)
    return _stage_us(agent)


def measure() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        runs = SqliteStore(Path(tmp) / "artifacts.db")
        store = RunStoreArtifacts(runs)
        small = {"id": "c1", "name": "rows", "args": {"n": 3}}
        big = {"id": "c1", "name": "rows", "args": {"n": BIG_ROWS}}
        b = Agent.create(provider=mock(replies=[{"tool_calls": [big]}, "ok"]), model="m")
        placer = b.tool(rows).tool(count).artifacts(store).build()
        placer.run_sync("go", identity=WHO)
        row = placer.snapshot().state["tool_results"][0]
        ref, size = row["artifacts"]["placed"]["ref"], row["artifacts"]["placed"]["size"]
        redeem = {"id": "c1", "name": "count", "args": {"data": ref}}
        out: dict[str, Any] = {"runs": RUNS, "artifact_bytes": size}
        for name, call, on in (
            ("none", small, False),
            ("idle", small, True),
            ("place", big, True),
            ("redeem", redeem, True),
        ):
            print(f"  artifacts, {name} ...", end="", flush=True)
            fresh_heap()
            times = [_run(store, call, on) for _ in range(RUNS + 3)][3:]
            out[f"{name}_us"] = statistics.median(times)
            print(" done", flush=True)
        runs.close()
    return out


def targets(section: dict[str, Any]) -> list[dict[str, Any]]:
    idle = section["idle_us"] / section["none_us"]
    place, redeem = section["place_us"] / 1e3, section["redeem_us"] / 1e3
    mb = section["artifact_bytes"] / 1e6
    return [
        {"target": "tool-calls stage, artifacts configured but nothing placed / none",
         "measured": idle, "threshold": f"< {TARGET_IDLE}", "pass": idle < TARGET_IDLE},
        {"target": f"tool-calls stage placing {mb:.1f} MB in SQLite, ms",
         "measured": place, "threshold": f"< {TARGET_PLACE_MS}", "pass": place < TARGET_PLACE_MS},
        {"target": f"tool-calls stage redeeming {mb:.1f} MB from SQLite, ms",
         "measured": redeem, "threshold": f"< {TARGET_REDEEM_MS}",
         "pass": redeem < TARGET_REDEEM_MS},
    ]  # fmt: skip


NOTE = (
    "trackway artifacts (benches/_agent_artifacts.py): the tool-calls stage's commit time "
    f"(median of {RUNS} runs, mock model) with no artifacts, with .artifacts() on a SQLite "
    "run store and a small result (idle), placing a ~1 MB JSON result, and redeeming it "
    "into a wants tool."
)
