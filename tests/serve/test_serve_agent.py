"""``serve_agent``: a conversation started, followed up (also after a restart: a fresh app
on the same store), its events, the caller's runs, a pending question answered, and the
security rules: the auth hook is the only identity, POSTs checked for Origin, no value in
a URL, and no caller reaches another identity's run, across tenants, on any route."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.serve.serving_kit import auth, client, read_sse, served, store_at, weather_agent
from trackway.serve import ServeError, serve_agent


def _wait(http: Any, run_id: str, status: str) -> dict[str, Any]:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        got = http.get(f"/api/runs/{run_id}").json()
        if got["status"] == status:
            return dict(got)
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} never became {status}")


def test_a_conversation_its_events_and_a_follow_up_after_a_restart(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    app = serve_agent(weather_agent(store), auth=auth)
    with served(app) as base, client(base, "t1/ann") as http:
        started = http.post("/api/conversations", json={"message": "Weather in Oslo?"})
        assert started.status_code == 202
        run_id, conversation = started.json()["run_id"], started.json()["conversation_id"]
        with http.stream("GET", f"/api/runs/{run_id}/events") as response:
            events = read_sse(response)
        assert events[-1]["data"] == {"status": "done"}
        assert "stream.tool_progress" in [e["event"] for e in events]
        done = _wait(http, run_id, "done")
        assert done["answer"] == "It is sunny in Oslo."
        assert done["conversation_id"] == conversation
    again = serve_agent(weather_agent(store_at(tmp_path)), auth=auth)  # a restart
    with served(again) as base, client(base, "t1/ann") as http:
        follow = http.post(f"/api/conversations/{conversation}", json={"message": "And now?"})
        assert follow.status_code == 202, follow.text
        second = follow.json()["run_id"]
        assert second != run_id and follow.json()["conversation_id"] == conversation
        _wait(http, second, "done")
        runs = http.get("/api/runs").json()["runs"]
        assert [r["run_id"] for r in runs] == [second, run_id]
        assert {r["conversation_id"] for r in runs} == {conversation}
    history = store.load(second).state["history"]
    said = [m["content"] for m in history if m["role"] in ("user", "assistant") and m["content"]]
    assert said[:3] == ["Weather in Oslo?", "It is sunny in Oslo.", "And now?"]


def test_a_pending_question_is_answered_and_the_run_goes_on(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    app = serve_agent(weather_agent(store, check_in=True), auth=auth)
    with served(app) as base, client(base, "t1/ann") as http:
        run_id = http.post("/api/conversations", json={"message": "Weather?"}).json()["run_id"]
        paused = _wait(http, run_id, "paused")
        assert paused["question"]["kind"] == "check_in"
        question = http.get(f"/api/runs/{run_id}/question").json()
        assert question["call"]["name"] == "weather" and "identity" not in question
        bad = http.post(f"/api/runs/{run_id}/answer", json={"answer": "maybe"})
        assert bad.status_code == 400
        ok = http.post(f"/api/runs/{run_id}/answer", json={"answer": "approve"})
        assert ok.status_code == 202
        assert _wait(http, run_id, "done")["answer"] == "It is sunny in Oslo."
        assert http.get(f"/api/runs/{run_id}/question").status_code == 404
        again = http.post(f"/api/runs/{run_id}/answer", json={"answer": "approve"})
        assert again.status_code == 409


def test_without_an_auth_hook_every_request_is_401(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    app = serve_agent(weather_agent(store), auth=None)
    with served(app) as base, client(base, "t1/ann") as http:
        assert http.post("/api/conversations", json={"message": "hi"}).status_code == 401
        assert http.get("/api/runs").status_code == 401
        assert http.get("/api/runs/x/events").status_code == 401
    assert store.list_runs() == []


def test_the_body_never_names_the_caller(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    app = serve_agent(weather_agent(store), auth=auth)
    with served(app) as base, client(base, "t1/ann") as http:
        for field in ("identity", "tenant", "principal", "conversation_id"):
            body = {"message": "hi", field: "t2"}
            refused = http.post("/api/conversations", json=body)
            assert refused.status_code == 400 and field in refused.json()["error"]
        assert http.post("/api/conversations", json={"text": "hi"}).status_code == 400
    assert store.list_runs() == []


def test_posts_from_another_origin_are_refused(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    app = serve_agent(weather_agent(store), auth=auth, origins=["https://chat.example"])
    with served(app) as base, client(base, "t1/ann") as http:
        port = base.rsplit(":", 1)[1]
        for origin in ("https://evil.example", "null", f"http://localhost:{int(port) + 1}"):
            sent = http.post(
                "/api/conversations", json={"message": "hi"}, headers={"origin": origin}
            )
            assert sent.status_code == 403
        # a page of another name resolving to this machine (DNS rebinding) names itself
        rebound = http.post(
            "/api/conversations",
            json={"message": "hi"},
            headers={"origin": f"http://evil.example:{port}", "host": f"evil.example:{port}"},
        )
        assert rebound.status_code == 403
        assert store.list_runs() == []
        for origin in (base, "https://chat.example"):
            sent = http.post(
                "/api/conversations", json={"message": "hi"}, headers={"origin": origin}
            )
            assert sent.status_code == 202


def test_no_caller_reaches_another_identitys_run(tmp_path: Path) -> None:
    """Two tenants with the same principal name, and two principals of one tenant: every
    route about a run answers 404 (never 403: nothing says it exists) to the others."""
    store = store_at(tmp_path)
    app = serve_agent(weather_agent(store, check_in=True), auth=auth)
    with served(app) as base:
        with client(base, "t1/ann") as owner:
            made = owner.post("/api/conversations", json={"message": "Weather?"}).json()
            run_id, conversation = made["run_id"], made["conversation_id"]
            _wait(owner, run_id, "paused")
        for other in ("t2/ann", "t1/bob"):
            with client(base, other) as http:
                assert http.get(f"/api/runs/{run_id}").status_code == 404
                assert http.get(f"/api/runs/{run_id}/events").status_code == 404
                assert http.get(f"/api/runs/{run_id}/question").status_code == 404
                answer = http.post(f"/api/runs/{run_id}/answer", json={"answer": "approve"})
                assert answer.status_code == 404
                assert http.post(f"/api/runs/{run_id}/retry", json={}).status_code == 404
                follow = http.post(f"/api/conversations/{conversation}", json={"message": "x"})
                assert follow.status_code == 404
                assert http.get("/api/runs").json() == {"runs": []}
        with client(base, "t1/ann") as owner:
            assert owner.get(f"/api/runs/{run_id}").json()["status"] == "paused"
            assert [r["run_id"] for r in owner.get("/api/runs").json()["runs"]] == [run_id]


def test_no_value_in_a_url(tmp_path: Path) -> None:
    """Messages and answers travel in bodies: a route given one in the query string does
    not take it."""
    store = store_at(tmp_path)
    app = serve_agent(weather_agent(store), auth=auth)
    with served(app) as base, client(base, "t1/ann") as http:
        assert http.post("/api/conversations?message=hi").status_code == 400
    assert store.list_runs() == []
    paths = [r.path for r in app.routes]  # type: ignore[attr-defined]
    assert all("{message" not in p and "{answer" not in p for p in paths)


def test_serve_agent_needs_a_store(tmp_path: Path) -> None:
    from trackway.agent import Agent, mock

    agent = Agent.create(provider=mock(reply={"content": "x"}), model="m").build()
    with pytest.raises(ServeError, match="needs a store"):
        serve_agent(agent, auth=auth)


def test_a_run_a_provider_failure_ended_is_retried(tmp_path: Path) -> None:
    from trackway.agent import Agent, ProviderConnectionError, mock

    calls: list[int] = []

    def respond(request: Any) -> dict[str, Any]:
        calls.append(1)
        if len(calls) == 1:
            raise ProviderConnectionError("the model server is down")
        return {"content": "Back again."}

    store = store_at(tmp_path)
    agent = Agent.create(provider=mock(respond=respond), model="m", store=store).build()
    app = serve_agent(agent, auth=auth)
    with served(app) as base, client(base, "t1/ann") as http:
        made = http.post("/api/conversations", json={"message": "Hello?"}).json()
        failed = _wait(http, made["run_id"], "failed")
        assert "the model server is down" in failed["error"]["message"]
        retried = http.post(f"/api/runs/{made['run_id']}/retry", json={})
        assert retried.status_code == 202, retried.text
        again = retried.json()
        assert again["run_id"] != made["run_id"]
        assert again["conversation_id"] == made["conversation_id"]
        assert _wait(http, again["run_id"], "done")["answer"] == "Back again."
        not_failed = http.post(f"/api/runs/{again['run_id']}/retry", json={})
        assert not_failed.status_code == 409
    history = store.load(again["run_id"]).state["history"]
    assert [m["content"] for m in history if m["role"] == "user"] == ["Hello?"]


def test_status_events_word_the_line_in_the_agents_voice(tmp_path: Path) -> None:
    """Each event that moves the status line is followed by a ``status`` event (no id: it
    is derived, the record is not changed) worded by the agent's templates and app name."""
    store = store_at(tmp_path)
    voice = {"tool.weather.progress": "{app}: {message}", "thinking": "{app} is thinking"}
    app = serve_agent(weather_agent(store, voice=voice), auth=auth)
    with served(app) as base, client(base, "t1/ann") as http:
        run_id = http.post("/api/conversations", json={"message": "Oslo?"}).json()["run_id"]
        with http.stream("GET", f"/api/runs/{run_id}/events") as response:
            events = read_sse(response)
    lines = [(e["data"]["key"], e["data"]["text"]) for e in events if e["event"] == "status"]
    assert lines == [
        ("thinking", "Forecaster is thinking"),
        ("tool", "Running weather…"),
        ("tool.weather.progress", "Forecaster: looking up Oslo"),
        ("thinking", "Forecaster is thinking"),
    ]
    assert all("id" not in e for e in events if e["event"] == "status")
    recorded = [e.name for c in store.load(run_id).commits for e in c.events]
    assert "status" not in recorded
    after = [events[i - 1]["event"] for i, e in enumerate(events) if e["event"] == "status"]
    assert after == [
        "stream.llm_start",
        "stream.tool_start",
        "stream.tool_progress",
        "stream.llm_start",
    ]
