"""What trackway 0.1.0 wrote at commit 3ad18f4 still loads, resumes, continues and replays.

The files in ``v0_1_0_3ad18f4/`` were written by ``make_fixtures.py`` at that commit (before
the engine, agent and tools were cut into subpackages); ``MANIFEST.json`` holds the values
that commit saw. Every test reads a file with the current code and checks its content against
the manifest. Only the public names of ``trackway.engine``, ``trackway.agent``,
``trackway.tools`` and ``trackway.recorders`` are imported: the top-level facade and the
private modules may move, these must not.
"""

from __future__ import annotations

import hashlib
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.backends import run_async
from tests.compat import definitions as d
from trackway.agent import (
    Conversation,
    is_paused,
    load_recording,
    receipts,
    replay,
    replay_async,
    served_at,
)
from trackway.engine import (
    Checkpoint,
    Executor,
    ForgedCheckpointError,
    Snapshot,
    SqliteStore,
    thaw,
)
from trackway.recorders import load_recording as load_stream

FIXTURES = Path(__file__).resolve().parent / "v0_1_0_3ad18f4"
ROOT = FIXTURES.parents[2]  # the checkout, where ``python -m tests.compat...`` runs
MANIFEST: dict[str, Any] = orjson.loads((FIXTURES / "MANIFEST.json").read_bytes())["files"]
CHART = MANIFEST["chart_store.db"]
AGENT = MANIFEST["agent_recording.jsonl"]
SUPPORT = MANIFEST["agent_store.db"]
ARTICLE = MANIFEST["composition_recording.jsonl"]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _opened(name: str, tmp_path: Path) -> Iterator[SqliteStore]:
    """A store opened on a copy of the fixture ``name``; the checked-in file stays as it was
    (opening may bring an older schema up to date, and the tests write to it)."""
    original = FIXTURES / name
    before = _digest(original)
    copy = tmp_path / name
    shutil.copyfile(original, copy)
    store = SqliteStore(copy)
    try:
        yield store
    finally:
        store.close()
    assert _digest(original) == before, f"{name} was changed by the test"


@pytest.fixture
def chart_store(tmp_path: Path) -> Iterator[SqliteStore]:
    yield from _opened("chart_store.db", tmp_path)


@pytest.fixture
def agent_store(tmp_path: Path) -> Iterator[SqliteStore]:
    yield from _opened("agent_store.db", tmp_path)


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to open a network connection fails the test."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"a replay opened a network connection: {args[1:]}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def _log(snapshot: Snapshot) -> list[list[str]]:
    return [[c.stage_path, c.kind, c.outcome] for c in snapshot.history()]


def _commit_at(snapshot: Snapshot, stage_path: str) -> Any:
    (commit,) = (c for c in snapshot.commits if c.stage_path == stage_path)
    return commit


def _tool_results(snapshot: Snapshot) -> list[str]:
    return [m["content"] for m in snapshot.state["history"] if m["role"] == "tool"]


def _check_requests_rebuild(record: Any, hashes: list[str]) -> None:
    """The conformance law over every call, and the hashes the old commit recorded."""
    calls = receipts(record)
    assert [r["request_hash"] for r in calls] == hashes
    for k, receipt in enumerate(calls, start=1):
        assert served_at(record, k).hash == receipt["request_hash"]


def test_the_manifest_describes_every_fixture() -> None:
    on_disk = {p.name for p in FIXTURES.iterdir()}
    assert on_disk == {*MANIFEST, "MANIFEST.json"}
    assert all(MANIFEST[name]["what"] for name in MANIFEST)


# -- the engine: the store, its runs, the documents -----------------------------------------


def test_the_store_lists_both_runs_and_loads_the_finished_one(chart_store: SqliteStore) -> None:
    done, paused = CHART["done"], CHART["paused"]
    runs = chart_store.list_runs()
    assert [(r.run_id, r.chart_id, r.status, r.commit_count) for r in runs] == [
        (done["run_id"], "order", "done", done["commit_count"]),
        (paused["run_id"], "order", "paused", paused["commit_count"]),
    ]
    snapshot = chart_store.load(done["run_id"])
    assert snapshot.status == "done" and len(snapshot) == done["commit_count"]
    assert thaw(snapshot.state) == done["state"]
    assert _log(snapshot) == done["log"]
    assert [[m.stage_path, m.kind, m.outcome] for m in chart_store.history(done["run_id"])] == (
        done["log"]
    )
    assert _commit_at(snapshot, "route#2").detail == done["route_detail"]
    # time travel: after the first commit only what receive wrote is there
    assert thaw(snapshot.state_at(1)) == {
        **d.order_input(d.SMALL_ORDER),
        "amount": d.SMALL_ORDER,
        "items": ["pen", "ink"],
    }


def test_the_paused_run_resumes_from_the_store_with_its_kept_checkpoint(
    chart_store: SqliteStore,
) -> None:
    paused, after = CHART["paused"], CHART["after_resume"]
    (waiting,) = chart_store.paused()
    assert (waiting.run_id, waiting.checkpoint_id, waiting.paused_at) == (
        paused["run_id"],
        paused["checkpoint_id"],
        paused["paused_at"],
    )
    assert thaw(waiting.payload) == paused["payload"]
    before = chart_store.load(paused["run_id"])
    assert before.status == "paused" and _log(before) == paused["log"]
    assert thaw(before.state) == paused["state"]
    assert _commit_at(before, paused["paused_at"]).detail == paused["pause_detail"]

    checkpoint = chart_store.load_checkpoint(paused["checkpoint_id"])
    assert checkpoint.snapshot is None  # the log is in the store
    assert thaw(checkpoint.state) == paused["state"]
    result = Executor(d.order_chart(), store=chart_store).resume_sync(checkpoint, after["answer"])

    assert (result.status, result.run_id) == ("done", paused["run_id"])
    assert thaw(result.state) == after["state"]
    assert len(result.snapshot) == after["commit_count"] and _log(result.snapshot) == after["log"]
    assert _commit_at(result.snapshot, "ask-manager#3:resume1").detail == after["resume_detail"]
    assert chart_store.load(paused["run_id"]) == result.snapshot
    assert chart_store.paused() == []


def test_the_paused_run_resumes_by_its_run_id_on_the_event_loop(
    chart_store: SqliteStore,
) -> None:
    paused, after = CHART["paused"], CHART["after_resume"]
    executor = Executor(d.order_chart(), store=chart_store)

    async def resume() -> Any:
        return await executor.resume(paused["run_id"], after["answer"])

    result = run_async(resume)
    assert (result.status, result.run_id) == ("done", paused["run_id"])
    assert thaw(result.state) == after["state"] and _log(result.snapshot) == after["log"]
    assert {r.run_id: r.status for r in chart_store.list_runs()} == {
        CHART["done"]["run_id"]: "done",
        paused["run_id"]: "done",
    }


def test_the_snapshot_document_loads_equal_to_the_stored_run(chart_store: SqliteStore) -> None:
    meta = MANIFEST["snapshot_done.json"]
    snapshot = Snapshot.from_json((FIXTURES / "snapshot_done.json").read_bytes())
    assert snapshot.run_id == meta["run_id"] == CHART["done"]["run_id"]
    assert snapshot == chart_store.load(meta["run_id"])
    assert thaw(snapshot.state) == CHART["done"]["state"]
    assert _log(snapshot) == CHART["done"]["log"]


def test_the_live_chart_recording_loads_both_runs(chart_store: SqliteStore) -> None:
    path = FIXTURES / "chart_live.jsonl"
    done_id, paused_id = MANIFEST["chart_live.jsonl"]["run_ids"]
    done = load_stream(path, done_id)
    assert done == chart_store.load(done_id)
    assert thaw(done.state) == CHART["done"]["state"]
    paused = load_stream(path, paused_id)
    assert paused.status == "paused" and _log(paused) == CHART["paused"]["log"]
    assert paused == chart_store.load(paused_id)
    assert load_stream(path) == paused  # without a run id: the run started last


def test_the_checkpoint_document_loads_and_resumes_in_another_process(
    async_backend: str,
) -> None:
    meta = MANIFEST["checkpoint_paused.json"]
    path = FIXTURES / "checkpoint_paused.json"
    checkpoint = Checkpoint.from_json(path.read_bytes())
    assert (checkpoint.run_id, checkpoint.checkpoint_id, checkpoint.paused_at) == (
        meta["run_id"],
        meta["checkpoint_id"],
        meta["paused_at"],
    )
    assert checkpoint.chart_id == "order" and thaw(checkpoint.payload) == meta["payload"]
    assert thaw(checkpoint.state) == meta["state"]
    assert checkpoint.snapshot is not None and len(checkpoint.snapshot) == meta["commit_count"]
    with pytest.raises(ForgedCheckpointError):  # its signature is still checked (no claim)
        Executor(d.order_chart(), checkpoint_key="another key, 16 bytes or more").resume_sync(
            path.read_bytes(), d.ANSWER
        )

    # without a store a checkpoint resumes once per process: resume it in a fresh one
    command = ["-m", "tests.compat.resume_checkpoint", async_backend, str(path), d.ANSWER]
    resumed = subprocess.run(
        [sys.executable, *command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stderr
    result = orjson.loads(resumed.stdout)
    after = CHART["after_resume"]
    assert (result["status"], result["run_id"]) == ("done", meta["run_id"])
    assert result["state"] == after["state"] and result["log"] == after["log"]


# -- the agent: recordings, a conversation, a run waiting for a person ----------------------


def test_the_agent_recording_loads_and_every_request_rebuilds() -> None:
    recording = load_recording(FIXTURES / "agent_recording.jsonl")
    assert (recording.run_id, recording.status) == (AGENT["run_id"], "done")
    assert len(recording) == AGENT["commit_count"]
    assert recording.state["final_answer"] == AGENT["answer"]
    assert _tool_results(recording) == AGENT["tool_results"]
    assert [r["usage"] for r in receipts(recording)] == AGENT["usage"]
    _check_requests_rebuild(recording, AGENT["request_hashes"])
    _check_requests_rebuild(FIXTURES / "agent_recording.jsonl", AGENT["request_hashes"])
    # the first request, as the old commit hashed it: the question and the tool offered
    first = served_at(recording, 1)
    assert [(m.role, m.content) for m in first.messages] == [("user", d.WEATHER_QUESTION)]
    assert [t.name for t in first.tools or []] == ["weather"]


@pytest.mark.usefixtures("no_network")
def test_the_agent_recording_replays_to_the_recorded_answer_offline() -> None:
    path = FIXTURES / "agent_recording.jsonl"
    recorded = load_recording(path)
    alone = replay(path)  # the definition read from the recording
    assert alone.state["final_answer"] == AGENT["answer"]
    assert len(alone) == AGENT["commit_count"]
    assert _tool_results(alone) == AGENT["tool_results"]
    # against today's definition, with a provider that has nothing left to say
    again = run_async(replay_async, recorded, d.weather_agent([]))
    assert again.state["final_answer"] == AGENT["answer"]
    assert [r["request_hash"] for r in receipts(again)] == AGENT["request_hashes"]


def test_the_live_agent_recording_reads_as_the_saved_one() -> None:
    meta = MANIFEST["agent_live.jsonl"]
    live = load_recording(FIXTURES / "agent_live.jsonl")
    saved = load_recording(FIXTURES / "agent_recording.jsonl")
    assert live.run_id == meta["run_id"] == saved.run_id
    assert live == saved == load_stream(FIXTURES / "agent_live.jsonl")
    _check_requests_rebuild(live, AGENT["request_hashes"])


def test_the_conversation_continues_in_a_new_turn() -> None:
    meta = MANIFEST["conversation.json"]
    conversation = Conversation.from_json((FIXTURES / "conversation.json").read_bytes())
    assert conversation.agent == meta["agent"]
    assert [[m["role"], m["content"]] for m in conversation.history] == meta["history"]

    question, reply = d.CHAT_NEXT
    agent = d.chat_agent([reply])
    assert agent.run_sync(question, continue_from=conversation) == reply
    sent = served_at(agent, 1)
    assert [[m.role, m.content] for m in sent.messages] == [*meta["history"], ["user", question]]
    assert sent.hash == receipts(agent)[0]["request_hash"]
    assert [[m["role"], m["content"]] for m in agent.checkpoint().history] == [
        *meta["history"],
        ["user", question],
        ["assistant", reply],
    ]


def test_the_agent_run_waiting_for_a_person_completes_with_the_answer(
    agent_store: SqliteStore,
) -> None:
    after = SUPPORT["after_answer"]
    (waiting,) = agent_store.paused()
    assert (waiting.run_id, waiting.checkpoint_id) == (SUPPORT["run_id"], SUPPORT["checkpoint_id"])
    before = agent_store.load(SUPPORT["run_id"])
    assert (before.status, len(before)) == (SUPPORT["status"], SUPPORT["commit_count"])
    pending = thaw(before.state["pending_question"])
    assert (pending["kind"], pending["question"], pending["call"]) == (
        SUPPORT["kind"],
        SUPPORT["question"],
        SUPPORT["call"],
    )
    _check_requests_rebuild(before, SUPPORT["request_hashes"])

    agent = d.support_agent(d.SUPPORT_AFTER, agent_store)
    checkpoint = agent_store.load_checkpoint(waiting.checkpoint_id)
    answer = agent.resume_sync(checkpoint, d.SUPPORT_ANSWER)
    assert not is_paused(answer) and answer == after["answer"]

    run = agent_store.load(SUPPORT["run_id"])
    assert run.status == "done" and len(run) == after["commit_count"]
    assert run.state["final_answer"] == after["answer"]
    assert "pending_question" not in run.state
    assert _tool_results(run) == after["tool_results"]
    # calls made by the old commit and by this one rebuild alike, and the whole run replays
    calls = receipts(run)
    assert len(calls) == after["model_calls"]
    assert [r["request_hash"] for r in calls[: len(SUPPORT["request_hashes"])]] == (
        SUPPORT["request_hashes"]
    )
    for k, receipt in enumerate(calls, start=1):
        assert served_at(run, k).hash == receipt["request_hash"]
    assert replay(run).state["final_answer"] == after["answer"]
    assert agent_store.paused() == []


# -- a composition --------------------------------------------------------------------------


@pytest.mark.usefixtures("no_network")
def test_the_composition_recording_loads_rebuilds_and_replays() -> None:
    path = FIXTURES / "composition_recording.jsonl"
    recording = load_recording(path)
    assert (recording.run_id, recording.status) == (ARTICLE["run_id"], "done")
    assert len(recording) == ARTICLE["commit_count"]
    assert recording.state["final_answer"] == ARTICLE["answer"]
    assert [r["member"] for r in receipts(recording)] == ARTICLE["members"]
    _check_requests_rebuild(recording, ARTICLE["request_hashes"])
    assert served_at(recording, 1, member="write.long").hash == ARTICLE["request_hashes"][1]

    alone = replay(path)  # without the composition: members and decisions from the record
    assert alone.state["final_answer"] == ARTICLE["answer"]
    assert len(alone) == ARTICLE["commit_count"]
    again = replay(path, d.article({}))  # today's composition, its providers silent
    assert again.state["final_answer"] == ARTICLE["answer"]
    assert [r["member"] for r in receipts(again)] == ARTICLE["members"]
