"""Artifacts and the code runner together (mock model, real subprocesses, a real SQLite
file): a result placed as a ticket is redeemed for ``run_code`` and staged as the same
bytes; another tenant's run cannot stage it; the recording replays with no store, no
subprocess and no model, and rebuilds every request."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from tests.law import assert_law
from trackway import LLMRequest
from trackway.agent import Agent, load_recording, mock, recorded_artifacts, replay, save_recording
from trackway.engine import SqliteStore
from trackway.tools import code_runner_tool, local_code_runner, tool

ACME = {"tenant": "acme", "principal": "ana", "conversation_id": "c1"}
GLOBEX = {"tenant": "globex", "principal": "ana", "conversation_id": "c1"}
CSV = "city,sales\n" + "".join(f"c{i},{i}\n" for i in range(2000))
HASH_CODE = """\
import hashlib, json, os
path = json.loads(os.environ["TRACKWAY_STAGED_INPUTS"])["table"]
data = open(path, "rb").read()
print("sha256", hashlib.sha256(data).hexdigest(), "lines", data.count(b"\\n"))
"""


@tool(result_kind="table/csv")
def export(n: int) -> str:
    """Export the sales table."""
    return CSV


def runner_tool() -> Any:
    return code_runner_tool(
        runner=local_code_runner(time_limit=10.0, memory_limit=256 * 2**20),
        wants={"table": "table/csv"},
    )


def model(stolen: list[str]) -> Any:
    """Export, then hash the ticket shown (or, given one, a ticket taken from elsewhere)."""

    def respond(request: LLMRequest) -> Any:
        last = request.messages[-1]
        if last.role == "user":
            if stolen:
                args = {"code": HASH_CODE, "table": stolen[0]}
                return {"tool_calls": [{"id": "c9", "name": "run_code", "args": args}]}
            return {"tool_calls": [{"id": "c1", "name": "export", "args": {"n": 1}}]}
        found = re.match(r"\[artifact (art_\S+)\]", last.content or "")
        if found:
            args = {"code": HASH_CODE, "table": found.group(1)}
            return {"tool_calls": [{"id": "c2", "name": "run_code", "args": args}]}
        return "done"

    return respond


def data_agent(store: SqliteStore, stolen: list[str]) -> Agent:
    return (
        Agent.create(provider=mock(respond=model(stolen)), model="m", store=store)
        .tool(export)
        .tool(runner_tool())
        .artifacts(store, max_inline_chars=500)
        .build()
    )


def test_a_placed_result_is_staged_for_the_code_as_the_same_bytes(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "runs.db")
    agent = data_agent(store, [])
    assert agent.run_sync("hash the export", identity=ACME) == "done"
    state = agent.snapshot().state
    exported, ran = state["tool_results"]
    placed = exported["artifacts"]["placed"]
    (redeemed,) = ran["artifacts"]["redeemed"]
    assert placed["sha256"] == hashlib.sha256(CSV.encode()).hexdigest()
    assert (redeemed["ref"], redeemed["arg"], ran["status"]) == (placed["ref"], "table", "success")
    printed = [m["content"] for m in state["history"] if m["role"] == "tool"][-1]
    assert f"sha256 {placed['sha256']} lines 2001" in printed  # the code read those bytes
    assert_law(agent)
    out = tmp_path / "run.jsonl"
    save_recording(agent, out, artifacts="embed")
    assert set(recorded_artifacts(out)) == {placed["sha256"]}
    assert recorded_artifacts(out)[placed["sha256"]][1] == CSV.encode()
    store.close()
    replayed = replay(load_recording(out))  # the store is closed; no subprocess, no model
    assert replayed.status == "done"
    assert replayed.state["tool_results"] == state["tool_results"]


def test_another_tenants_ticket_is_refused_and_no_code_runs(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "runs.db")
    first = data_agent(store, [])
    first.run_sync("hash the export", identity=ACME)
    ref = first.snapshot().state["tool_results"][0]["artifacts"]["placed"]["ref"]
    thief = data_agent(store, [ref])
    heard: list[str] = []
    thief.on("tools.*", lambda e: heard.append(e.name))
    assert thief.run_sync("hash this", identity=GLOBEX) == "done"
    (row,) = thief.snapshot().state["tool_results"]
    assert row["status"] == "invalid" and row["artifacts"]["refused"]["reason"] == "unknown"
    assert not [name for name in heard if "session" in name]  # no interpreter was started
    text = next(m["content"] for m in thief.snapshot().state["history"] if m["role"] == "tool")
    assert text.startswith("Not run: run_code") and "There is no live ticket" in text
    assert_law(thief)
    store.close()
