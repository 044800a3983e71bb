"""``ctx.redact(value)`` and ``scope.hide_value(text)``: a value a tool or a stage marks is
masked on every surface the record reaches (store rows, snapshots, recordings, events, the
narrative, memory, the log) from the moment it is marked, while the live run and the model
read it; such a record refuses to rebuild its requests."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import orjson
import pytest

from trackway.agent import (
    Agent,
    RedactedRecordError,
    conversation_redaction,
    define_memory,
    mock,
    receipts,
    replay,
    save_recording,
    served_at,
)
from trackway.engine import Executor, SqliteStore, StageError, flow_chart, thaw
from trackway.recorders import narrative
from trackway.tools import ToolContext, tool

ACCOUNT = "ACCT-9911-7734-SECRET"


def calls(*items: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"id": i, "name": n, "args": a} for i, n, a in items]}


@tool
def account(holder: str, ctx: ToolContext) -> str:
    """Look up a holder's account."""
    number = ctx.redact(ACCOUNT)  # fetched from a vault: the record must not keep it
    return f"{holder} holds {number}, balance 5"


@tool
def fails(ctx: ToolContext) -> str:
    """Fail, quoting the marked value."""
    ctx.redact(ACCOUNT)
    raise RuntimeError(f"the bank refused {ACCOUNT}")


def test_a_marked_value_reaches_the_model_and_no_retained_surface(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "runs.db"
    provider = mock(
        replies=[
            calls(("a", "account", {"holder": "ann"}), ("b", "fails", {})),
            f"Ann's account {ACCOUNT} holds 5.",
        ]
    )
    story = narrative(max_value_chars=10_000)
    heard: list[Any] = []
    agent = (
        Agent.create(provider=provider, model="m", store=SqliteStore(db))
        .tool(account)
        .tool(fails)
        .memory(define_memory("recent", turns=3))
        .recorder(story)
        .build()
    )
    agent.on("*", lambda event: heard.append(event.payload))
    caplog.set_level(logging.DEBUG)
    answer = agent.run_sync("What does ann hold?", identity={"tenant": "t", "principal": "ann"})
    assert ACCOUNT in answer  # the run itself, and the caller, see the real value
    assert ACCOUNT in provider.requests[1].model_dump_json()  # so does the model
    recording = save_recording(agent, tmp_path / "rec.jsonl").read_bytes()
    surfaces = {
        "store": b"".join(p.read_bytes() for p in tmp_path.glob("runs.db*")),
        "recording": recording,
        "snapshot": orjson.dumps(thaw(agent.snapshot().state)),
        "commits": json.dumps([list(c) for c in agent.snapshot().history()], default=str).encode(),
        "events": orjson.dumps(heard, default=str),
        "narrative": story.text(agent.snapshot().run_id).encode(),
        "log": caplog.text.encode(),
    }
    for name, data in surfaces.items():
        assert ACCOUNT.encode() not in data, name
    assert b"[REDACTED]" in surfaces["store"] and b"[REDACTED]" in recording
    rows = {r["id"]: r for r in thaw(agent.snapshot().state["tool_results"])}
    assert rows["a"]["redacted"] == 1 and rows["b"]["redacted"] == 1
    assert len(receipts(agent)) == 2  # what each call cost is still there
    # the first request was made before anything was marked: it is rebuilt exactly
    assert served_at(agent, 1).hash == receipts(agent)[0]["request_hash"]
    with pytest.raises(RedactedRecordError, match=r"tool calls a, b marked values hidden"):
        served_at(agent, 2)
    with pytest.raises(RedactedRecordError):
        replay(agent.snapshot())
    # the next run for this person recalls the turn with the value masked
    again = mock(reply="ok")
    second = (
        Agent.create(provider=again, model="m", store=SqliteStore(db))
        .memory(define_memory("recent", turns=3))
        .build()
    )
    second.run_sync("and now?", identity={"tenant": "t", "principal": "ann"})
    served = again.requests[0].model_dump_json()
    assert "Ann's account [REDACTED] holds 5." in served and ACCOUNT not in served


def test_the_calling_runs_policy_is_there_to_hand_on() -> None:
    seen: list[Any] = []

    @tool
    def inner(ctx: ToolContext) -> str:
        """Report the policy."""
        seen.append(ctx.redaction)
        return "ok"

    policy = conversation_redaction()
    for given in (policy, None):
        provider = mock(replies=[calls(("a", "inner", {})), "done"])
        Agent.create(provider=provider, model="m", redact=given).tool(inner).build().run_sync("go")
    handed, none = seen
    assert none is None
    assert set(policy.keys) <= set(handed.keys)  # the agent's policy: the caller's and more
    # outside an agent's call there is no record: the value is handed back
    assert ToolContext(call_id="c", tool_name="t", run_id="r", iteration=1).redact("x") == "x"
    with pytest.raises(TypeError, match="non-empty str"):
        ToolContext(call_id="c", tool_name="t", run_id="r", iteration=1).redact(42)  # type: ignore[arg-type]


def test_a_stage_hides_a_value_it_fetched(tmp_path: Path) -> None:
    token = "tok-5b1e-SECRET"

    def fetch(scope: Any) -> None:
        scope.hide_value(token)
        scope["auth"] = {"header": f"Bearer {token}", "user": "ann"}
        scope.emit("fetched", {"with": token})

    def use(scope: Any) -> None:
        scope["used"] = scope["auth"]["header"].endswith(token)  # the live run reads it

    chart = flow_chart("Fetch", fetch, id="fetch").then("Use", use, id="use").build()
    store = SqliteStore(tmp_path / "runs.db")
    result = Executor(chart, store=store).run_sync({})
    assert result.state["used"] is True
    kept = store.load(result.run_id)
    assert thaw(kept.state["auth"]) == {"header": "Bearer [REDACTED]", "user": "ann"}
    for path in tmp_path.glob("runs.db*"):
        assert token.encode() not in path.read_bytes()
    assert token not in json.dumps([list(c) for c in result.snapshot.history()], default=str)
    with pytest.raises(StageError, match="hides a non-empty str"):
        Executor(flow_chart("Bad", lambda s: s.hide_value(""), id="bad").build()).run_sync({})
