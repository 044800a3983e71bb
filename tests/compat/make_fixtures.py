"""Write the compatibility fixtures of trackway 0.1.0 at commit 3ad18f4 into ``v0_1_0_3ad18f4/``.

They are what that commit wrote: a SQLite store with a finished and a paused chart run, a
chart's snapshot and checkpoint documents, a live JSON Lines recording, an agent's saved and
live recordings, a conversation, a SQLite store with an agent run waiting for a person, and
a composition's recording. ``MANIFEST.json`` says what each file is and the values a reader
must find in it; ``test_previous_version.py`` loads them all with the current code.

Only the package sources of 3ad18f4 may write them (the script refuses otherwise), so a
later checkout cannot overwrite the old files with new ones. To write them again::

    git worktree add /tmp/tw-3ad18f4 3ad18f4
    cp -r tests/compat /tmp/tw-3ad18f4/tests/        # this folder, if 3ad18f4 lacks it
    cd /tmp/tw-3ad18f4 && make venv && .venv/bin/python tests/compat/make_fixtures.py
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))  # the tests package of this checkout

from tests.compat import definitions as d  # noqa: E402
from trackway.agent import Paused, receipts, save_recording  # noqa: E402
from trackway.engine import Executor, MemoryStore, RunResult, SqliteStore, thaw  # noqa: E402
from trackway.recorders import jsonl  # noqa: E402

COMMIT = "3ad18f4"
OUT = HERE / "v0_1_0_3ad18f4"
PACKAGE_FOLDERS = ("engine", "agent", "tools", "recorders", "trackway", "pyproject.toml")


def _check_sources() -> None:
    """Refuse to write unless the package sources are those of ``COMMIT``."""
    changed = subprocess.run(
        ["git", "-C", str(ROOT), "diff", "--quiet", COMMIT, "--", *PACKAGE_FOLDERS],
        check=False,
    )
    if changed.returncode != 0:
        sys.exit(
            f"the package sources differ from {COMMIT}: these fixtures record what {COMMIT} "
            f"wrote, so run this script in a checkout of {COMMIT} (see its docstring)"
        )


def _log(result: RunResult) -> list[list[str]]:
    """Each commit's stage path, kind and outcome, in log order."""
    return [[c.stage_path, c.kind, c.outcome] for c in result.snapshot.history()]


def _commit_at(result: RunResult, stage_path: str) -> Any:
    (commit,) = (c for c in result.snapshot.commits if c.stage_path == stage_path)
    return commit


def _chart_store(manifest: dict[str, Any]) -> None:
    """A finished and a paused run of the order chart in one SQLite file, and the live
    JSON Lines recording of both; then, in memory, what resuming the paused one gives."""
    store = SqliteStore(OUT / "chart_store.db")
    live = jsonl(OUT / "chart_live.jsonl")
    done = Executor(d.order_chart(), store=store, recorders=[live]).run_sync(
        d.order_input(d.SMALL_ORDER)
    )
    paused = Executor(d.order_chart(), store=store, recorders=[live]).run_sync(
        d.order_input(d.LARGE_ORDER)
    )
    assert done.status == "done" and paused.status == "paused"
    assert paused.checkpoint is not None
    store.close()
    leftovers = [p.name for p in OUT.glob("chart_store.db-*")]
    assert not leftovers, f"the store left {leftovers} beside it after close()"

    memory = MemoryStore()
    again = Executor(d.order_chart(), store=memory).run_sync(d.order_input(d.LARGE_ORDER))
    assert again.checkpoint is not None
    resumed = Executor(d.order_chart(), store=memory).resume_sync(again.checkpoint, d.ANSWER)
    assert resumed.status == "done"

    manifest["chart_store.db"] = {
        "what": "SqliteStore with two runs of definitions.order_chart(): one done, one paused "
        "at ask-manager with its checkpoint kept",
        "done": {
            "run_id": done.run_id,
            "status": "done",
            "commit_count": len(done.snapshot),
            "log": _log(done),
            "route_detail": thaw(_commit_at(done, "route#2").detail),
            "state": thaw(done.state),
        },
        "paused": {
            "run_id": paused.run_id,
            "status": "paused",
            "checkpoint_id": paused.checkpoint.checkpoint_id,
            "paused_at": paused.checkpoint.paused_at,
            "payload": thaw(paused.checkpoint.payload),
            "commit_count": len(paused.snapshot),
            "log": _log(paused),
            "pause_detail": thaw(_commit_at(paused, "ask-manager#3").detail),
            "state": thaw(paused.state),
        },
        "after_resume": {
            "answer": d.ANSWER,
            "commit_count": len(resumed.snapshot),
            "log": _log(resumed),
            "resume_detail": thaw(_commit_at(resumed, "ask-manager#3:resume1").detail),
            "state": thaw(resumed.state),
        },
    }
    manifest["chart_live.jsonl"] = {
        "what": "jsonl() recorder file of both runs in chart_store.db, as they ran (the "
        "paused one up to its pause)",
        "run_ids": [done.run_id, paused.run_id],
    }
    (OUT / "snapshot_done.json").write_bytes(done.snapshot.to_json())
    manifest["snapshot_done.json"] = {
        "what": "Snapshot.to_json() of the done run in chart_store.db",
        "run_id": done.run_id,
    }


def _chart_checkpoint(manifest: dict[str, Any]) -> None:
    """A self-contained checkpoint (no store: it embeds the log), signed with the key."""
    paused = Executor(d.order_chart(), checkpoint_key=d.CHECKPOINT_KEY).run_sync(
        d.order_input(d.LARGE_ORDER)
    )
    assert paused.checkpoint is not None and paused.checkpoint.snapshot is not None
    (OUT / "checkpoint_paused.json").write_bytes(paused.checkpoint.to_json())
    manifest["checkpoint_paused.json"] = {
        "what": "Checkpoint.to_json() of a run of order_chart() paused at ask-manager, "
        "without a store (the log embedded), signed with definitions.CHECKPOINT_KEY",
        "run_id": paused.run_id,
        "checkpoint_id": paused.checkpoint.checkpoint_id,
        "paused_at": paused.checkpoint.paused_at,
        "payload": thaw(paused.checkpoint.payload),
        "commit_count": len(paused.snapshot),
        "state": thaw(paused.state),
    }


def _agent_recordings(manifest: dict[str, Any]) -> None:
    agent = d.weather_agent(d.WEATHER_SCRIPT, recorders=(jsonl(OUT / "agent_live.jsonl"),))
    answer = agent.run_sync(d.WEATHER_QUESTION)
    agent.shutdown()
    assert answer == d.WEATHER_SCRIPT[-1]["content"]
    save_recording(agent, OUT / "agent_recording.jsonl")
    snap = agent.snapshot()
    calls = receipts(agent)
    manifest["agent_recording.jsonl"] = {
        "what": "save_recording() of definitions.weather_agent() answering "
        f"{d.WEATHER_QUESTION!r} with one weather tool call (mock provider)",
        "run_id": snap.run_id,
        "answer": answer,
        "commit_count": len(snap),
        "request_hashes": [r["request_hash"] for r in calls],
        "usage": [r["usage"] for r in calls],
        "tool_results": [m["content"] for m in snap.state["history"] if m["role"] == "tool"],
    }
    manifest["agent_live.jsonl"] = {
        "what": "jsonl() recorder file of the same agent run as agent_recording.jsonl",
        "run_id": snap.run_id,
    }


def _conversation(manifest: dict[str, Any]) -> None:
    agent = d.chat_agent([d.CHAT_FIRST[1]])
    assert agent.run_sync(d.CHAT_FIRST[0]) == d.CHAT_FIRST[1]
    conversation = agent.checkpoint()
    (OUT / "conversation.json").write_bytes(conversation.to_json())
    manifest["conversation.json"] = {
        "what": "agent.checkpoint().to_json() (a Conversation) of definitions.chat_agent() "
        "after one turn",
        "agent": conversation.agent,
        "history": [[m["role"], m["content"]] for m in conversation.history],
    }


def _paused_agent(manifest: dict[str, Any]) -> None:
    store = SqliteStore(OUT / "agent_store.db")
    outcome = d.support_agent(d.SUPPORT_BEFORE, store).run_sync(d.SUPPORT_MESSAGE)
    assert isinstance(outcome, Paused)
    stored = store.load(outcome.run_id)
    store.close()
    leftovers = [p.name for p in OUT.glob("agent_store.db-*")]
    assert not leftovers, f"the store left {leftovers} beside it after close()"

    whole = d.support_agent(d.SUPPORT_BEFORE + d.SUPPORT_AFTER, MemoryStore())
    again = whole.run_sync(d.SUPPORT_MESSAGE)
    assert isinstance(again, Paused)
    answer = whole.resume_sync(again.checkpoint, d.SUPPORT_ANSWER)
    snap = whole.snapshot()
    manifest["agent_store.db"] = {
        "what": "SqliteStore with one run of definitions.support_agent() paused at its "
        "ask_human call, waiting for the person's answer",
        "run_id": outcome.run_id,
        "checkpoint_id": outcome.checkpoint.checkpoint_id,
        "kind": outcome.kind,
        "question": outcome.question,
        "call": thaw(outcome.call),
        "status": stored.status,
        "commit_count": len(stored),
        "request_hashes": [r["request_hash"] for r in receipts(stored)],
        "after_answer": {
            "answer": answer,
            "commit_count": len(snap),
            "model_calls": len(receipts(snap)),
            "tool_results": [m["content"] for m in snap.state["history"] if m["role"] == "tool"],
        },
    }


def _composition(manifest: dict[str, Any]) -> None:
    flow = d.article(d.ARTICLE_REPLIES)
    answer = flow.run_sync(d.ARTICLE_MESSAGE)
    save_recording(flow, OUT / "composition_recording.jsonl")
    snap = flow.snapshot()
    calls = receipts(flow)
    manifest["composition_recording.jsonl"] = {
        "what": "save_recording() of definitions.article(): a Sequence (research, then a "
        "Conditional write step that picked 'long')",
        "run_id": snap.run_id,
        "answer": answer,
        "commit_count": len(snap),
        "members": [r["member"] for r in calls],
        "request_hashes": [r["request_hash"] for r in calls],
    }


def main() -> None:
    _check_sources()
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir()
    manifest: dict[str, Any] = {}
    _chart_store(manifest)
    _chart_checkpoint(manifest)
    _agent_recordings(manifest)
    _conversation(manifest)
    _paused_agent(manifest)
    _composition(manifest)
    written = {
        "written_by": {"version": "0.1.0", "commit": COMMIT},
        "files": dict(sorted(manifest.items())),
    }
    (OUT / "MANIFEST.json").write_bytes(
        orjson.dumps(written, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
    )
    missing = {p.name for p in OUT.iterdir()} - set(manifest) - {"MANIFEST.json"}
    assert not missing, f"files the manifest does not describe: {sorted(missing)}"
    for path in sorted(OUT.iterdir()):
        print(f"{path.stat().st_size:>8}  {path.name}")


if __name__ == "__main__":
    main()
