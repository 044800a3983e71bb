"""Many SSE clients on one served run: does every client get every event, in order?

``trackway serve`` (a subprocess: uvicorn, ``serve_agent``, a SQLite store file) serves an
agent whose turn makes ``--iterations`` tool calls; each call reports ``--progress``
progress events (``ctx.progress``), 5 ms apart. The tool waits, before its first report,
until every client is connected and has read the turn's first events, so all clients
watch the run live. Then, per client count (50, 100, 200 by default):

- every client reads ``GET /api/runs/{id}/events`` to ``run.end``; the ids it got are
  compared with the record (the store's commits, read after the run): complete, in order,
  no duplicate;
- ``lag``: from the run's last recorded event (the end of its last commit) to the moment
  each client read ``run.end`` (p50 and max over clients);
- ``server CPU``: the server process's CPU seconds for the run, and per client-event (the
  growth between client counts says whether fan-out stays O(clients × events)).

No peer serves a run's events to browsers from its record (LangGraph's streaming is
in-process, its server is a separate product; Burr and pydantic-ai have none), so there are
no ratios here. Targets: no event lost or out of order for any client at any count.
Run: ``python benches/bench_sse.py [--clients 50,100,200]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table, print_targets, write_json

AGENT = textwrap.dedent(
    """
    import os, time
    from trackway.agent import Agent, mock
    from trackway.tools import define_tool

    ITERATIONS = int(os.environ["BENCH_ITERATIONS"])
    PROGRESS = int(os.environ["BENCH_PROGRESS"])
    GATE = os.environ["BENCH_GATE"]

    def respond(request):
        done = sum(1 for m in request.messages if m.role == "tool")
        if done >= ITERATIONS:
            return {"content": f"{done} calls made."}
        return {"tool_calls": [{"id": f"c{done}", "name": "work", "args": {"n": done}}]}

    async def work(args, ctx):
        import anyio
        while not os.path.exists(GATE):
            await anyio.sleep(0.01)
        for i in range(PROGRESS):
            ctx.progress({"message": f"step {i} of call {args['n']}"})
            await anyio.sleep(0.005)
        return "ok"

    tool = define_tool(
        name="work",
        description="Work in steps.",
        input_schema={"type": "object", "properties": {"n": {"type": "integer"}}},
        execute=work,
    )
    agent = (
        Agent.create(provider=mock(respond=respond), model="m", max_iterations=ITERATIONS + 1)
        .tool(tool)
        .build()
    )
    """
)


async def _client(base: str, run_id: str, ready: asyncio.Event, got: list[Any]) -> None:
    ids: list[str] = []
    ended = None
    async with (
        httpx.AsyncClient(base_url=base, timeout=120) as http,
        http.stream("GET", f"/api/runs/{run_id}/events") as response,
    ):
        event = None
        async for line in response.aiter_lines():
            if line.startswith("id:"):
                ids.append(line[3:].strip())
                ready.set()
            elif line.startswith("event:"):
                event = line[6:].strip()
            elif line == "" and event == "run.end":
                ended = time.time()
                break
    got.append((ids, ended))


async def _watch(base: str, clients: int, gate: Path) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        started = await http.post(
            "/api/conversations", json={"message": "go"}, headers={"origin": base}
        )
        started.raise_for_status()
        run_id = started.json()["run_id"]
    got: list[Any] = []
    readies = [asyncio.Event() for _ in range(clients)]
    tasks = [asyncio.create_task(_client(base, run_id, r, got)) for r in readies]
    await asyncio.wait_for(asyncio.gather(*(r.wait() for r in readies)), 120)
    gate.write_bytes(b"")  # noqa: ASYNC240 (every client watches: the tool starts reporting)
    await asyncio.wait_for(asyncio.gather(*tasks), 600)
    return {"run_id": run_id, "got": got}


def _serve(tmp: Path, iterations: int, progress: int) -> tuple[subprocess.Popen[str], str]:
    (tmp / "bench_sse_agent.py").write_text(AGENT)
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "BENCH_ITERATIONS": str(iterations),
        "BENCH_PROGRESS": str(progress),
        "BENCH_GATE": str(tmp / "gate"),
    }
    command = [sys.executable, "-m", "trackway.cli", "serve", "bench_sse_agent:agent"]
    command += ["--store", str(tmp / "runs.db"), "--port", "0", "--dev-loopback"]
    proc = subprocess.Popen(command, cwd=tmp, env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if " at " not in line:
        proc.kill()
        raise SystemExit(f"trackway serve did not start: {line!r}")
    base = line.split(" at ")[1].split(" ")[0].rstrip("/")
    for _ in range(200):
        try:
            httpx.get(base + "/api/runs", timeout=5)
            break
        except httpx.TransportError:
            time.sleep(0.05)
    return proc, base


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux: /proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _record(tmp: Path, run_id: str) -> tuple[list[str], float]:
    from trackway.engine import SqliteStore

    store = SqliteStore(tmp / "runs.db")
    try:
        snapshot = store.load(run_id)
        ids = [f"{c.seq}.{i}" for c in snapshot.commits for i in range(len(c.events))]
        last = max(c.ended_at for c in snapshot.commits if c.events)
    finally:
        store.close()
    return ids, last


def measure(clients: int, iterations: int, progress: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        proc, base = _serve(tmp, iterations, progress)
        try:
            before = _cpu_seconds(proc.pid)
            watched = asyncio.run(_watch(base, clients, tmp / "gate"))
            cpu = _cpu_seconds(proc.pid) - before
        finally:
            proc.terminate()
            proc.wait(20)
        record, last = _record(tmp, watched["run_id"])
    complete = sum(1 for ids, _ in watched["got"] if ids == record)
    lags = sorted((ended - last) * 1000 for _, ended in watched["got"] if ended is not None)
    delivered = sum(len(ids) for ids, _ in watched["got"])
    return {
        "clients": clients,
        "events": len(record),
        "complete_in_order": complete,
        "lag_ms_p50": lags[len(lags) // 2] if lags else None,
        "lag_ms_max": lags[-1] if lags else None,
        "server_cpu_s": cpu,
        "cpu_us_per_client_event": cpu / max(delivered, 1) * 1e6,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", default="50,100,200")
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--progress", type=int, default=40)
    args, _ = parser.parse_known_args()  # run_all.py passes its arguments to every bench
    rows = [measure(int(n), args.iterations, args.progress) for n in args.clients.split(",") if n]
    print_table(
        "SSE fan-out: one served run, N clients reading it live",
        [
            "clients",
            "events",
            "complete, in order",
            "lag p50 ms",
            "lag max ms",
            "server CPU s",
            "CPU µs per client-event",
        ],
        [
            [
                r["clients"],
                r["events"],
                r["complete_in_order"],
                r["lag_ms_p50"],
                r["lag_ms_max"],
                r["server_cpu_s"],
                r["cpu_us_per_client_event"],
            ]
            for r in rows
        ],
    )
    targets = [
        {
            "target": f"{r['clients']} clients: every client every event, in order",
            "measured": float(r["complete_in_order"]),
            "threshold": f"= {r['clients']}",
            "pass": r["complete_in_order"] == r["clients"],
        }
        for r in rows
    ]
    print_targets(targets)
    write_json("sse", {"rows": rows, "targets": targets, "args": vars(args)})
    return 0 if all(t["pass"] for t in targets) else 1


if __name__ == "__main__":
    raise SystemExit(main())
