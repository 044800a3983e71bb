"""The calls of one answer run at once (bounded); the record is as if they ran in order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from trackway import Agent, define_tool, mock
from trackway.agent import AgentBuildError, replay, save_recording

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


class Probe:
    """Async tool calls that count how many run at the same time."""

    def __init__(self, delays: dict[int, float]) -> None:
        self.delays = delays
        self.now = 0
        self.most = 0
        self.finished: list[int] = []

    async def execute(self, args: dict[str, Any], ctx: Any) -> str:
        self.now += 1
        self.most = max(self.most, self.now)
        ctx.progress({"step": "started", "n": args["n"]})
        await anyio.sleep(self.delays[args["n"]])
        self.now -= 1
        self.finished.append(args["n"])
        return f"result {args['n']}"


def _agent(probe: Probe, n: int, **kw: Any) -> Any:
    calls = [{"id": f"c{i}", "name": "probe", "args": {"n": i}} for i in range(n)]
    tool = define_tool(name="probe", description="P.", input_schema=SCHEMA, execute=probe.execute)
    model = mock(replies=[{"tool_calls": calls}, "done"])
    return Agent.create(provider=model, model="m", **kw).tool(tool).build()


def _tool_commit(agent: Any) -> Any:
    return next(c for c in agent.snapshot().history() if c.stage_id == "tool-calls")


def test_the_calls_of_one_answer_run_at_once_and_are_served_in_call_order() -> None:
    probe = Probe({0: 0.06, 1: 0.04, 2: 0.02, 3: 0.0})  # they finish in reverse order
    agent = _agent(probe, 4)
    assert agent.run_sync("go") == "done"
    assert probe.most == 4 and probe.finished == [3, 2, 1, 0]
    history = agent.snapshot().state["history"]
    assert [m["content"] for m in history if m["role"] == "tool"] == [
        "result 0",
        "result 1",
        "result 2",
        "result 3",
    ]
    rows = agent.snapshot().state["tool_results"]
    assert [r["id"] for r in rows] == ["c0", "c1", "c2", "c3"]
    # events: the starts as the calls begin, then each call's own events in call order
    names = [(e.name, e.payload.get("id")) for e in _tool_commit(agent).events]
    assert names[:4] == [("stream.tool_start", f"c{i}") for i in range(4)]
    assert names[4:] == [
        pair
        for i in range(4)
        for pair in (("stream.tool_progress", f"c{i}"), ("stream.tool_end", f"c{i}"))
    ] + [("agent.iteration_end", None)]


def test_the_record_does_not_depend_on_which_call_finished_first(tmp_path: Path) -> None:
    fast_first = _agent(Probe({0: 0.0, 1: 0.03, 2: 0.06}), 3)
    slow_first = _agent(Probe({0: 0.06, 1: 0.03, 2: 0.0}), 3)
    fast_first.run_sync("go")
    slow_first.run_sync("go")
    one, two = _tool_commit(fast_first), _tool_commit(slow_first)
    assert one.writes == two.writes and one.events == two.events
    # and a replay, which runs no tool, writes the same
    replay(save_recording(slow_first, tmp_path / "rec.jsonl"))


def test_the_bound_holds_and_one_means_one_after_another() -> None:
    probe = Probe(dict.fromkeys(range(5), 0.01))
    _agent(probe, 5, max_parallel_tool_calls=2).run_sync("go")
    assert probe.most == 2
    probe = Probe(dict.fromkeys(range(3), 0.01))
    agent = _agent(probe, 3, max_parallel_tool_calls=1)
    agent.run_sync("go")
    assert probe.most == 1
    names = [(e.name, e.payload.get("id")) for e in _tool_commit(agent).events]
    assert names[:3] == [  # as calls always ran one at a time: each ends before the next
        ("stream.tool_start", "c0"),
        ("stream.tool_progress", "c0"),
        ("stream.tool_end", "c0"),
    ]


def test_sync_tools_run_in_call_order() -> None:
    order: list[int] = []

    def execute(args: dict[str, Any], ctx: Any) -> str:
        order.append(args["n"])
        return "ok"

    tool = define_tool(name="probe", description="P.", input_schema=SCHEMA, execute=execute)
    calls = [{"id": f"c{i}", "name": "probe", "args": {"n": i}} for i in range(4)]
    model = mock(replies=[{"tool_calls": calls}, "done"])
    Agent.create(provider=model, model="m").tool(tool).build().run_sync("go")
    assert order == [0, 1, 2, 3]


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "4"])
def test_a_bad_bound_is_refused(bad: Any) -> None:
    with pytest.raises(AgentBuildError, match="max_parallel_tool_calls"):
        Agent.create(provider=mock(reply="x"), model="m", max_parallel_tool_calls=bad)


def test_a_question_among_the_calls_settles_the_ones_before_it_then_pauses(
    tmp_path: Path,
) -> None:
    from trackway.agent import Paused
    from trackway.tools import ask_human

    probe = Probe({0: 0.03, 1: 0.0, 3: 0.0})
    tool = define_tool(name="probe", description="P.", input_schema=SCHEMA, execute=probe.execute)
    calls = [
        {"id": "c0", "name": "probe", "args": {"n": 0}},
        {"id": "c1", "name": "probe", "args": {"n": 1}},
        {"id": "h", "name": "ask_human", "args": {"question": "go on?"}},
        {"id": "c3", "name": "probe", "args": {"n": 3}},
    ]
    model = mock(replies=[{"tool_calls": calls}, "done"])
    agent = Agent.create(provider=model, model="m").tool(tool).tool(ask_human()).build()
    paused = agent.run_sync("go")
    assert isinstance(paused, Paused)
    assert probe.most == 2 and sorted(probe.finished) == [0, 1]  # 3 waits for the answer
    assert agent.resume_sync(paused.checkpoint, "yes") == "done"
    history = agent.snapshot().state["history"]
    assert [m.get("tool_call_id") for m in history if m["role"] == "tool"] == [
        "c0",
        "c1",
        "h",
        "c3",
    ]
    replay(save_recording(agent, tmp_path / "rec.jsonl"))
