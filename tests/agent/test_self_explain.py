"""Self-explanation (``.self_explain()``): the model asks read-only trace tools why it did
what it did in its last completed run of the conversation, and reads that run's record;
before a run has completed the tools say so; evidence binds at the end of a run, per
conversation, in this process and in a store; the answers are ordinary tool results,
rebuilt by ``served_at`` and replayed from the recording alone."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.examples import examples
from tests.law import assert_law
from tests.pg import pg_schema
from trackway.agent import (
    NO_COMPLETED_RUN,
    TRACE_TOOLS,
    Agent,
    AgentBuildError,
    InvalidRunInputError,
    ProviderConnectionError,
    conversation_redaction,
    define_skill,
    is_paused,
    load_recording,
    mock,
    replay,
    save_recording,
    served_at,
)
from trackway.agent.explain._fit import fitted
from trackway.engine import (
    MemoryStore,
    PostgresStore,
    RunStore,
    Snapshot,
    SqliteStore,
    causal_chain,
    thaw,
)
from trackway.tools import define_tool

FIXTURE = Path(__file__).parent / "fixtures" / "recording-explain-v1.jsonl"

WEATHER = define_tool(
    name="weather",
    description="Current weather for a city.",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
    execute=lambda args, ctx: f"{args['city']}: sunny, 22°C",
)


def call(cid: str, name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"tool_calls": [{"id": cid, "name": name, "args": args or {}}]}


ASK_ALL = {
    "tool_calls": [
        {"id": "t1", "name": "trace_outline", "args": {}},
        {"id": "t2", "name": "trace_model_calls", "args": {}},
        {"id": "t3", "name": "trace_tool_calls", "args": {}},
        {"id": "t4", "name": "trace_why", "args": {"key": "final_answer"}},
        {"id": "t5", "name": "trace_commit", "args": {"seq": 6}},
    ]
}


def results(agent: Agent) -> dict[str, str]:
    """What the model read back in the last run, by tool call id (real values, also when
    the record keeps a redaction policy's placeholder)."""
    history = thaw(agent._state()["history"])
    return {m["tool_call_id"]: m["content"] for m in history if m["role"] == "tool"}


def explaining(provider: Any, **create: Any) -> Agent:
    return Agent.create(provider=provider, model="m", **create).tool(WEATHER).self_explain().build()


def conversational() -> Any:
    """A model that answers a plain message, and asks trace_outline on "why" (then answers
    "explained")."""

    def respond(request: Any) -> Any:
        last = request.messages[-1]
        if last.role == "tool":
            return "explained"
        if last.content.startswith("why"):
            return call("t1", "trace_outline")
        return f"answer to {last.content}"

    return mock(respond=respond)


def outline_read(agent: Agent) -> dict[str, Any] | str:
    text = results(agent)["t1"]
    return text if text.startswith(("No ", "The ")) else json.loads(text)


# -- the model reads its last completed run ----------------------------------------------------


def test_the_trace_tools_answer_from_the_previous_runs_record() -> None:
    provider = mock(
        replies=[call("c1", "weather", {"city": "Paris"}), "Sunny in Paris.", ASK_ALL, "Why: X."]
    )
    agent = explaining(provider)
    agent.run_sync("Weather in Paris?", session_id="s1")
    first = agent.snapshot()
    agent.run_sync("Why did you say that?", session_id="s1")
    got = {k: json.loads(v) for k, v in results(agent).items()}

    outline = got["t1"]
    assert outline["run"] == {
        "run_id": first.run_id,
        "status": "done",
        "message": "Weather in Paris?",
        "answer": "Sunny in Paris.",
        "model_calls": 2,
        "tool_calls": 1,
    }
    assert [(s["seq"], s["stage"]) for s in outline["steps"]] == [
        (c.seq, c.stage_path) for c in first.history()
    ]
    assert [s["chose"] for s in outline["steps"] if "chose" in s] == ["tool-calls", "final"]
    assert [s["results"] for s in outline["steps"] if "results" in s] == [["weather c1: success"]]

    answers = [thaw(op.value) for c in first.history() if c.stage_id == "call-llm" for op in c.ops]
    answers = [a for a in answers if isinstance(a, dict) and "content" in a]
    model = got["t2"]["calls"]
    assert (
        [m["content"] for m in model] == [a["content"] for a in answers] == ["", "Sunny in Paris."]
    )
    assert model[0]["tool_calls"] == [{"id": "c1", "name": "weather", "args": {"city": "Paris"}}]
    assert [m["seq"] for m in model] == [4, 7]

    row = thaw(first.state["tool_results"][0])
    assert got["t3"]["calls"] == [
        {"call": 1, **row, "args": {"city": "Paris"}, "result": "Paris: sunny, 22°C"}
    ]
    assert got["t4"]["value"] == "Sunny in Paris."
    assert got["t4"]["chain"] == causal_chain(first, "final_answer").render().splitlines()

    step = first.commits[5]
    assert (got["t5"]["seq"], got["t5"]["stage"]) == (6, step.stage_path)
    assert got["t5"]["writes"] == [
        {"op": op.kind, "key": op.key, "value": thaw(op.value)} for op in step.ops
    ]
    assert got["t5"]["reads"] == list(step.reads)

    now = agent.snapshot()
    assert all(v["run"]["run_id"] == first.run_id != now.run_id for v in got.values())
    assert [r["status"] for r in now.state["tool_results"]] == ["success"] * 5
    assert "truncated" not in results(agent)["t1"]  # it all fit: nothing said cut
    # the guide follows nothing (no system prompt of the author's) and names every tool
    system = served_at(agent, 1).system or ""
    assert system.startswith("## Explaining your last run") and NO_COMPLETED_RUN in system
    assert all(name in system for name in TRACE_TOOLS)
    assert [t.name for t in served_at(agent, 1).tools or ()] == ["weather", *TRACE_TOOLS]


def test_unknown_keys_and_steps_are_answered_with_what_there_is() -> None:
    asks = {
        "tool_calls": [
            {"id": "t1", "name": "trace_why", "args": {"key": "nope"}},
            {"id": "t2", "name": "trace_commit", "args": {"seq": 99}},
            {"id": "t3", "name": "trace_model_calls", "args": {"from": 2}},
        ]
    }
    agent = explaining(mock(replies=["first", asks, "done"]))
    agent.run_sync("one")
    first = agent.snapshot()
    agent.run_sync("why")
    got = {k: json.loads(v) for k, v in results(agent).items()}
    assert got["t1"]["found"] is False and got["t1"]["keys"] == sorted(first.state)
    assert got["t2"] == {
        "run": {"run_id": first.run_id, "status": "done"},
        "seq": 99,
        "found": False,
        "commits": len(first),
    }
    assert got["t3"]["calls"] == []  # one call: from 2 there are none


def test_before_a_completed_run_every_trace_tool_says_so_as_a_result() -> None:
    agent = explaining(mock(replies=[ASK_ALL, "Nothing to explain yet."]))
    assert agent.can_explain() is False
    agent.run_sync("Why did you say that?", session_id="s1")
    assert list(results(agent).values()) == [NO_COMPLETED_RUN] * 5
    assert [r["status"] for r in agent.snapshot().state["tool_results"]] == ["success"] * 5
    assert agent.can_explain() is True  # that run has completed now
    assert agent.can_explain(session_id="s2") is False


# -- per conversation ---------------------------------------------------------------------------


def test_each_conversation_reads_its_own_last_run_interleaved() -> None:
    agent = explaining(conversational())
    agent.run_sync("one", session_id="s1")
    ran = {"s1": agent.snapshot().run_id}
    agent.run_sync("two", session_id="s2")
    ran["s2"] = agent.snapshot().run_id
    agent.run_sync("three", session_id="s1")
    ran["s1"] = agent.snapshot().run_id
    for session, message in (("s2", "two"), ("s1", "three")):
        agent.run_sync("why?", session_id=session)
        read = outline_read(agent)
        assert isinstance(read, dict)
        assert (read["run"]["run_id"], read["run"]["message"]) == (ran[session], message)
    # the why-run of s1 is its last completed run now; s2's is still its own
    agent.run_sync("why again", session_id="s2")
    read = outline_read(agent)
    assert isinstance(read, dict) and read["run"]["message"] == "why?"
    agent.run_sync("why?", session_id="s3")
    assert outline_read(agent) == NO_COMPLETED_RUN
    assert agent.can_explain(session_id="s1") and not agent.can_explain(session_id="s4")


def test_the_conversation_is_the_identitys_without_a_session_and_never_crosses_callers() -> None:
    agent = explaining(conversational())
    acme = {"tenant": "acme", "conversation_id": "c1"}
    agent.run_sync("acme one", identity=acme)
    agent.run_sync("other one", identity={"tenant": "other", "conversation_id": "c1"})
    agent.run_sync("anonymous one")
    agent.run_sync("why?", identity=acme)
    read = outline_read(agent)
    assert isinstance(read, dict) and read["run"]["message"] == "acme one"
    # the same session id under another tenant is another conversation
    agent.run_sync("why?", identity={"tenant": "third"}, session_id="c1")
    assert outline_read(agent) == NO_COMPLETED_RUN
    # without a session or a conversation id: the caller's unnamed conversation
    agent.run_sync("why?")
    read = outline_read(agent)
    assert isinstance(read, dict) and read["run"]["message"] == "anonymous one"
    agent.run_sync("why?", identity={"tenant": "acme"})  # acme named no conversation
    assert outline_read(agent) == NO_COMPLETED_RUN
    assert agent.can_explain(identity=acme)
    assert agent.can_explain(identity={"tenant": "acme", "conversation_id": "c1"})
    with pytest.raises(InvalidRunInputError, match="identity"):
        agent.can_explain(identity={"tenant": 1})


# -- binding: at the end of a run, never mid-run -------------------------------------------------


def test_mid_run_a_trace_tool_reads_the_run_before_never_the_one_in_flight(
    tmp_path: Path,
) -> None:
    seen: list[bool] = []
    holder: list[Agent] = []

    def probe(args: dict[str, Any], ctx: Any) -> str:
        seen.append(holder[0].can_explain())
        return "probed"

    prober = define_tool(
        name="probe",
        description="Probe.",
        input_schema={"type": "object", "properties": {}},
        execute=probe,
    )
    for store in (None, SqliteStore(tmp_path / "runs.db")):
        seen.clear()
        replies = [
            call("p0", "probe"),
            "first answer",
            call("c1", "weather", {"city": "Oslo"}),
            call("p1", "probe"),
            call("t1", "trace_outline"),
            "done",
        ]
        agent = (
            Agent.create(provider=mock(replies=replies), model="m", store=store)
            .tool(WEATHER)
            .tool(prober)
            .self_explain()
            .build()
        )
        holder[:] = [agent]
        agent.run_sync("first", session_id="s")
        first = agent.snapshot().run_id
        agent.run_sync("second", session_id="s")
        read = outline_read(agent)
        assert isinstance(read, dict)
        assert read["run"]["run_id"] == first != agent.snapshot().run_id
        assert read["run"]["tool_calls"] == 1  # the probe of run 1, not this run's calls
        assert seen == [False, True]  # during run 1: nothing completed yet; during run 2: run 1


def test_a_paused_run_binds_when_it_is_resumed_to_its_end() -> None:
    replies = [
        "first answer",
        call("c1", "weather", {"city": "Oslo"}),
        call("t1", "trace_outline"),
        "second answer",
        call("t1", "trace_outline"),
        "third answer",
    ]
    agent = (
        Agent.create(provider=mock(replies=replies), model="m")
        .tool(WEATHER)
        .check_in(["weather"])
        .self_explain()
        .build()
    )
    agent.run_sync("first", session_id="s")
    first = agent.snapshot().run_id
    paused = agent.run_sync("second", session_id="s")
    assert is_paused(paused)
    assert agent.can_explain(session_id="s")  # run 1 still; the paused run is not bound
    assert agent.resume_sync(paused.checkpoint, "approve") == "second answer"
    second = agent.snapshot().run_id
    read = outline_read(agent)
    assert isinstance(read, dict) and read["run"]["run_id"] == first  # not itself
    agent.run_sync("third", session_id="s")
    read = outline_read(agent)
    assert isinstance(read, dict) and read["run"]["run_id"] == second
    assert read["run"]["answer"] == "second answer"


def scripted(*items: Any) -> Any:
    """A provider answering ``items`` in order; an exception is raised instead."""
    queue = list(items)

    def respond(request: Any) -> Any:
        item = queue.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    return mock(respond=respond)


def test_a_failed_run_is_a_run_to_explain() -> None:
    agent = explaining(scripted(ProviderConnectionError("upstream down"), ASK_ALL, "It failed."))
    with pytest.raises(Exception, match="upstream down"):
        agent.run_sync("hello", session_id="s")
    failed = agent.snapshot()
    assert failed.status == "failed" and agent.can_explain()
    agent.run_sync("why did that fail?", session_id="s")
    got = {k: json.loads(v) for k, v in results(agent).items()}
    assert got["t1"]["run"]["status"] == "failed"
    assert "upstream down" in got["t1"]["run"]["error"]
    assert got["t1"]["steps"][-1]["outcome"] == "error"
    assert got["t2"]["calls"] == [] and got["t3"]["calls"] == []


def test_can_explain_is_false_without_self_explain() -> None:
    agent = Agent.create(provider=mock(reply="hi"), model="m").tool(WEATHER).build()
    agent.run_sync("hello", session_id="s")
    assert agent.can_explain() is False and agent.can_explain(session_id="s") is False


# -- what the tools return is bounded, and a cut says so -----------------------------------------


def test_a_result_over_max_chars_is_cut_and_says_where_to_go_on() -> None:
    long_answer = "The long answer. " * 200
    many = {
        "tool_calls": [
            {"id": f"c{i}", "name": "weather", "args": {"city": f"City number {i}"}}
            for i in range(12)
        ]
    }
    replies: list[Any] = [many, long_answer, call("t1", "trace_outline")]
    pages: list[int] = []

    def respond(request: Any) -> Any:
        if replies:
            return replies.pop(0)
        last = request.messages[-1]
        if last.role == "tool" and last.name == "trace_outline":
            return call("t2", "trace_tool_calls")
        if last.role == "tool":
            note = json.loads(last.content).get("truncated", {}).get("items")
            if note:
                pages.append(note["next_from"])
                return call(f"t{len(pages) + 2}", "trace_tool_calls", {"from": note["next_from"]})
        return "read it all"

    agent = (
        Agent.create(provider=mock(respond=respond), model="m", max_iterations=40)
        .tool(WEATHER)
        .self_explain(max_chars=600)
        .build()
    )
    agent.run_sync("weather everywhere", session_id="s")
    first = agent.snapshot()
    agent.run_sync("why?", session_id="s")
    texts = results(agent)
    assert all(len(t) <= 600 for t in texts.values())
    outline = json.loads(texts["t1"])
    assert outline["run"]["answer"].startswith(long_answer[:100])
    assert outline["run"]["answer"].endswith("more chars]")
    assert "run.answer" in outline["truncated"]["texts"]["at"]
    assert outline["truncated"]["items"]["next_from"] > 1  # the steps were cut: and said so
    seen = [c["id"] for t in texts.values() if '"calls"' in t for c in json.loads(t)["calls"]]
    assert seen == [r["id"] for r in first.state["tool_results"]]  # every call once, in order
    assert len(pages) >= 2
    rows = {r["id"]: r for r in agent.snapshot().state["tool_results"]}
    assert all(rows[k]["chars"] == len(v) for k, v in texts.items())
    assert_law(agent)


payloads = st.recursive(  # what a record holds: JSON, integers within 64 bits
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=300),
    lambda inner: (
        st.lists(inner, max_size=8)
        | st.dictionaries(st.text(min_size=1, max_size=8), inner, max_size=8)
    ),
    max_leaves=60,
)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(head={}, items=["0" * 126], max_chars=500, start=1)  # fits whole, one text over its share
@given(
    head=st.dictionaries(st.sampled_from(["run", "key", "value"]), payloads, max_size=3),
    items=st.lists(payloads, max_size=30),
    max_chars=st.integers(500, 3000),
    start=st.integers(1, 5),
)
def test_fitted_is_bounded_json_and_says_every_cut(
    head: dict[str, Any], items: list[Any], max_chars: int, start: int
) -> None:
    payload = {**head, "items": items}
    text = fitted(payload, max_chars, "items", start)
    assert len(text) <= max_chars
    out = json.loads(text)
    whole = orjson.dumps(payload).decode()
    if len(whole) <= max_chars:
        assert out == payload  # what fits is given whole, nothing said cut
        return
    assert "truncated" in out  # anything cut says so
    note = out["truncated"]
    if "items" in out:
        shown = note.get("items")
        if shown is None:
            assert len(out["items"]) == len(items)
        else:  # the next page starts right after the shown items
            assert shown["next_from"] == start + len(out["items"])
            assert shown["of"] == start + len(items) - 1
    if "texts" not in note and "lists" not in note and "items" in out:
        assert out["items"] == items[: len(out["items"])]  # whole items, only fewer


# -- a store: another process, another agent instance --------------------------------------------


@pytest.fixture(params=["sqlite", "postgres"])
def opened(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Any]]:
    """Opens the same store again, as another process would (each call a new store object)."""
    made: list[Any] = []
    with contextlib.ExitStack() as cleanup:
        if request.param == "postgres":
            dsn = cleanup.enter_context(pg_schema("explain"))
            kind: Callable[[], Any] = lambda: PostgresStore(dsn)  # noqa: E731
        else:
            kind = lambda: SqliteStore(tmp_path / "runs.db")  # noqa: E731

        def again() -> Any:
            made.append(kind())
            return made[-1]

        yield again
        for store in made:
            store.close()


def test_another_agent_on_the_same_store_finds_the_conversations_last_run(
    opened: Callable[[], Any],
) -> None:
    one = explaining(conversational(), store=opened())
    one.run_sync("first", session_id="s1")
    other = explaining(conversational(), store=opened())  # as another process would
    assert other.can_explain(session_id="s1") and not other.can_explain(session_id="s2")
    other.run_sync("why?", session_id="s1")
    read = outline_read(other)
    assert isinstance(read, dict) and read["run"]["run_id"] == one.snapshot().run_id
    one.run_sync("second", session_id="s1")  # newer, elsewhere: the store is the truth
    other.run_sync("why, now?", session_id="s1")
    read = outline_read(other)
    assert isinstance(read, dict) and read["run"]["message"] == "second"
    other.run_sync("why?", session_id="s2")
    assert outline_read(other) == NO_COMPLETED_RUN
    # the run the store named is gone: the tools say so rather than that nothing ran
    latest = other.snapshot().run_id  # the last completed run of s2 now
    opened().delete(latest)
    third = explaining(conversational(), store=opened())
    third.run_sync("why?", session_id="s2")
    assert results(third)["t1"] == (
        f"The last completed run of this conversation ({latest}) is no longer in the store: "
        "it was pruned or deleted"
    )


class RunsOnly:
    """A run store with only the ``RunStore`` interface: no memory tables."""

    def __init__(self, inner: MemoryStore) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:  # what the executor's sinks read, but memory
        if name.startswith("memory_"):
            raise AttributeError(name)
        return getattr(self._inner, name)

    def begin_run(self, *args: Any) -> None:
        self._inner.begin_run(*args)

    def append(self, *args: Any) -> None:
        self._inner.append(*args)

    def finish_run(self, *args: Any) -> None:
        self._inner.finish_run(*args)

    def save_checkpoint(self, *args: Any) -> None:
        self._inner.save_checkpoint(*args)

    def claim_checkpoint(self, *args: Any) -> bool:
        return self._inner.claim_checkpoint(*args)

    def checkpoint_claim(self, *args: Any) -> Any:
        return self._inner.checkpoint_claim(*args)

    def load_checkpoint(self, *args: Any) -> Any:
        return self._inner.load_checkpoint(*args)

    def load(self, *args: Any) -> Snapshot:
        return self._inner.load(*args)

    def history(self, *args: Any) -> Any:
        return self._inner.history(*args)

    def list_runs(self) -> Any:
        return self._inner.list_runs()

    def paused(self) -> Any:
        return self._inner.paused()

    def prune(self, *args: Any, **kwargs: Any) -> Any:
        return self._inner.prune(*args, **kwargs)

    def delete(self, *args: Any) -> None:
        self._inner.delete(*args)

    def close(self) -> None:
        self._inner.close()


def test_a_store_without_memory_tables_is_searched_newest_first() -> None:
    store = RunsOnly(MemoryStore())
    assert isinstance(store, RunStore)
    one = explaining(conversational(), store=store)
    for message, session in (("a", "s1"), ("b", "s2"), ("c", "s1"), ("d", "s2")):
        one.run_sync(message, session_id=session)
    other = explaining(conversational(), store=store)
    other.run_sync("why?", session_id="s1")
    read = outline_read(other)
    assert isinstance(read, dict) and read["run"]["message"] == "c"
    assert not other.can_explain(session_id="s3")


def test_this_process_keeps_the_latest_conversations_and_says_when_one_was_dropped() -> None:
    agent = Agent.create(provider=conversational(), model="m").self_explain(keep=1).build()
    agent.run_sync("one", session_id="s1")
    agent.run_sync("two", session_id="s2")  # s1's run is dropped: one conversation is kept
    assert not agent.can_explain(session_id="s1") and agent.can_explain(session_id="s2")
    agent.run_sync("why?", session_id="s1")
    assert results(agent)["t1"] == (
        "The last completed run of this conversation is no longer kept: this agent keeps the "
        "latest 1 conversations in memory (give it a store to keep them all)"
    )


def test_under_a_redaction_policy_the_tools_read_the_record_as_it_was_kept(tmp_path: Path) -> None:
    agent = explaining(
        conversational(), store=SqliteStore(tmp_path / "r.db"), redact=conversation_redaction()
    )
    agent.run_sync("my card is 4111", session_id="s")
    agent.run_sync("why?", session_id="s")
    read = outline_read(agent)
    assert isinstance(read, dict)
    assert read["run"]["message"] == "[REDACTED]" and "4111" not in results(agent)["t1"]


# -- the record: law, replay, settings, nothing when not configured ------------------------------


def test_served_at_and_replay_serve_the_trace_results_from_the_recording(tmp_path: Path) -> None:
    provider = mock(replies=[call("c1", "weather", {"city": "Paris"}), "Sunny.", ASK_ALL, "X."])
    agent = (
        Agent.create(provider=provider, model="m")
        .system("Be brief.")
        .tool(WEATHER)
        .self_explain(max_chars=900)
        .build()
    )
    agent.run_sync("Weather?", session_id="s")
    agent.run_sync("Why?", session_id="s")
    assert assert_law(agent) == 2
    state = agent.snapshot().state
    assert state["settings"]["self_explain"] == {
        "tools": list(TRACE_TOOLS),
        "max_chars": 900,
        "guide": state["system_prompt"].removeprefix("Be brief.\n\n"),
    }
    served = served_at(agent, 2).messages
    assert [m.content for m in served if m.role == "tool"] == list(results(agent).values())
    path = save_recording(agent, tmp_path / "why.jsonl")
    loaded = load_recording(path)
    assert assert_law(loaded) == 2
    for replayed in (replay(loaded), replay(loaded, agent)):  # no agent, no store, no model
        assert thaw(replayed.state["history"]) == thaw(state["history"])
        assert [c.stage_path for c in replayed.history()] == [
            c.stage_path for c in loaded.history()
        ]


def test_with_skills_the_trace_tools_are_the_agents_own_and_move_no_cursor(
    tmp_path: Path,
) -> None:
    shipping = define_skill(id="shipping", title="Shipping", body="Give the carrier.")
    replies = [
        {"tool_calls": [{"id": "r1", "name": "read_skill", "args": {"id": "shipping"}}]},
        "Shipped.",
        call("t1", "trace_outline"),
        "From the record.",
    ]
    agent = (
        Agent.create(provider=mock(replies=replies), model="m", skill_scoped_tools=True)
        .skill(shipping)
        .self_explain()
        .build()
    )
    agent.run_sync("Where is it?", session_id="s")
    agent.run_sync("Why?", session_id="s")
    served = [t.name for t in served_at(agent, 1).tools or ()]
    assert served == [*TRACE_TOOLS, "read_skill", "list_skills", "skip_step", "present"]
    read = outline_read(agent)
    assert isinstance(read, dict) and read["run"]["answer"] == "Shipped."
    assert agent.snapshot().state["skill_cursor"]["skill"] is None  # reading moved nothing
    assert assert_law(agent) == 2
    replay(load_recording(save_recording(agent, tmp_path / "skills.jsonl")))


def test_not_configured_mounts_no_stage_and_writes_nothing_of_it() -> None:
    def run(explain: bool, system: str | None) -> tuple[Agent, Snapshot]:
        provider = mock(replies=[call("c1", "weather", {"city": "Oslo"}), "done"])
        builder = Agent.create(provider=provider, model="m").tool(WEATHER)
        if system is not None:
            builder.system(system)
        agent = (builder.self_explain() if explain else builder).build()
        agent.run_sync("go", session_id="s")
        return agent, agent.snapshot()

    _, bare_snap = run(False, None)
    assert [c.stage_id for c in bare_snap.history()] == [
        "seed", "tools", "call-llm", "route", "tool-calls", "call-llm", "route", "final"
    ]  # fmt: skip
    assert (
        "system_prompt" not in bare_snap.state and "self_explain" not in bare_snap.state["settings"]
    )
    plain, plain_snap = run(False, "Be brief.")
    explained, explained_snap = run(True, "Be brief.")
    # the same chart and the same keys: the feature is its settings entry, its guide and tools
    assert plain.spec().describe() == explained.spec().describe()
    assert [c.stage_path for c in plain_snap.history()] == [
        c.stage_path for c in explained_snap.history()
    ]
    assert set(plain_snap.state) == set(explained_snap.state)
    assert "self_explain" not in plain_snap.state["settings"]
    assert plain_snap.state["system_prompt"] == "Be brief."
    assert [t["name"] for t in plain_snap.state["tools"]] == ["weather"]
    assert explained_snap.state["system_prompt"].startswith("Be brief.\n\n## Explaining")
    assert [t["name"] for t in explained_snap.state["tools"]] == ["weather", *TRACE_TOOLS]
    assert plain.can_explain() is False


def test_build_refuses_a_clash_a_second_call_and_bad_bounds() -> None:
    clash = define_tool(
        name="trace_why",
        description="Mine.",
        input_schema={"type": "object", "properties": {}},
        execute=lambda args, ctx: "",
    )
    with pytest.raises(AgentBuildError, match="'trace_why' from .tool\\(\\) has the name"):
        Agent.create(provider=mock(reply="x"), model="m").tool(clash).self_explain().build()
    skill = define_skill(id="mine", title="Mine", body="B.", tools=[clash])
    with pytest.raises(AgentBuildError, match="clashes with the tool of that name from"):
        Agent.create(provider=mock(reply="x"), model="m").skill(skill).self_explain().build()
    hidden = define_skill(id="vault", title="Vault", body="Internal.", hidden=True)
    with pytest.raises(AgentBuildError, match=r"names the hidden skills \['vault'\]"):
        Agent.create(provider=mock(reply="x"), model="m").skill(hidden).self_explain().build()
    with pytest.raises(AgentBuildError, match="called twice"):
        Agent.create(provider=mock(reply="x"), model="m").self_explain().self_explain()
    for bad in ({"max_chars": 499}, {"keep": 0}, {"max_chars": True}):
        with pytest.raises(AgentBuildError, match="use a whole number of at least"):
            Agent.create(provider=mock(reply="x"), model="m").self_explain(**bad)
    with pytest.raises(TypeError, match="max_chars"):
        Agent.create(provider=mock(reply="x"), model="m").self_explain(max_char=600)  # type: ignore[call-arg]


def test_a_recording_from_this_version_loads_and_replays() -> None:
    """A recording kept from this version (tests/agent/fixtures/recording-explain-v1.jsonl:
    a run whose model asked every trace tool about the run before it, under a system
    prompt of its own) rebuilds every request and replays without the agent or a store."""
    loaded = load_recording(FIXTURE)
    assert assert_law(loaded) == 2
    state = thaw(loaded.state)
    assert state["settings"]["self_explain"]["tools"] == list(TRACE_TOOLS)
    assert state["system_prompt"].startswith("Answer briefly.\n\n## Explaining your last run")
    read = {m["name"]: m["content"] for m in state["history"] if m["role"] == "tool"}
    assert sorted(read) == sorted(TRACE_TOOLS)
    assert json.loads(read["trace_outline"])["run"]["answer"] == "Sunny in Paris, 22°C."
    replayed = replay(loaded)
    assert [c.stage_path for c in replayed.history()] == [c.stage_path for c in loaded.history()]
    assert thaw(replayed.state["history"]) == state["history"]
