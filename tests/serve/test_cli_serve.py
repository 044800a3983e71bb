"""``trackway serve module:agent``: started as a process on a free port with a tiny agent
module (a scripted model) and a SQLite store file, a conversation driven over HTTP; and the
command refuses to start without an auth hook (or off loopback with --dev-loopback)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx2
import pytest

from trackway.cli import main
from trackway.engine import SqliteStore

AGENT_MODULE = textwrap.dedent(
    """
    from trackway.agent import Agent, mock
    from trackway.tools import Identity


    def respond(request):
        if request.messages[-1].role == "tool":
            return {"content": "It is sunny."}
        return {"tool_calls": [{"id": "c1", "name": "weather", "args": {}}]}


    def weather(args, ctx):
        ctx.progress({"message": "looking"})
        return "sunny"


    from trackway.tools import define_tool

    tool = define_tool(
        name="weather",
        description="The weather.",
        input_schema={"type": "object", "properties": {}},
        execute=weather,
    )
    agent = Agent.create(provider=mock(respond=respond), model="m").tool(tool).build()


    def auth(request):
        token = request.headers.get("authorization")
        return Identity(tenant="t1", principal="ann") if token == "Bearer ann" else None
    """
)


def test_serve_runs_a_conversation_over_http(tmp_path: Path) -> None:
    (tmp_path / "weather_mod.py").write_text(AGENT_MODULE)
    db = tmp_path / "runs.db"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "-m", "trackway.cli", "serve", "weather_mod:agent"]
    command += ["--store", str(db), "--port", "0", "--auth", "weather_mod:auth", "--a2a"]
    errors = (tmp_path / "stderr.txt").open("w")
    proc = subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=errors, text=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("serving agent at http://127.0.0.1:"), (
            line + (tmp_path / "stderr.txt").read_text()
        )
        base = line.split(" at ")[1].split(" ")[0].rstrip("/")
        assert proc.stdout.readline().startswith(f"A2A: {base}/a2a/ ")
        headers = {"authorization": "Bearer ann"}
        with httpx2.Client(base_url=base, timeout=20) as http:
            for _ in range(100):  # the socket is bound before uvicorn takes it
                try:
                    refused = http.get("/api/runs")
                    break
                except httpx2.TransportError:
                    time.sleep(0.05)
            assert refused.status_code == 401
            card = http.get("/a2a/.well-known/agent-card.json").json()  # public, as A2A wants
            assert card["name"] == "agent" and card["capabilities"]["streaming"] is True
            started = http.post("/api/conversations", json={"message": "Weather?"}, headers=headers)
            assert started.status_code == 202
            run_id = started.json()["run_id"]
            with http.stream("GET", f"/api/runs/{run_id}/events", headers=headers) as response:
                text = "".join(response.iter_text())
            assert "event: stream.tool_progress" in text and '"status":"done"' in text
            shown = http.get(f"/api/runs/{run_id}", headers=headers).json()
            assert shown["answer"] == "It is sunny."
    finally:
        proc.terminate()
        proc.wait(10)
        assert proc.stdout is not None
        proc.stdout.close()
        errors.close()
    store = SqliteStore(db)
    assert [r.run_id for r in store.list_runs()] == [run_id]
    store.close()


def test_serve_refuses_to_start_without_an_auth_hook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "weather_mod_b.py").write_text(AGENT_MODULE)
    monkeypatch.chdir(tmp_path)
    assert main(["serve", "weather_mod_b:agent", "--port", "0"]) == 2
    assert main(["serve", "weather_mod_b:agent", "--dev-loopback", "--host", "0.0.0.0"]) == 2
    assert main(["serve", "weather_mod_b:agent", "--auth", "weather_mod_b:tool"]) == 2
