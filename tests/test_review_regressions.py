"""Regressions for faults found by review (each test names the fault it guards)."""

from __future__ import annotations

import anyio
import pytest
from pydantic import BaseModel

from tests.backends import run_async
from trackway import (
    Agent,
    Executor,
    MemoryStore,
    Snapshot,
    SqliteStore,
    StageError,
    define_tool,
    flow_chart,
    mock,
    receipts,
    replay,
    served_at,
)
from trackway.agent import AgentBuildError, Conversation, InvalidRunInputError, OutputContractError
from trackway.engine import Decision, RedactionPolicy


def asker(k):
    return flow_chart(
        f"A{k}", lambda s: s.pause(k), id="ask", on_resume=lambda s, v: s.__setitem__(f"ans_{k}", v)
    ).build()


def test_the_resume_value_goes_to_the_stage_the_checkpoint_names():
    inner = flow_chart("G0", lambda s: None, id="g0").fork("G", {"x": asker("x")}, id="g").build()
    chart = flow_chart("S", lambda s: None).fork("F", {"a": inner, "b": asker("b")}, id="f")
    ex = Executor(chart.build())
    first = ex.run_sync()
    named = first.checkpoint.paused_at
    second = ex.resume_sync(first.checkpoint, "for x")
    resumed = [c.stage_path for c in second.snapshot.history() if c.kind == "resume"]
    assert resumed == [named + ":resume1"]


def test_a_run_cancelled_from_outside_still_closes_its_store():
    async def slow(s):
        await anyio.sleep(1)

    store = MemoryStore()
    chart = flow_chart("Fast", lambda s: s.__setitem__("x", 1)).then("Slow", slow).build()

    async def main():
        with anyio.move_on_after(0.1):
            await Executor(chart, store=store, durability="exit").run()

    run_async(main)
    (info,) = store.list_runs()
    assert info.status == "failed" and info.commit_count >= 1


def test_or_on_a_frozen_dict_cannot_reach_committed_state():
    def mutate(s):
        (s["cfg"] | {})["xs"].append(99)

    chart = flow_chart("A", lambda s: s.__setitem__("cfg", {"xs": [1]})).then("B", mutate).build()
    result = Executor(chart).run_sync(raise_on_error=False)
    assert result.snapshot.state_at(1)["cfg"] == {"xs": [1]}


def test_for_each_branch_writes_to_item_survive_a_resume():
    body = (
        flow_chart("Mul", lambda s: s.__setitem__("item", s["item"] * 10), id="mul")
        .then("Ask", lambda s: s.pause("?"), id="ask", on_resume=lambda s, v: None)
        .then("Out", lambda s: s.__setitem__("result", s["item"]), id="out")
        .build()
    )
    chart = (
        flow_chart("S", lambda s: None)
        .parallel_for_each("E", items="xs", branch=body, into="out", max_branches=5)
        .build()
    )
    ex = Executor(chart)
    result = ex.run_sync({"xs": [1, 2]})
    while result.status == "paused":
        result = ex.resume_sync(result.checkpoint, None)
    assert list(result.state["out"]) == [10, 20]


def test_a_claim_outlives_its_run_in_sqlite(tmp_path):
    store = SqliteStore(tmp_path / "r.db")
    chart = flow_chart("Ask", lambda s: s.pause(), on_resume=lambda s, v: None).build()
    cp = Executor(chart).run_sync().checkpoint  # the log travels inside the checkpoint
    ex = Executor(chart, store=store)
    ex.resume_sync(cp)
    store.prune(run_ids=[cp.run_id])
    with pytest.raises(Exception, match="already resumed"):
        ex.resume_sync(cp)
    store.close()


class Needs(BaseModel):
    x: int


def test_merged_deletes_meet_the_state_model():
    branch = flow_chart("D", lambda s: s.__delitem__("x"), id="d").build()
    chart = flow_chart("S", lambda s: None, state=Needs).fork("F", {"a": branch}).build()
    with pytest.raises(StageError):
        Executor(chart).run_sync({"x": 1})


def test_diff_sees_a_change_of_type():
    chart = (
        flow_chart("A", lambda s: s.__setitem__("f", 1))
        .then("B", lambda s: s.__setitem__("f", True))
        .build()
    )
    assert Executor(chart).run_sync().snapshot.diff(1, 2).changed["f"] == (1, True)


def test_switching_a_subflow_between_isolated_and_shared_changes_the_fingerprint():
    sub = flow_chart("U", lambda s: None, id="u").build()
    shared = flow_chart("S", lambda s: None).subflow("Sub", sub, id="sub").build()
    isolated = flow_chart("S", lambda s: None).subflow("Sub", sub, id="sub", input={}).build()
    assert shared.fingerprint != isolated.fingerprint


def test_a_break_before_a_pause_ends_the_run_after_the_resume():
    def stop_and_ask(s):
        s.break_("stop")
        s.pause()

    chart = (
        flow_chart("S", stop_and_ask, on_resume=lambda s, v: None)
        .then("Never", lambda s: s.__setitem__("ran", True))
        .build()
    )
    ex = Executor(chart)
    result = ex.resume_sync(ex.run_sync().checkpoint, None)
    assert (result.status, result.break_reason) == ("broken", "stop")
    assert "ran" not in result.state


def test_decision_evidence_is_copied_and_round_trips():
    evidence = {"score": 1, "tags": ("a", "b")}
    chart = (
        flow_chart("S", lambda s: None)
        .decider("R", lambda s: Decision("a", evidence))
        .branch("a", "A", lambda s: None)
        .end()
        .build()
    )
    snap = Executor(chart).run_sync().snapshot
    evidence["score"] = 999
    assert snap.history()[1].detail["decision"]["score"] == 1
    assert Snapshot.from_json(snap.to_json()) == snap


def test_from_commits_leaves_the_callers_values_alone():
    chart = flow_chart("A", lambda s: s.append("xs", 3)).build()
    snap = Executor(chart).run_sync({"xs": [1]}).snapshot
    mine = [1]
    Snapshot.from_commits(
        run_id="r", chart_id="a", status="done", initial={"xs": mine}, commits=snap.commits
    )
    assert mine == [1]


# -- agent -----------------------------------------------------------------------------------


def test_two_mounts_of_one_agent_chart_send_their_own_messages():
    provider = mock(replies=["one", "two"])
    agent = Agent.create(provider=provider, model="m").build()
    chart = (
        flow_chart("S", lambda s: None)
        .subflow("A", agent.spec(), id="a", input={"message": "q1"})
        .subflow("B", agent.spec(), id="b", input={"message": "q2"})
        .build()
    )
    Executor(chart).run_sync({"q1": "first?", "q2": "second?"})
    assert [r.messages[0].content for r in provider.requests] == ["first?", "second?"]


def test_a_tool_changing_its_args_does_not_change_the_recorded_call():
    tool = define_tool(
        name="w",
        description="d",
        input_schema={"type": "object"},
        execute=lambda a, c: str(a.setdefault("units", "C")),
    )
    agent = (
        Agent.create(
            provider=mock(
                replies=[{"tool_calls": [{"id": "c1", "name": "w", "args": {"city": "P"}}]}, "done"]
            ),
            model="m",
        )
        .tool(tool)
        .build()
    )
    agent.run_sync("go")
    assert agent.snapshot().state["history"][1]["tool_calls"][0]["args"] == {"city": "P"}
    replay(agent.snapshot(), agent)


def test_namespaced_merges_hide_hidden_keys():
    chart = (
        flow_chart("S", lambda s: None)
        .fork(
            "F",
            {"p": lambda s: s.__setitem__("secret", "S3"), "q": lambda s: None},
            merge="namespace",
        )
        .build()
    )
    result = Executor(chart, redact=RedactionPolicy(keys=["secret"])).run_sync()
    assert b"S3" not in result.snapshot.to_json()


def test_replay_without_the_agent_when_configure_only_chose_a_model():
    agent = (
        Agent.create(provider=mock(reply="ok"), model="m")
        .configure(lambda c: {"model": "big"})
        .build()
    )
    agent.run_sync("hi")
    replay(agent.snapshot())


def test_configure_returning_no_model_is_a_clear_error():
    agent = (
        Agent.create(provider=mock(reply="ok"), model="m")
        .configure(lambda c: {"model": None})
        .build()
    )
    with pytest.raises(AgentBuildError, match="configure\\(\\) returned model=None") as caught:
        agent.run_sync("hi")
    assert isinstance(caught.value.stage_error, StageError)  # the stage, as the engine saw it


class A(BaseModel):
    v: int


def test_a_cut_short_typed_turn_reports_the_unmet_contract():
    tool = define_tool(
        name="w", description="d", input_schema={"type": "object"}, execute=lambda a, c: "x"
    )
    call = {"tool_calls": [{"name": "w", "args": {}}]}
    agent = (
        Agent.create(provider=mock(replies=[call, call]), model="m", max_iterations=1)
        .tool(tool)
        .output_schema(A)
        .build()
    )
    with pytest.raises(OutputContractError):
        run_async(agent.run_typed, "go")


def test_a_tool_result_that_is_not_json_becomes_an_error_result():
    tool = define_tool(
        name="w", description="d", input_schema={"type": "object"}, execute=lambda a, c: {1, 2}
    )
    provider = mock(replies=[{"tool_calls": [{"name": "w", "args": {}}]}, "done"])
    Agent.create(provider=provider, model="m").tool(tool).build().run_sync("go")
    result = next(m.content for m in provider.requests[1].messages if m.role == "tool")
    assert result.startswith("Error: w returned a value that is not JSON")


def test_bad_identities_and_conversations_are_invalid_input():
    agent = Agent.create(provider=mock(reply="x"), model="m").build()
    with pytest.raises(InvalidRunInputError):
        agent.run_sync({"message": "hi", "identity": {1}})
    with pytest.raises(InvalidRunInputError):
        agent.run_sync({"message": "hi", 1: "x", "a": "b"})
    with pytest.raises(InvalidRunInputError):
        Conversation.from_json(b"not json")


def test_off_removes_a_once_listener():
    agent = Agent.create(provider=mock(reply="x"), model="m").build()
    seen = []
    fn = seen.append
    agent.once("agent.turn_end", fn)
    agent.off("agent.turn_end", fn)
    agent.run_sync("hi")
    assert seen == []
    assert served_at(agent, 1).hash == receipts(agent)[0]["request_hash"]


def _recovered_paths(chart, k, input=None):
    """Run to the end; then pretend the process died after commit k and recover."""
    full = Executor(chart).run_sync(input)
    store = MemoryStore()
    store.begin_run(full.run_id, chart.id, dict(full.snapshot._initial))
    store.append(full.run_id, full.snapshot.commits[:k])
    recovered = Executor(chart, store=store).recover_sync(full.run_id)
    return [c.stage_path for c in full.snapshot.history()], [
        c.stage_path for c in recovered.snapshot.history()
    ]


def test_recover_continues_with_the_paths_and_loop_budgets_of_an_uninterrupted_run():
    def step(s):
        s["i"] = s.get("i", 0) + 1
        if s["i"] == 3:
            s.break_("done")

    chart = (
        flow_chart("Start", lambda s: None)
        .fork("F", {"a": lambda s: s.__setitem__("a", 1), "b": lambda s: s.__setitem__("b", 2)})
        .then("Step", step)
        .loop_to("step")
        .build()
    )
    for k in (4, 5, 6):
        expected, got = _recovered_paths(chart, k)
        assert got == expected, k


def test_resumed_commits_in_a_decider_branch_keep_their_control_dependency():
    chart = (
        flow_chart("S", lambda s: None)
        .decider("R", lambda s: "m")
        .branch("m", "M", lambda s: s.pause("?"), on_resume=lambda s, v: None)
        .end()
        .build()
    )
    ex = Executor(chart)
    done = ex.resume_sync(ex.run_sync().checkpoint, "ok")
    resumed = next(c for c in done.snapshot.history() if c.kind == "resume")
    assert resumed.detail["control"] == {"decider": "r#1", "branch": "m"}


def test_a_missing_key_error_lists_what_is_really_there():
    def stage(s):
        del s["a"]
        s["b"] = 1
        s["a"]

    with pytest.raises(StageError) as info:
        Executor(flow_chart("S", stage).build()).run_sync({"a": 1})
    assert "keys present: ['b']" in str(info.value.__cause__)
