"""An agent hosted over A2A, driven by the a2a-sdk's own client against a real uvicorn server
on 127.0.0.1 and a SQLite store file: the card, send, stream, a follow-up in one context,
a question answered over input-required, tenancy, refused callers and failures."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from a2a.client import A2ACardResolver, A2AClientError, Client, ClientConfig, create_client
from a2a.helpers import new_data_message, new_text_message
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)
from google.protobuf.json_format import MessageToDict
from starlette.applications import Starlette
from starlette.requests import HTTPConnection
from starlette.routing import Mount

from trackway import tool
from trackway.agent import Agent, mock
from trackway.engine import ConfigurationError, RedactionPolicy, SqliteStore
from trackway.serve.a2a import RUN_ID_KEY, a2a_app, a2a_routes, agent_card, status_line
from trackway.tools import Identity, ToolContext, ask_human, request_input

PEOPLE = {
    "alice": Identity(tenant="acme", principal="alice"),
    "bob": Identity(tenant="globex", principal="bob"),
}


def auth(request: HTTPConnection) -> Identity | None:
    token = request.headers.get("authorization", "").removeprefix("Bearer ")
    return PEOPLE.get(token)


@tool
def weather(city: str, ctx: ToolContext) -> str:
    """The weather in a city today."""
    ctx.progress({"message": f"looking {city} up " + "x" * 200})
    return f"sunny in {city}"


def build(replies: list[Any], **options: Any) -> Agent:
    return (
        Agent.create(provider=mock(replies=replies), model="m", **options)
        .tool(weather)
        .tool(ask_human())
        .build()
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(app_for: Callable[[str], Starlette], path: str = "/") -> Iterator[str]:
    """The app (made for its own URL) under uvicorn on 127.0.0.1 until the block ends."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}{path}"
    server = uvicorn.Server(
        uvicorn.Config(app_for(url), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=20)


@contextmanager
def hosted(agent: Agent, store: SqliteStore) -> Iterator[str]:
    with serving(lambda url: a2a_app(agent, store=store, auth=auth, url=url)) as url:
        yield url


def talk(url: str, who: str | None, scenario: Callable[[Client], Awaitable[Any]]) -> Any:
    """Run ``scenario`` with the SDK's client, as ``who`` (a bearer token, or nobody)."""

    async def main() -> Any:
        headers = {} if who is None else {"authorization": f"Bearer {who}"}
        async with httpx.AsyncClient(headers=headers, timeout=30) as http:
            card = await A2ACardResolver(http, url).get_agent_card()
            client = await create_client(card, client_config=ClientConfig(httpx_client=http))
            async with client:
                return await scenario(client)

    return asyncio.run(main())


def said(text: str, task: Task | None = None, context_id: str | None = None) -> SendMessageRequest:
    message = new_text_message(
        text,
        role=Role.ROLE_USER,
        task_id=task.id if task is not None else None,
        context_id=context_id if context_id is not None else (task and task.context_id),
    )
    return SendMessageRequest(message=message)


async def events_of(client: Client, request: SendMessageRequest) -> list[StreamResponse]:
    return [event async for event in client.send_message(request)]


def final_task(events: list[StreamResponse]) -> Task:
    """The task the stream ended with, folded as a client would (first Task, then updates)."""
    task = Task()
    for event in events:
        if event.HasField("task"):
            task.CopyFrom(event.task)
        elif event.HasField("status_update"):
            task.status.CopyFrom(event.status_update.status)
            task.metadata.MergeFrom(event.status_update.metadata)
        elif event.HasField("artifact_update"):
            task.artifacts.append(event.artifact_update.artifact)
    return task


def text_of(task: Task) -> str:
    return task.status.message.parts[0].text


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    s = SqliteStore(str(tmp_path / "runs.db"))
    yield s
    s.close()


CALL_WEATHER = {"tool_calls": [{"id": "c1", "name": "weather", "args": {"city": "Paris"}}]}
ASK_UNIT = {"tool_calls": [{"id": "c2", "name": "ask_human", "args": {"question": "Which unit?"}}]}


def test_the_card_names_the_agent_its_tools_as_skills_and_streaming(store: SqliteStore) -> None:
    agent = build([{"content": "hi"}])
    with hosted(agent, store) as url:

        async def fetch() -> Any:
            async with httpx.AsyncClient(timeout=30) as http:
                return await A2ACardResolver(http, url).get_agent_card()

        card = asyncio.run(fetch())
    # fetched without credentials: discovery is public, the endpoint is not
    assert card.name == "agent"
    assert {s.id: s.description for s in card.skills} == {
        "weather": "The weather in a city today.",
        "ask_human": agent._cfg.tools["ask_human"].description,
    }
    assert card.capabilities.streaming
    assert card.supported_interfaces[0].url == url
    assert agent_card(agent, url=url) == card


def test_send_runs_a_turn_in_the_store_for_the_callers_identity(store: SqliteStore) -> None:
    agent = build([CALL_WEATHER, {"content": "It is sunny in Paris."}])
    with hosted(agent, store) as url:

        async def send(client: Client) -> list[StreamResponse]:
            client._config.streaming = False  # message/send, not the stream
            return await events_of(client, said("Weather in Paris?"))

        (response,) = talk(url, "alice", send)
    task = response.task
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert text_of(task) == "It is sunny in Paris."
    assert [a.parts[0].text for a in task.artifacts] == ["It is sunny in Paris."]
    run_id = MessageToDict(task.metadata)[RUN_ID_KEY]
    snapshot = store.load(run_id)
    assert snapshot.status == "done"
    assert snapshot.state["final_answer"] == "It is sunny in Paris."
    # the identity is the auth hook's, the conversation the A2A context
    assert dict(snapshot.state["identity"]) == {
        "tenant": "acme",
        "principal": "alice",
        "conversation_id": task.context_id,
    }


def test_stream_sends_tool_progress_as_working_status_then_the_answer(
    store: SqliteStore,
) -> None:
    agent = build([CALL_WEATHER, {"content": "It is sunny in Paris."}])
    with hosted(agent, store) as url:
        events = talk(url, "alice", lambda client: events_of(client, said("Weather?")))
    kinds = [e.WhichOneof("payload") for e in events]
    assert kinds[0] == "task" and kinds[-2:] == ["artifact_update", "status_update"]
    states = [e.status_update.status.state for e in events if e.HasField("status_update")]
    assert states[0] == TaskState.TASK_STATE_WORKING
    assert states[-1] == TaskState.TASK_STATE_COMPLETED
    lines = [
        e.status_update.status.message.parts[0].text
        for e in events
        if e.HasField("status_update") and e.status_update.status.message.parts
    ]
    long = "looking Paris up " + "x" * 200
    assert lines == [
        "Calling weather",
        f"weather: {long[:120]}… (+{len(long) - 120} more)",
        "weather finished (success)",
        "It is sunny in Paris.",
    ]
    run_ids = {
        MessageToDict(e.status_update.metadata)[RUN_ID_KEY]
        for e in events
        if e.HasField("status_update")
    }
    assert len(run_ids) == 1
    (run_id,) = run_ids
    assert store.load(run_id).state["final_answer"] == "It is sunny in Paris."
    assert events[-2].artifact_update.artifact.parts[0].text == "It is sunny in Paris."


def test_a_follow_up_in_the_context_continues_its_conversation(store: SqliteStore) -> None:
    agent = build([{"content": "Paris is sunny."}, {"content": "Tomorrow too."}])
    with hosted(agent, store) as url:

        async def two_turns(client: Client) -> tuple[Task, Task]:
            first = final_task(await events_of(client, said("Weather in Paris?")))
            request = said("And tomorrow?", context_id=first.context_id)
            second = final_task(await events_of(client, request))
            return first, second

        first, second = talk(url, "alice", two_turns)
    assert first.id != second.id and first.context_id == second.context_id
    run = store.load(MessageToDict(second.metadata)[RUN_ID_KEY]).state
    assert [(m["role"], m["content"]) for m in run["history"]] == [
        ("user", "Weather in Paris?"),
        ("assistant", "Paris is sunny."),
        ("user", "And tomorrow?"),
    ]
    assert MessageToDict(first.metadata)[RUN_ID_KEY] != MessageToDict(second.metadata)[RUN_ID_KEY]


def test_a_question_is_input_required_and_the_next_message_answers_it(
    store: SqliteStore,
) -> None:
    agent = build([ASK_UNIT, {"content": "22 degrees Celsius."}])
    with hosted(agent, store) as url:

        async def asked_and_answered(client: Client) -> tuple[Task, list[StreamResponse]]:
            asked = final_task(await events_of(client, said("How warm is it?")))
            return asked, await events_of(client, said("Celsius", task=asked))

        asked, answered = talk(url, "alice", asked_and_answered)
    assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert text_of(asked) == "Which unit?"
    assert MessageToDict(asked.status.message.metadata)["kind"] == "ask_human"
    run_id = MessageToDict(asked.metadata)[RUN_ID_KEY]
    done = final_task(answered)
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert text_of(done) == "22 degrees Celsius."
    assert MessageToDict(done.metadata)[RUN_ID_KEY] == run_id  # the same run, resumed
    state = store.load(run_id).state
    assert [m["content"] for m in state["history"] if m["role"] == "tool"] == ["Celsius"]
    assert store.load(run_id).status == "done"


def test_a_caller_cannot_read_or_continue_another_identitys_task(store: SqliteStore) -> None:
    agent = build([ASK_UNIT, {"content": "Bob's own answer."}, {"content": "22 degrees."}])
    with hosted(agent, store) as url:
        asked = talk(url, "alice", lambda c: events_of(c, said("How warm is it?")))
        alices = final_task(asked)

        async def intrude(client: Client) -> list[str]:
            refused = []
            for attempt in (
                client.get_task(GetTaskRequest(id=alices.id)),
                events_of(client, said("Fahrenheit", task=alices)),
            ):
                with pytest.raises(Exception) as caught:
                    await attempt
                refused.append(type(caught.value).__name__)
            # alice's context id names a conversation of alice's, not bob's
            own = final_task(await events_of(client, said("Hi", context_id=alices.context_id)))
            return [*refused, own.status.message.parts[0].text]

        assert talk(url, "bob", intrude) == [
            "TaskNotFoundError",
            "TaskNotFoundError",
            "Bob's own answer.",
        ]
        # alice's question still waits for alice, and her answer resumes it
        after = talk(url, "alice", lambda c: c.get_task(GetTaskRequest(id=alices.id)))
        assert after.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        done = final_task(talk(url, "alice", lambda c: events_of(c, said("C", task=alices))))
    assert text_of(done) == "22 degrees."
    bobs_runs = [
        store.load(r.run_id).state
        for r in store.list_runs()
        if store.load(r.run_id).state["identity"]["principal"] == "bob"
    ]
    # bob's turn saw none of alice's conversation
    assert [[m["content"] for m in s["history"]] for s in bobs_runs] == [["Hi"]]
    assert [s["final_answer"] for s in bobs_runs] == ["Bob's own answer."]


def test_a_caller_the_auth_hook_refuses_gets_401_and_runs_nothing(store: SqliteStore) -> None:
    agent = build([{"content": "never"}])
    with hosted(agent, store) as url:
        for who in (None, "mallory"):
            with pytest.raises(A2AClientError, match="401"):
                talk(url, who, lambda c: events_of(c, said("Hi")))
        no_hook = serving(lambda u: a2a_app(agent, store=store, auth=None, url=u))
        with no_hook as open_url, pytest.raises(A2AClientError, match="401"):
            talk(open_url, "alice", lambda c: events_of(c, said("Hi")))
        post = httpx.post(
            url,
            json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}},
            headers={"authorization": "Bearer alice", "origin": "https://evil.example"},
        )
    assert post.status_code == 403
    assert store.list_runs() == []


def test_a_failed_turn_is_failed_with_the_error_text_the_store_kept(store: SqliteStore) -> None:
    def broken(request: Any) -> Any:
        raise RuntimeError("upstream said: key sk-live-123 is invalid")

    plain = Agent.create(provider=mock(respond=broken), model="m").build()
    hidden = Agent.create(
        provider=mock(respond=broken), model="m", redact=RedactionPolicy(errors=True)
    ).build()
    texts = []
    for agent in (plain, hidden):
        with hosted(agent, store) as url:
            failed = final_task(talk(url, "alice", lambda c: events_of(c, said("Hi"))))
        assert failed.status.state == TaskState.TASK_STATE_FAILED
        assert store.load(MessageToDict(failed.metadata)[RUN_ID_KEY]).status == "failed"
        texts.append(text_of(failed))
    assert texts[0] == (
        "StageError: stage 'Call LLM' (call-llm#1) raised RuntimeError: upstream said: key "
        "sk-live-123 is invalid"
    )
    assert "sk-live-123" not in texts[1] and "[REDACTED]" in texts[1]


def test_routes_mount_under_a_prefix(store: SqliteStore) -> None:
    agent = build([{"content": "Mounted."}])

    def app_for(url: str) -> Starlette:
        routes = a2a_routes(agent, store=store, auth=auth, url=url)
        return Starlette(routes=[Mount("/agents/weather", routes=routes)])

    with serving(app_for, path="/agents/weather/") as url:
        done = final_task(talk(url, "alice", lambda c: events_of(c, said("Hi"))))
    assert text_of(done) == "Mounted."


def test_status_lines_of_events_that_say_nothing_are_none() -> None:
    from trackway.engine import EmitEvent

    def event(name: str, payload: Any) -> EmitEvent:
        return EmitEvent("r", "tool-calls#4", 1, name, payload)

    assert status_line(event("stream.token", {"text": "x"})) is None
    assert status_line(event("stream.tool_progress", {"name": "t", "payload": 7})) == (
        "t is working"
    )
    assert status_line(event("stream.tool_progress", {"name": "t", "payload": "half"})) == (
        "t: half"
    )


def test_an_answer_the_question_cannot_take_asks_it_again(store: SqliteStore) -> None:
    agent = (
        Agent.create(provider=mock(replies=[CALL_WEATHER, {"content": "Sunny."}]), model="m")
        .tool(weather)
        .check_in(["weather"], question="Look the weather up?")
        .build()
    )
    with hosted(agent, store) as url:

        async def answers(client: Client) -> list[Task]:
            asked = final_task(await events_of(client, said("Weather?")))
            maybe = final_task(await events_of(client, said("maybe", task=asked)))
            done = final_task(await events_of(client, said("approve", task=asked)))
            return [asked, maybe, done]

        asked, maybe, done = talk(url, "alice", answers)
    assert asked.status.state == maybe.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert text_of(asked) == text_of(maybe) == "Look the weather up?"
    why = MessageToDict(maybe.status.message.metadata)
    assert why["kind"] == "check_in" and "approve" in why["refused"]
    assert done.status.state == TaskState.TASK_STATE_COMPLETED and text_of(done) == "Sunny."
    state = store.load(MessageToDict(done.metadata)[RUN_ID_KEY]).state
    assert [m["content"] for m in state["history"] if m["role"] == "tool"] == ["sunny in Paris"]


def test_cancel_ends_the_turn_and_the_task_is_canceled(store: SqliteStore) -> None:
    @tool
    async def slow(ctx: ToolContext) -> str:
        """Takes its time."""
        await asyncio.sleep(30)
        return "never"

    agent = (
        Agent.create(
            provider=mock(replies=[{"tool_calls": [{"id": "s", "name": "slow", "args": {}}]}]),
            model="m",
        )
        .tool(slow)
        .build()
    )
    with hosted(agent, store) as url:

        async def cancel_midway(client: Client) -> tuple[Task, Task, list[Task]]:
            events = client.send_message(said("Go slowly"))
            first = await anext(events)  # the task, submitted
            async for event in events:  # until the tool runs
                if event.status_update.status.message.parts[:1] == [Part(text="Calling slow")]:
                    break
            canceled = await client.cancel_task(CancelTaskRequest(id=first.task.id))
            await events.aclose()
            got = await client.get_task(GetTaskRequest(id=first.task.id))
            listed = await client.list_tasks(ListTasksRequest())
            return canceled, got, list(listed.tasks)

        canceled, got, listed = talk(url, "alice", cancel_midway)
        bobs = talk(url, "bob", lambda c: c.list_tasks(ListTasksRequest()))
    assert canceled.status.state == got.status.state == TaskState.TASK_STATE_CANCELED
    assert [t.id for t in listed] == [got.id]
    assert list(bobs.tasks) == []  # tasks are listed per identity
    (run,) = store.list_runs()
    # the turn was cancelled with the task, and its run says so
    assert run.status == "failed"
    assert store.load(run.run_id).error.type == "Cancelled"


def test_a_data_part_answers_a_request_for_input(store: SqliteStore) -> None:
    form = request_input(
        schema={
            "type": "object",
            "properties": {"days": {"type": "integer"}},
            "required": ["days"],
        },
        question="How many days?",
    )
    ask = {"tool_calls": [{"id": "f", "name": "request_input", "args": {}}]}
    agent = (
        Agent.create(provider=mock(replies=[ask, {"content": "Booked."}]), model="m")
        .tool(form)
        .build()
    )
    with hosted(agent, store) as url:

        async def fill_in(client: Client) -> tuple[Task, Task]:
            asked = final_task(await events_of(client, said("Book a trip")))
            answer = new_data_message(
                {"days": 3}, role=Role.ROLE_USER, task_id=asked.id, context_id=asked.context_id
            )
            done = final_task(await events_of(client, SendMessageRequest(message=answer)))
            return asked, done

        asked, done = talk(url, "alice", fill_in)
    assert MessageToDict(asked.status.message.metadata)["schema"]["required"] == ["days"]
    assert text_of(done) == "Booked."
    state = store.load(MessageToDict(done.metadata)[RUN_ID_KEY]).state
    (result,) = [m["content"] for m in state["history"] if m["role"] == "tool"]
    assert json.loads(result) == {"days": 3}
    assert type(json.loads(result)["days"]) is int  # not the 3.0 a protobuf Value carries


def test_a2a_0_3_clients_use_message_send_and_message_stream(store: SqliteStore) -> None:
    """The 0.3 method names on the same endpoint (the card lists both versions), behind
    the same auth hook."""
    agent = build([CALL_WEATHER, {"content": "Sunny."}, {"content": "Again sunny."}])

    def rpc(method: str, text: str, context_id: str | None = None) -> dict[str, Any]:
        message = {"kind": "message", "role": "user", "messageId": text, "parts": []}
        message["parts"] = [{"kind": "text", "text": text}]
        if context_id is not None:
            message["contextId"] = context_id
        return {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"message": message}}

    with hosted(agent, store) as url:
        card = httpx.get(f"{url}.well-known/agent-card.json").json()
        alice = {"authorization": "Bearer alice"}
        refused = httpx.post(url, json=rpc("message/send", "Hi"), timeout=30)
        sent = httpx.post(url, json=rpc("message/send", "Weather?"), headers=alice, timeout=30)
        task = sent.json()["result"]
        request = rpc("message/stream", "Again?", task["contextId"])
        with httpx.stream("POST", url, json=request, headers=alice, timeout=30) as streamed:
            results = [
                json.loads(line.removeprefix("data:"))["result"]
                for line in streamed.iter_lines()
                if line.startswith("data:")
            ]
    assert (card["protocolVersion"], card["url"]) == ("0.3", url)
    assert refused.status_code == 401
    assert task["status"]["state"] == "completed"
    assert task["artifacts"][0]["parts"] == [{"kind": "text", "text": "Sunny."}]
    kinds = [r["kind"] for r in results]
    assert kinds[0] == "task" and kinds[-2:] == ["artifact-update", "status-update"]
    assert results[-1]["final"] is True and results[-1]["status"]["state"] == "completed"
    run = store.load(results[-1]["metadata"][RUN_ID_KEY]).state
    assert run["history"][0]["content"] == "Weather?"  # the context goes on


def test_a_waiting_task_let_go_from_memory_is_still_answered(store: SqliteStore) -> None:
    agent = build([ASK_UNIT, {"content": "22 degrees Celsius."}])

    def app_for(url: str) -> Starlette:
        return a2a_app(agent, store=store, auth=auth, url=url, release_waiting_after=0.05)

    with serving(app_for) as url:

        async def answer_late(client: Client) -> Task:
            asked = final_task(await events_of(client, said("How warm is it?")))
            await asyncio.sleep(0.5)  # the SDK releases the waiting task meanwhile
            return final_task(await events_of(client, said("Celsius", task=asked)))

        done = talk(url, "alice", answer_late)
    assert text_of(done) == "22 degrees Celsius."
    assert store.load(MessageToDict(done.metadata)[RUN_ID_KEY]).status == "done"


def test_status_lines_are_what_the_agents_redaction_leaves(store: SqliteStore) -> None:
    policy = RedactionPolicy(emit_fields={"stream.tool_progress": ["payload.message"]})
    agent = build([CALL_WEATHER, {"content": "Sunny."}], redact=policy)
    with hosted(agent, store) as url:
        events = talk(url, "alice", lambda client: events_of(client, said("Weather?")))
    lines = [
        e.status_update.status.message.parts[0].text
        for e in events
        if e.HasField("status_update") and e.status_update.status.message.parts
    ]
    assert lines[:2] == ["Calling weather", "weather: [REDACTED]"]
    assert not any("looking" in line for line in lines)


def test_the_host_binds_an_agent_without_a_store_and_refuses_another_store(
    store: SqliteStore, tmp_path: Path
) -> None:
    url = "http://127.0.0.1:1/"
    own = a2a_routes(build([{"content": "x"}], store=store), store=store, auth=auth, url=url)
    assert [r.path for r in own] == ["/.well-known/agent-card.json", "/"]  # type: ignore[attr-defined]
    other = SqliteStore(str(tmp_path / "other.db"))
    try:
        with pytest.raises(ConfigurationError, match="keeps its runs in"):
            a2a_routes(build([{"content": "x"}], store=other), store=store, auth=auth, url=url)
    finally:
        other.close()


def test_cancel_of_a_waiting_task_ends_the_task_and_leaves_the_run_paused(
    store: SqliteStore,
) -> None:
    agent = build([ASK_UNIT, {"content": "never"}])
    with hosted(agent, store) as url:

        async def cancel_waiting(client: Client) -> Task:
            asked = final_task(await events_of(client, said("How warm is it?")))
            return await client.cancel_task(CancelTaskRequest(id=asked.id))

        canceled = talk(url, "alice", cancel_waiting)
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    assert [r.status for r in store.list_runs()] == ["paused"]


def test_serve_agent_hosts_a2a_beside_its_own_routes(store: SqliteStore) -> None:
    from trackway.serve import serve_agent

    agent = build([{"content": "Served twice."}, {"content": "And over HTTP."}])

    def app_for(url: str) -> Starlette:
        return serve_agent(agent, auth=auth, store=store, a2a_url=url)

    with serving(app_for, path="/a2a/") as url:
        done = final_task(talk(url, "alice", lambda c: events_of(c, said("Hi"))))
        run_id = MessageToDict(done.metadata)[RUN_ID_KEY]
        root = url.removesuffix("a2a/")
        with httpx.Client(headers={"authorization": "Bearer alice"}, timeout=30) as http:
            listed = http.get(root + "api/runs").json()["runs"]
            assert http.get(root + "a2a/").status_code == 405  # the JSON-RPC door takes POSTs
    assert text_of(done) == "Served twice."
    assert run_id in [r["run_id"] for r in listed]  # the same store, the same caller
