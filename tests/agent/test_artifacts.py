"""Artifacts in the agent: placement after the tool's ceiling and before the agent's cap,
``wants`` redeemed under the run's scope before credentials and execute (every door), the
teaching refusal, store faults that never lose a result, the build and MCP refusals, and a
record that replays and rebuilds every request with no store."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.law import assert_law
from tests.pg import pg_schema
from trackway.agent import (
    Agent,
    AgentBuildError,
    ArtifactsEmbedError,
    is_paused,
    load_recording,
    mock,
    recorded_artifacts,
    replay,
    save_recording,
)
from trackway.engine import DocumentError, PostgresStore, SqliteStore, thaw
from trackway.tools import (
    ArtifactScope,
    MemoryArtifacts,
    RunStoreArtifacts,
    ToolDefinitionError,
    ToolError,
    check_tool_wants,
    define_tool,
    mcp_serve,
    tool,
)

ANA = {"tenant": "acme", "principal": "ana", "conversation_id": "c1"}
ROWS = [{"city": f"c{i}", "sales": i} for i in range(300)]


@tool(result_kind="dataset/rows")
def load_rows(n: int) -> list[dict[str, Any]]:
    """Load sales rows."""
    return ROWS[:n]


SEEN: dict[str, Any] = {}


@tool(wants={"rows": "dataset/rows"})
def total(rows: list[dict[str, Any]], ctx: Any) -> str:
    """Total the sales of a dataset."""
    SEEN["rows"], SEEN["wanted"] = rows, dict(ctx.wanted)
    return f"total {sum(r['sales'] for r in rows)}"


def calls(*batches: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    return [
        {"tool_calls": [{"id": f"c{i}{j}", "name": n, "args": a} for j, (n, a) in enumerate(b)]}
        for i, b in enumerate(batches)
    ]


def agent_with(artifacts: Any, replies: list[Any], **options: Any) -> Agent:
    limit = options.pop("max_inline_chars", 200)
    b = Agent.create(provider=mock(replies=replies), model="m", **options)
    return b.tool(load_rows).tool(total).artifacts(artifacts, max_inline_chars=limit).build()


def placed_ref(agent: Agent) -> str:
    rows = agent.snapshot().state["tool_results"]
    return next(r["artifacts"]["placed"]["ref"] for r in rows if "placed" in r.get("artifacts", {}))


def test_a_large_result_becomes_a_ticket_and_a_wants_tool_gets_the_data(tmp_path: Path) -> None:
    store = RunStoreArtifacts(SqliteStore(tmp_path / "runs.db"))
    first = agent_with(store, [*calls([("load_rows", {"n": 300})]), {"content": "loaded"}])
    heard: list[tuple[str, Any]] = []
    first.on("artifacts.*", lambda e: heard.append((e.name, e.payload)))
    first.run_sync("load", identity=ANA)
    state = first.snapshot().state
    ref = placed_ref(first)
    served = state["history"][2]["content"]
    assert ref in served and "dataset/rows" in served and "`rows` of total" in served
    assert '"city"' not in served  # the data is not in the context window
    row = state["tool_results"][0]
    data = orjson.dumps(ROWS)
    assert row["artifacts"]["placed"] == {
        "ref": ref,
        "kind": "dataset/rows",
        "size": len(data),
        "media_type": "application/json",
        "sha256": store.head(ref, ArtifactScope("acme", "ana", "c1")).sha256,  # type: ignore[union-attr]
    }
    assert row["chars"] == len(served) and state["settings"]["artifacts"] == {
        "max_inline_chars": 200
    }
    assert [n for n, _ in heard] == ["artifacts.placed"]
    assert store.get(ref, ArtifactScope("acme", "ana", "c1"))[1] == data  # type: ignore[index]
    # a later run of the same conversation redeems it
    second = agent_with(store, [*calls([("total", {"rows": ref})]), {"content": "done"}])
    second.run_sync("total it", identity=ANA)
    assert SEEN["rows"] == ROWS and SEEN["wanted"]["rows"].ref == ref
    rows = second.snapshot().state["tool_results"]
    assert rows[0]["status"] == "success" and rows[0]["artifacts"]["redeemed"][0]["ref"] == ref
    assert second.snapshot().state["history"][2]["content"] == f"total {sum(range(300))}"
    for agent in (first, second):
        assert assert_law(agent) == 2
        replay(agent.snapshot())  # no store, no agent


@pytest.mark.parametrize(
    ("given", "reason"),
    [("not a ticket", "not_a_ticket"), ("art_" + "A" * 22, "unknown"), (7, "not_a_ticket")],
)
def test_a_bad_ticket_is_refused_with_the_live_ones_listed(given: Any, reason: str) -> None:
    store = MemoryArtifacts()
    live = store.put(
        b"[1]",
        kind="dataset/rows",
        media_type="application/json",
        scope=ArtifactScope("acme", "ana", "c1"),
    )
    SEEN.clear()
    agent = agent_with(
        store, [*calls([("total", {"rows": given})]), {"content": "ok"}], tool_arg_validation="off"
    )
    heard: list[Any] = []
    agent.on("artifacts.refused", lambda e: heard.append(e.payload))
    agent.run_sync("go", identity=ANA)
    state = agent.snapshot().state
    text = state["history"][2]["content"]
    assert text.startswith("Not run: total") and live.ref in text
    assert state["tool_results"][0]["status"] == "invalid" and SEEN == {}
    assert state["tool_results"][0]["artifacts"]["refused"]["reason"] == reason
    assert heard[0]["op"] == "dispatch" and heard[0]["reason"] == reason
    replay(agent.snapshot())


def test_another_tenants_or_kinds_ticket_is_refused() -> None:
    store = MemoryArtifacts()
    theirs = store.put(
        b"[1]",
        kind="dataset/rows",
        media_type="application/json",
        scope=ArtifactScope("globex", "ana", "c1"),
    )
    wrong = store.put(
        b"[2]",
        kind="other/kind",
        media_type="application/json",
        scope=ArtifactScope("acme", "ana", "c1"),
    )
    agent = agent_with(
        store,
        [
            *calls([("total", {"rows": theirs.ref}), ("total", {"rows": wrong.ref})]),
            {"content": "x"},
        ],
    )
    agent.run_sync("go", identity=ANA)
    rows = agent.snapshot().state["tool_results"]
    assert [r["artifacts"]["refused"]["reason"] for r in rows] == ["unknown", "wrong_kind"]
    history = agent.snapshot().state["history"]
    assert theirs.ref not in history[3]["content"].split("Live tickets")[-1]
    assert "'other/kind', not 'dataset/rows'" in history[3]["content"]


class Failing(MemoryArtifacts):
    def __init__(self, fail: str) -> None:
        super().__init__()
        self.fail = fail

    def put(self, data: bytes, **kw: Any) -> Any:
        if self.fail == "put":
            raise OSError("disk full")
        return super().put(data, **kw)

    def get(self, ref: str, scope: ArtifactScope) -> Any:
        if self.fail == "get":
            raise OSError("connection reset")
        return super().get(ref, scope)


def test_a_store_that_fails_at_put_serves_the_result_inline_and_says_so() -> None:
    agent = agent_with(
        Failing("put"),
        [*calls([("load_rows", {"n": 50})]), {"content": "x"}],
        max_tool_result_chars=300,
    )
    agent.run_sync("go", identity=ANA)
    row = agent.snapshot().state["tool_results"][0]
    assert row["artifacts"] == {
        "place_failed": {"kind": "dataset/rows", "error": "OSError: disk full"}
    }
    assert row["truncated"] is True  # the agent's cap still applies to the inline result
    assert agent.snapshot().state["history"][2]["content"].startswith('[{"city":"c0"')


def test_a_store_that_fails_at_get_is_named_not_the_ticket() -> None:
    store = Failing("get")
    meta = store.put(
        b"[1]",
        kind="dataset/rows",
        media_type="application/json",
        scope=ArtifactScope("acme", "ana", "c1"),
    )
    agent = agent_with(store, [*calls([("total", {"rows": meta.ref})]), {"content": "x"}])
    agent.run_sync("go", identity=ANA)
    row = agent.snapshot().state["tool_results"][0]
    assert row["artifacts"]["refused"]["reason"] == "store_failed"
    assert "store failed" in agent.snapshot().state["history"][2]["content"]


def test_precedence_ceiling_then_placement_then_cap() -> None:
    ceiled = define_tool(
        name="ceiled",
        description="Big.",
        input_schema={"type": "object", "properties": {}},
        execute=lambda a, c: "x" * 1000,
        result_ceiling={"max_chars": 500},
    )
    store = MemoryArtifacts()
    b = Agent.create(
        provider=mock(
            replies=[*calls([("ceiled", {}), ("load_rows", {"n": 300})]), {"content": "x"}]
        ),
        model="m",
        max_tool_result_chars=60,
    )
    agent = (
        b.tool(ceiled).tool(load_rows).tool(total).artifacts(store, max_inline_chars=100).build()
    )
    agent.run_sync("go", identity=ANA)
    refused, ticketed = agent.snapshot().state["tool_results"]
    assert refused["refused"] is True and "artifacts" not in refused  # never placed
    assert store.list(ArtifactScope("acme", "ana", "c1"), "tool-result/ceiled") == []
    assert (
        "placed" in ticketed["artifacts"] and ticketed["truncated"] is True
    )  # the cap cuts the ticket
    assert ticketed["chars_returned"] > 60


def test_a_resumed_call_redeems_before_it_runs() -> None:
    store = MemoryArtifacts()
    meta = store.put(
        orjson.dumps([{"sales": 2}]),
        kind="dataset/rows",
        media_type="application/json",
        scope=ArtifactScope("acme", "ana", "c1"),
    )
    b = Agent.create(
        provider=mock(replies=[*calls([("total", {"rows": meta.ref})]), {"content": "ok"}]),
        model="m",
    )
    agent = b.tool(load_rows).tool(total).check_in(["total"]).artifacts(store).build()
    paused = agent.run_sync("go", identity=ANA)
    assert is_paused(paused)
    assert agent.resume_sync(paused.checkpoint, "approve", identity=ANA) == "ok"
    assert SEEN["rows"] == [{"sales": 2}]
    row = agent.snapshot().state["tool_results"][-1]
    assert row["artifacts"]["redeemed"][0]["ref"] == meta.ref


def test_wants_and_result_kind_are_checked_where_written() -> None:
    schema = {
        "type": "object",
        "properties": {"rows": {"type": "string"}, "n": {"type": "integer"}},
    }
    run = lambda a, c: "x"  # noqa: E731
    with pytest.raises(ToolDefinitionError, match="result_kind=' '"):
        define_tool(name="t", description="d", input_schema=schema, execute=run, result_kind=" ")
    with pytest.raises(ToolDefinitionError, match="not an argument"):
        define_tool(name="t", description="d", input_schema=schema, execute=run, wants={"x": "k"})
    with pytest.raises(ToolDefinitionError, match="has type 'integer'"):
        define_tool(name="t", description="d", input_schema=schema, execute=run, wants={"n": "k"})
    made = define_tool(
        name="t", description="d", input_schema=schema, execute=run, wants={"rows": "k"}
    )
    assert made.wants == {"rows": "k"} and made.result_kind is None
    import dataclasses

    with pytest.raises(ToolDefinitionError, match="wants argument 'n'"):
        check_tool_wants(dataclasses.replace(made, wants={"n": "k"}))


def test_a_wants_tool_without_a_store_is_refused_at_build_and_by_mcp_serve() -> None:
    with pytest.raises(
        AgentBuildError, match=r"tool 'total' wants artifacts .*\.artifacts\(store\)"
    ):
        Agent.create(provider=mock(reply="x"), model="m").tool(total).build()
    with pytest.raises(ToolError, match="mcp_serve: tool 'total' wants artifacts"):
        mcp_serve([total], name="srv")


def test_get_artifact_store_and_nothing_configured_writes_nothing() -> None:
    store = MemoryArtifacts()
    assert agent_with(store, [{"content": "x"}]).get_artifact_store() is store
    plain = Agent.create(
        provider=mock(replies=[*calls([("load_rows", {"n": 300})]), {"content": "x"}]), model="m"
    )
    agent = plain.tool(load_rows).build()
    assert agent.get_artifact_store() is None
    agent.run_sync("go")
    state = thaw(agent.snapshot().state)
    assert "artifacts" not in state["settings"] and "artifacts" not in state["tool_results"][0]
    assert state["history"][2]["content"] == orjson.dumps(ROWS).decode()


def test_postgres_keeps_the_artifacts_of_a_run() -> None:
    with pg_schema("artagent") as dsn:
        runs = PostgresStore(dsn)
        first = agent_with(
            runs, [*calls([("load_rows", {"n": 300})]), {"content": "x"}], store=runs
        )
        first.run_sync("go", identity=ANA)
        ref = placed_ref(first)
        second = agent_with(runs, [*calls([("total", {"rows": ref})]), {"content": "x"}])
        second.run_sync("go", identity=ANA)
        assert SEEN["rows"] == ROWS
        assert_law(runs.load(first.snapshot().run_id))
        runs.close()


def one_run_agent(artifacts: Any) -> Agent:
    """Loads the rows (placed), then totals them by the ticket it read, then a bad ticket."""

    def respond(request: Any) -> Any:
        told = [m for m in request.messages if m.role == "tool"]
        if not told:
            return {"tool_calls": [{"id": "c1", "name": "load_rows", "args": {"n": 300}}]}
        if len(told) == 1:
            ref = re.search(r"art_[A-Za-z0-9_-]{22}", str(told[0].content)).group(0)  # type: ignore[union-attr]
            return {
                "tool_calls": [
                    {"id": "c2", "name": "total", "args": {"rows": ref}},
                    {"id": "c3", "name": "total", "args": {"rows": "art_" + "B" * 22}},
                ]
            }
        return "The total is 44850."

    b = Agent.create(provider=mock(respond=respond), model="m")
    return b.tool(load_rows).tool(total).artifacts(artifacts, max_inline_chars=200).build()


def test_recordings_refer_by_hash_or_embed_the_bytes(tmp_path: Path) -> None:
    store = MemoryArtifacts()
    agent = one_run_agent(store)
    assert agent.run_sync("total the sales", identity=ANA) == "The total is 44850."
    refer = save_recording(agent, tmp_path / "refer.jsonl")
    embed = save_recording(agent, tmp_path / "embed.jsonl", artifacts="embed")
    data = orjson.dumps(ROWS)
    assert data not in refer.read_bytes() and recorded_artifacts(refer) == {}
    kept = recorded_artifacts(embed)
    assert list(kept) == [hashlib.sha256(data).hexdigest()]
    assert kept[hashlib.sha256(data).hexdigest()][1] == data
    assert kept[hashlib.sha256(data).hexdigest()][0]["kind"] == "dataset/rows"
    for path in (refer, embed):  # either replays and rebuilds every request with no store
        loaded = load_recording(path)
        assert assert_law(loaded) == 3
        assert replay(loaded).state["final_answer"] == "The total is 44850."
    with pytest.raises(ArtifactsEmbedError, match="not in"):
        save_recording(agent, tmp_path / "x.jsonl", artifacts="embed", store=MemoryArtifacts())
    tampered = embed.read_bytes().replace(b'"data":"W3', b'"data":"X3')
    (tmp_path / "t.jsonl").write_bytes(tampered)
    with pytest.raises(DocumentError, match="do not match its sha256"):
        recorded_artifacts(tmp_path / "t.jsonl")


FIXTURE = Path(__file__).parent / "fixtures" / "recording-artifacts-v1.jsonl"


def test_an_artifacts_recording_of_this_version_loads_and_replays() -> None:
    """Kept as a fixture: later versions must load it, rebuild every call and replay it."""
    loaded = load_recording(FIXTURE)
    rows = loaded.state["tool_results"]
    assert "placed" in rows[0]["artifacts"]
    assert rows[1]["artifacts"]["redeemed"][0]["ref"] == rows[0]["artifacts"]["placed"]["ref"]
    assert rows[2]["artifacts"]["refused"]["reason"] == "unknown"
    assert loaded.state["settings"]["artifacts"] == {"max_inline_chars": 200}
    assert assert_law(loaded) == 3
    assert replay(loaded).state["final_answer"] == loaded.state["final_answer"]
    (kept,) = recorded_artifacts(FIXTURE).values()
    assert kept[1] == orjson.dumps(ROWS)


def write_fixture(path: Path = FIXTURE) -> None:  # pragma: no cover - run by hand
    """How the fixture was made: ``python -c 'from tests.agent.test_artifacts import
    write_fixture; write_fixture()'``."""
    agent = one_run_agent(MemoryArtifacts())
    agent.run_sync("total the sales", identity=ANA)
    save_recording(agent, path, artifacts="embed")


def test_a_hand_built_tool_is_checked_at_build_and_a_storeless_wants_call_is_refused() -> None:
    import dataclasses

    bad = dataclasses.replace(load_rows, result_kind="")
    with pytest.raises(ToolDefinitionError, match="result_kind=''"):
        Agent.create(provider=mock(reply="x"), model="m").tool(bad).artifacts(
            MemoryArtifacts()
        ).build()
    # a tool the build never saw (swapped in afterwards) still never gets a raw ticket
    agent = (
        Agent.create(
            provider=mock(
                replies=[*calls([("total", {"rows": "art_" + "C" * 22})]), {"content": "x"}]
            ),
            model="m",
        )
        .tool(load_rows)
        .build()
    )
    agent._cfg.tools["total"] = total
    agent._cfg.registered = (*agent._cfg.registered, "total")
    SEEN.clear()
    agent.run_sync("go")
    row = agent.snapshot().state["tool_results"][0]
    assert row["status"] == "invalid" and row["artifacts"]["refused"]["reason"] == "no_store"
    assert SEEN == {}


def test_real_store_faults_are_recorded_not_lost(tmp_path: Path) -> None:
    """A read-only SQLite file refuses the put (served inline, said); a closed store fails
    the get (the refusal names the store, not the ticket)."""
    path = tmp_path / "runs.db"
    writable = SqliteStore(path)
    scope = ArtifactScope("acme", "ana", "c1")
    meta = RunStoreArtifacts(writable).put(
        b"[1]", kind="dataset/rows", media_type="application/json", scope=scope
    )
    writable.close()
    read_only = RunStoreArtifacts(SqliteStore(path, read_only=True))
    agent = agent_with(read_only, [*calls([("load_rows", {"n": 300})]), {"content": "x"}])
    agent.run_sync("go", identity=ANA)
    row = agent.snapshot().state["tool_results"][0]
    assert (
        "place_failed" in row["artifacts"]
        and "StoreError" in row["artifacts"]["place_failed"]["error"]
    )
    assert agent.snapshot().state["history"][2]["content"] == orjson.dumps(ROWS).decode()
    closed_runs = SqliteStore(path)
    closed_runs.close()
    agent = agent_with(
        RunStoreArtifacts(closed_runs), [*calls([("total", {"rows": meta.ref})]), {"content": "x"}]
    )
    agent.run_sync("go", identity=ANA)
    row = agent.snapshot().state["tool_results"][0]
    assert row["artifacts"]["refused"]["reason"] == "store_failed"
    with pg_schema("artfault") as dsn:
        runs = PostgresStore(dsn)
        pg = RunStoreArtifacts(runs)
        kept = pg.put(b"[1]", kind="dataset/rows", media_type="application/json", scope=scope)
        import psycopg

        with psycopg.connect(dsn, autocommit=True) as db:  # the table is gone under the store
            db.execute("ALTER TABLE trackway_artifacts RENAME TO trackway_artifacts_gone")
        agent = agent_with(pg, [*calls([("total", {"rows": kept.ref})]), {"content": "x"}])
        agent.run_sync("go", identity=ANA)
        row = agent.snapshot().state["tool_results"][0]
        assert row["artifacts"]["refused"]["reason"] == "store_failed"
        assert_law(agent)
        runs.close()
