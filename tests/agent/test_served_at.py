"""The conformance law: every model request can be rebuilt from the log, byte for byte."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from trackway.agent import (
    Agent,
    ReplayDivergence,
    load_recording,
    mock,
    receipts,
    replay,
    save_recording,
    served_at,
)
from trackway.engine import Snapshot
from trackway.tools import define_tool

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


def lookup(args, ctx):
    if args["q"] == "boom":
        raise RuntimeError("tool exploded")
    return {"answer": args["q"].upper(), "n": len(args["q"])}


TOOL = define_tool(
    name="lookup", description="Look things up.", input_schema=SCHEMA, execute=lookup
)


class Answer(BaseModel):
    value: str


texts = st.text(alphabet='abc xyzé€\n"\\', max_size=12)
tool_call = st.one_of(
    st.builds(lambda q: {"name": "lookup", "args": {"q": q}}, texts),
    st.just({"name": "lookup", "args": {"q": "boom"}}),  # the tool raises
    st.just({"name": "lookup", "args": {"wrong": 1}}),  # bad arguments
    st.just({"name": "missing", "args": {}}),  # an unknown tool
)
step = st.one_of(
    st.lists(tool_call, min_size=1, max_size=3).map(lambda calls: {"tool_calls": calls}),
    texts.map(lambda t: {"content": t}),
)


def script(steps, final):
    replies = [s for s in steps if "tool_calls" in s] + [final]
    for i, r in enumerate(replies):
        for j, c in enumerate(r.get("tool_calls", []) if isinstance(r, dict) else []):
            c["id"] = f"call-{i}-{j}"
    return replies


def assert_law(agent: Agent, provider, offset: int = 0):
    snap = agent.snapshot()
    rs = receipts(agent)
    assert len(rs) == len(provider.requests) - offset
    for k, receipt in enumerate(rs, start=1):
        rebuilt = served_at(snap, k)
        assert rebuilt.hash == receipt["request_hash"]
        assert provider.requests[offset + k - 1].hash == receipt["request_hash"]  # the tap
        assert rebuilt.canonical_json() == provider.requests[offset + k - 1].canonical_json()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=st.lists(step, max_size=6),
    max_iterations=st.integers(1, 4),
    wrap=st.booleans(),
    temperature=st.one_of(st.none(), st.floats(0, 2)),
    typed=st.booleans(),
    follow=st.booleans(),
)
def test_served_at_hash_equals_the_receipt_and_what_the_provider_got(
    steps, max_iterations, wrap, temperature, typed, follow, tmp_path_factory
):
    final = '{"value": "ok"}' if typed else "done"
    replies = script(steps, "not json" if typed else final)
    if typed:
        replies.append(final)  # one output retry, then a valid answer
    replies += ["second answer", "spare", "spare", "spare"]  # wrap-ups and the follow-up
    provider = mock(replies=replies)
    builder = (
        Agent.create(
            provider=provider,
            model="m-1",
            max_iterations=max_iterations,
            temperature=temperature,
            wrap_up_at_max_iterations=wrap,
            max_tokens=99,
        )
        .system("Be exact.")
        .tool(TOOL)
    )
    if typed:
        builder.output_schema(Answer, retries=1)
    agent = builder.build()
    agent.run_sync("first question")
    assert_law(agent, provider)
    path = tmp_path_factory.mktemp("rec") / "run.json"
    save_recording(agent, path)
    loaded = load_recording(path)
    assert loaded == agent.snapshot()
    for k, receipt in enumerate(receipts(loaded), start=1):
        assert served_at(loaded, k).hash == receipt["request_hash"]
    replayed = replay(loaded, agent)  # hermetic: recorded answers and tool results only
    if not typed:  # the recording alone is enough to replay (no validator code needed)
        assert [c.stage_path for c in replay(loaded).history()] == [
            c.stage_path for c in loaded.history()
        ]
    assert [c.stage_path for c in replayed.history()] == [c.stage_path for c in loaded.history()]
    if follow:
        used = len(provider.requests)
        agent.run_sync("and then?", continue_from=agent.checkpoint())
        assert_law(agent, provider, offset=used)


def test_replay_names_the_first_divergent_stage_and_key(tmp_path):
    provider = mock(
        replies=[{"tool_calls": [{"id": "a", "name": "lookup", "args": {"q": "x"}}]}, "done"]
    )
    agent = Agent.create(provider=provider, model="m").tool(TOOL).build()
    agent.run_sync("go")
    path = save_recording(agent, tmp_path / "run.json")
    replay(load_recording(path), agent)  # faithful: no divergence

    other_tool = define_tool(
        name="lookup", description="Look things up (v2).", input_schema=SCHEMA, execute=lookup
    )
    changed = Agent.create(provider=mock(reply="x"), model="m").tool(other_tool).build()
    with pytest.raises(ReplayDivergence) as info:
        replay(load_recording(path), changed)
    assert info.value.stage_path == "tools#1" and info.value.key == "tools"
    assert "commit 2 (tools#1) wrote 'tools'" in str(info.value)


def test_served_at_refuses_an_out_of_range_call():
    agent = Agent.create(provider=mock(reply="hi"), model="m").build()
    agent.run_sync("hello")
    assert served_at(agent, 1).messages[0].content == "hello"
    with pytest.raises(IndexError, match="made 1 model calls"):
        served_at(agent, 2)
    assert isinstance(agent.snapshot(), Snapshot)


def _member_requests(snapshot: Snapshot, mount: str) -> list[tuple[str, str]]:
    """Each model call of the agent mounted at ``mount``: the hash of the request rebuilt
    from that member's own log (its frame), and the hash its receipt recorded."""
    from trackway.agent._request import assemble
    from trackway.engine import StagePath
    from trackway.engine._state import StateStore

    state = StateStore()
    out = []
    for commit in snapshot.commits:
        if commit.frame != mount:
            continue
        if StagePath.parse(commit.stage_path).name == "call-llm":
            receipt = next(op.value[0] for op in commit.ops if op.key == "receipts")
            out.append((assemble(state.current()).request_hash, receipt["request_hash"]))
        state.apply(commit.seq, commit.writes)
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    first=st.lists(step, max_size=4),
    second=st.lists(step, max_size=4),
    max_iterations=st.integers(1, 4),
    wrap=st.booleans(),
)
def test_the_law_holds_for_agents_mounted_twice_in_one_run(first, second, max_iterations, wrap):
    """Two mounts of one agent in one run: each keeps its own run-local message cache, and
    every request it sent is rebuilt from its own frame of the log."""
    from trackway.engine import Executor, flow_chart

    replies = [*script(first, "first answer"), "spare", *script(second, "second answer")]
    replies += ["spare"] * 6
    provider = mock(replies=replies)
    agent = (
        Agent.create(
            provider=provider,
            model="m-1",
            max_iterations=max_iterations,
            wrap_up_at_max_iterations=wrap,
        )
        .system("Be exact.")
        .tool(TOOL)
        .build()
    )
    chart = (
        flow_chart("Ask", lambda s: s.__setitem__("question", "what?"), id="ask")
        .subflow("First", agent.spec(), id="first", input={"message": "question"},
                 output={"a": "final_answer"})
        .subflow("Second", agent.spec(), id="second", input={"message": "question"},
                 output={"b": "final_answer"})
        .build()
    )  # fmt: skip
    snapshot = Executor(chart, max_iterations=100).run_sync().snapshot
    mounts = [c.frame for c in snapshot.commits if c.kind == "subflow-input"]
    assert len(mounts) == 2
    rebuilt = [pair for mount in mounts for pair in _member_requests(snapshot, mount)]
    assert len(rebuilt) == len(provider.requests)
    for (from_log, receipt), sent in zip(rebuilt, provider.requests, strict=True):
        assert from_log == receipt == sent.hash
