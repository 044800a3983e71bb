"""``to_sse`` and the event hub: every event's id is its place in the record, a reconnect
with ``Last-Event-ID`` gets exactly what it missed (from this process or from the store of
a fresh app), events stream live while a stage runs, redaction holds on the wire, and a
fork's events keep the record's order."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.routing import Mount

from tests.serve.serving_kit import (
    SECRET,
    as_user,
    auth,
    client,
    read_sse,
    served,
    store_at,
    stored_events,
    weather_agent,
)
from trackway import Executor, flow_chart
from trackway.engine import MemoryStore
from trackway.serve import EventHub, RunEnd, run_events, to_sse


def _app(agent: Any, store: Any = None) -> Starlette:
    return Starlette(routes=[Mount("/events", to_sse(agent, auth=auth, store=store))])


def _key(event_id: str) -> tuple[int, int]:
    seq, _, i = event_id.partition(".")
    return int(seq), int(i)


def test_ids_are_record_places_and_strictly_increase(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    agent = weather_agent(store)
    app = _app(agent)
    agent.run_sync("Weather in Oslo?", identity={"tenant": "t1", "principal": "ann"})
    run_id = store.list_runs()[0].run_id
    with (
        served(app) as base,
        client(base, "t1/ann") as http,
        http.stream("GET", f"/events/{run_id}") as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        got = read_sse(response)
    assert got[-1] == {"event": "run.end", "data": {"status": "done"}}
    assert "id" not in got[-1]
    sent = [(e["id"], e["event"], e["data"]) for e in got[:-1]]
    assert sent == stored_events(store, run_id)
    keys = [_key(i) for i, _, _ in sent]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert {"stream.token", "stream.tool_progress", "agent.turn_end"} <= {n for _, n, _ in sent}


def test_live_then_reconnect_gets_exactly_the_missing_events(tmp_path: Path) -> None:
    """A client sees the tool's progress while the tool still runs (sent at once, with
    its final id), drops the connection, and reconnects with Last-Event-ID after the run
    went on: it gets exactly the rest; together they are the stored record."""
    store = store_at(tmp_path)
    gate, reached = threading.Event(), threading.Event()
    agent = weather_agent(store, gate=gate, reached=reached)
    app = _app(agent)
    with served(app) as base:
        runner = threading.Thread(
            target=agent.run_sync,
            args=("Weather in Oslo?",),
            kwargs={"identity": {"tenant": "t1", "principal": "ann"}},
        )
        runner.start()
        assert reached.wait(10)
        run_id = store.list_runs()[0].run_id
        with client(base, "t1/ann") as http:
            with http.stream("GET", f"/events/{run_id}") as response:
                first = read_sse(response, until="stream.tool_progress")
            assert runner.is_alive()  # the tool still waits: that progress came live
            gate.set()
            runner.join(10)
            with http.stream(
                "GET", f"/events/{run_id}", headers={"last-event-id": first[-1]["id"]}
            ) as response:
                rest = read_sse(response)
    assert rest[-1]["event"] == "run.end"
    both = [(e["id"], e["event"], e["data"]) for e in first + rest[:-1]]
    assert both == stored_events(store, run_id)
    assert hub_mismatches(agent) == 0


def hub_mismatches(agent: Any) -> int:
    from trackway.serve import hub_for

    return sum(feed.mismatches for _, feed in hub_for(agent).feeds())


def test_reconnect_after_the_run_from_a_fresh_app_reads_the_store(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    agent = weather_agent(store, check_in=True)
    agent.run_sync("Weather in Oslo?", identity={"tenant": "t1", "principal": "ann"})
    run_id = store.list_runs()[0].run_id
    agent.resume_sync(run_id, "approve", identity={"tenant": "t1", "principal": "ann"})
    record = stored_events(store, run_id)
    fresh = weather_agent(store_at(tmp_path))  # another process, as far as the hub knows
    with served(_app(fresh)) as base, client(base, "t1/ann") as http:
        for cut in range(len(record)):
            headers = {"last-event-id": record[cut][0]}
            with http.stream("GET", f"/events/{run_id}", headers=headers) as response:
                rest = read_sse(response)
            assert [(e["id"], e["event"], e["data"]) for e in rest[:-1]] == record[cut + 1 :]
            assert rest[-1]["data"] == {"status": "done"}


def test_a_paused_run_ends_its_stream_paused_and_resumes_after_the_answer(
    tmp_path: Path,
) -> None:
    store = store_at(tmp_path)
    agent = weather_agent(store, check_in=True)
    app = _app(agent)
    who = {"tenant": "t1", "principal": "ann"}
    agent.run_sync("Weather in Oslo?", identity=who)
    run_id = store.list_runs()[0].run_id
    with served(app) as base, client(base, "t1/ann") as http:
        with http.stream("GET", f"/events/{run_id}") as response:
            paused = read_sse(response)
        assert paused[-1]["data"] == {"status": "paused"}
        assert paused[-2]["event"] == "agent.paused"
        agent.resume_sync(run_id, "approve", identity=who)
        with http.stream(
            "GET", f"/events/{run_id}", headers={"last-event-id": paused[-2]["id"]}
        ) as response:
            rest = read_sse(response)
    assert rest[0]["event"] == "agent.resumed"
    both = [(e["id"], e["event"], e["data"]) for e in paused[:-1] + rest[:-1]]
    assert both == stored_events(store, run_id)


def test_redacted_values_never_reach_the_wire(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    gate, reached = threading.Event(), threading.Event()
    agent = weather_agent(store, redact=True, gate=gate, reached=reached)
    app = _app(agent)
    with served(app) as base, client(base, "t1/ann") as http:
        runner = threading.Thread(
            target=agent.run_sync,
            args=("Weather in Oslo?",),
            kwargs={"identity": {"tenant": "t1", "principal": "ann"}},
        )
        runner.start()
        assert reached.wait(10)
        run_id = store.list_runs()[0].run_id
        with http.stream("GET", f"/events/{run_id}") as response:
            live = b""
            for chunk in response.iter_bytes():
                live += chunk
                if b"stream.tool_progress" in live and live.endswith(b"\n\n"):
                    break
        gate.set()
        runner.join(10)
        with http.stream("GET", f"/events/{run_id}") as response:
            whole = b"".join(response.iter_bytes())
    assert b"stream.tool_progress" in live and b"looking up Oslo" in live
    assert b"stream.tool_progress" in whole
    assert SECRET.encode() not in live and SECRET.encode() not in whole


def test_no_auth_hook_or_another_caller_is_refused(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    agent = weather_agent(store)
    agent.run_sync("Weather in Oslo?", identity={"tenant": "t1", "principal": "ann"})
    run_id = store.list_runs()[0].run_id
    bare = Starlette(routes=[Mount("/events", to_sse(agent, auth=None))])
    with served(bare) as base, client(base, "t1/ann") as http:
        assert http.get(f"/events/{run_id}").status_code == 401
    with served(_app(agent)) as base:
        with client(base) as http:
            assert http.get(f"/events/{run_id}").status_code == 401
        for other in ("t2/ann", "t1/bob"):
            with client(base, other) as http:
                refused = http.get(f"/events/{run_id}")
                assert refused.status_code == 404
                assert b"sunny" not in refused.content
        with client(base, "t1/ann") as http:
            assert http.get("/events/run-nope").status_code == 404
    assert as_user("t1/ann")  # the header the kit's hook reads


# -- a fork: events held until the merge gives their commits a seq ---------------------------

branch_plans = st.lists(
    st.lists(st.floats(min_value=0, max_value=0.004), min_size=0, max_size=3),
    min_size=1,
    max_size=4,
)


def _fork_chart(plans: list[list[float]]) -> Any:
    def stage(name: str, plan: list[float]) -> Any:
        async def run(scope: Any) -> None:
            for n, pause in enumerate(plan):
                scope.emit("x.step", {"branch": name, "n": n})
                await asyncio.sleep(pause)

        return run

    def lead(scope: Any) -> None:
        scope.emit("x.lead", {})

    branches = {f"b{i}": stage(f"b{i}", plan) for i, plan in enumerate(plans)}
    return flow_chart("Lead", lead).fork("Fan", branches).then("Tail", lead).build()


@settings(max_examples=25, deadline=None)
@given(branch_plans)
def test_a_fork_keeps_the_record_order(plans: list[list[float]]) -> None:
    hub = EventHub()
    store = MemoryStore()
    result = asyncio.run(Executor(_fork_chart(plans), recorders=[hub], store=store).run({}))
    record = [
        (f"{c.seq}.{i}", e.name, orjson.loads(e.data))
        for c in result.snapshot.commits
        for i, e in enumerate(c.events)
    ]
    feed = hub.feed(result.run_id)
    assert feed is not None and feed.mismatches == 0
    assert [(s.id, s.name, s.payload) for s in feed.journal] == record

    async def follow() -> list[Any]:
        return [item async for item in run_events(hub, store, result.run_id)]

    items = asyncio.run(follow())
    assert items[-1] == RunEnd("done")
    assert [(s.id, s.name, s.payload) for s in items[:-1]] == record
