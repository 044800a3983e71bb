from __future__ import annotations

import anyio
import pytest
from pydantic import BaseModel

from tests.backends import run_async
from trackway.agent import (
    Agent,
    AgentBuildError,
    Conversation,
    InvalidRunInputError,
    MockExhaustedError,
    OutputContractError,
    RunInFlightError,
    mock,
    receipts,
    served_at,
)
from trackway.engine import StageError
from trackway.tools import define_tool

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def weather_tool(log=None):
    def execute(args, ctx):
        if log is not None:
            log.append((args["city"], ctx.call_id, ctx.iteration))
        if args["city"] == "Atlantis":
            raise LookupError("no such city")
        return f"{args['city']}: sunny"

    return define_tool(
        name="weather", description="Weather for a city.", input_schema=CITY, execute=execute
    )


def call(city, i=1, name="weather"):
    return {"tool_calls": [{"id": f"c{i}", "name": name, "args": {"city": city}}]}


def build(replies, max_iterations=5, **options):
    provider = mock(replies=replies)
    builder = Agent.create(provider=provider, model="m", max_iterations=max_iterations, **options)
    return builder.system("Answer weather questions.").tool(weather_tool()), provider


def test_a_tool_turn_then_an_answer_commits_one_stage_each():
    builder, provider = build([call("Paris"), "Sunny in Paris."])
    agent = builder.build()
    assert agent.run_sync("Weather in Paris?") == "Sunny in Paris."
    paths = [c.stage_path for c in agent.snapshot().history()]
    assert paths == [
        "seed#0",
        "system-prompt#1",
        "tools#2",
        "call-llm#3",
        "route#4",
        "tool-calls#5",
        "call-llm#6",
        "route#7",
        "final#8",
    ]
    history = agent.snapshot().state["history"]
    assert [m["role"] for m in history] == ["user", "assistant", "tool"]
    assert history[2]["content"] == "Paris: sunny" and history[2]["tool_call_id"] == "c1"
    first, second = provider.requests
    assert first.system == "Answer weather questions." and first.tools[0].name == "weather"
    assert [m.role for m in second.messages] == ["user", "assistant", "tool"]


@pytest.mark.parametrize(
    ("message", "fragment"),
    [
        ("", "empty"),
        ("   \n", "empty"),
        (42, "must be a str"),
        ({"msg": "x"}, "unknown keys"),
        ({"identity": "u"}, "needs a 'message'"),
    ],
)
def test_bad_run_input_is_refused_before_anything_runs(message, fragment):
    builder, provider = build(["never"])
    with pytest.raises(InvalidRunInputError, match=fragment):
        builder.build().run_sync(message)
    assert provider.requests == []


def test_a_follow_up_while_a_run_is_in_flight_is_refused():
    gate = anyio.Event()

    async def slow(args, ctx):
        await gate.wait()
        return "done"

    tool = define_tool(
        name="slow", description="Slow.", input_schema={"type": "object"}, execute=slow
    )
    agent = (
        Agent.create(provider=mock(replies=[{"tool_calls": [{"name": "slow"}]}, "ok"]), model="m")
        .tool(tool)
        .build()
    )
    seen = []

    async def main():
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.run, "first")
            await anyio.sleep(0.01)
            with pytest.raises(RunInFlightError, match="is running a turn"):
                await agent.follow_up("second")  # it would continue an unsettled conversation
            seen.append("refused")
            gate.set()

    run_async(main)
    assert seen == ["refused"]


def test_duplicate_tool_names_fail_at_registration():
    with pytest.raises(AgentBuildError, match="two tools are named 'weather'"):
        Agent.create(provider=mock(reply="x"), model="m").tool(weather_tool()).tool(weather_tool())


def test_max_iterations_wraps_up_with_tools_withheld_and_reports_it():
    builder, provider = build(
        [call("A", 1), call("B", 2), call("C", 3), "Best guess."], max_iterations=3
    )
    agent = builder.build()
    stopped_events = []
    agent.on("agent.budget_exhausted", lambda e: stopped_events.append(e.payload))
    assert agent.run_sync("go") == "Best guess."
    assert len(provider.requests) == 4
    assert provider.requests[-1].tools is None  # the wrap-up call offers no tools
    assert "Do not call any tools" in provider.requests[-1].messages[-1].content
    stopped = agent.stopped_early()
    assert stopped["reason"] == "max-iterations" and stopped["wrapped_up"] is True
    assert stopped["pending_tool_calls"][0]["args"] == {"city": "C"}
    assert stopped_events[0]["action"] == "wrapped-up"


def test_without_wrap_up_the_run_is_cut_short_and_says_so():
    builder, provider = build(
        [call("A", 1), call("B", 2)], max_iterations=2, wrap_up_at_max_iterations=False
    )
    agent = builder.build()
    assert agent.run_sync("go") == ""
    assert len(provider.requests) == 2
    assert agent.stopped_early()["wrapped_up"] is False
    assert "wrap-up" not in agent.spec().nodes  # not configured: no stage


def test_tool_failures_unknown_tools_and_bad_args_become_results_the_model_reads():
    builder, provider = build(
        [
            {
                "tool_calls": [
                    {"id": "a", "name": "weather", "args": {"city": "Atlantis"}},
                    {"id": "b", "name": "nope", "args": {}},
                    {"id": "c", "name": "weather", "args": {"town": "x"}},
                ]
            },
            "Sorry.",
        ]
    )
    agent = builder.build()
    assert agent.run_sync("go") == "Sorry."
    results = [m.content for m in provider.requests[1].messages if m.role == "tool"]
    assert results[0] == "Error: weather failed: LookupError: no such city"
    assert results[1] == "Error: there is no tool named 'nope'. Available tools: weather."
    assert "invalid arguments for weather" in results[2] and "'city' is a required" in results[2]


def test_configure_sets_model_and_instructions_per_run_before_the_first_call():
    provider = mock(reply="ok")
    agent = (
        Agent.create(provider=provider, model="default")
        .system("base")
        .configure(
            lambda ctx: {
                "model": f"m-{ctx['identity'].tenant}",
                "instructions": f"{ctx['defaults']['instructions']}, custom",
            }
        )
        .build()
    )
    agent.run_sync({"message": "hi", "identity": {"tenant": "vip"}})
    request = provider.requests[0]
    assert request.model == "m-vip" and request.system == "base, custom"
    seed_ops = {op.key: op.value for op in agent.snapshot().history()[0].ops}
    assert seed_ops["settings"] == {"model": "m-vip"}  # the model configure() resolved
    assert seed_ops["resolved_instructions"] == "base, custom"
    assert seed_ops["identity"] == {"tenant": "vip"}


class Weather(BaseModel):
    city: str
    celsius: int


def test_output_schema_re_asks_with_the_validator_message_then_parses():
    provider = mock(replies=["not json", '{"city": "Paris"}', '{"city": "Paris", "celsius": 22}'])
    agent = Agent.create(provider=provider, model="m").output_schema(Weather, retries=2).build()
    result = run_async(agent.run_typed, "weather?")
    assert result == Weather(city="Paris", celsius=22)
    corrections = [m.content for m in provider.requests[2].messages if m.role == "user"][1:]
    assert "did not match the required output schema" in corrections[0]
    assert "celsius: Field required" in corrections[1]
    assert agent.output_contract_unmet() is None


def test_output_contract_unmet_is_reported_when_retries_run_out():
    agent = (
        Agent.create(provider=mock(replies=["x", "y"]), model="m")
        .output_schema(Weather, retries=1)
        .build()
    )
    assert agent.run_sync("weather?") == "y"
    assert agent.output_contract_unmet()["attempts"] == 2
    typed = Agent.create(provider=mock(replies=["x", "y"]), model="m")
    typed_agent = typed.output_schema(Weather, retries=1).build()
    with pytest.raises(OutputContractError, match="after 2 attempt") as info:
        run_async(typed_agent.run_typed, "w")
    assert info.value.answer == "y" and info.value.attempts == 2


def test_conversations_continue_with_the_answer_appended_even_across_processes():
    provider = mock(replies=["Paris is in France.", "About 2 million."])
    agent = Agent.create(provider=provider, model="m").build()
    agent.run_sync("Where is Paris?")
    saved = agent.checkpoint().to_json()
    again = Conversation.from_json(saved)  # what another process would load
    assert agent.run_sync("How many people live there?", continue_from=again) == "About 2 million."
    roles = [(m.role, m.content) for m in provider.requests[1].messages]
    assert roles == [
        ("user", "Where is Paris?"),
        ("assistant", "Paris is in France."),
        ("user", "How many people live there?"),
    ]
    follow = mock(replies=["a", "b"])
    second = Agent.create(provider=follow, model="m").build()
    second.run_sync("one")
    assert run_async(second.follow_up, "two") == "b"
    assert len(follow.requests[1].messages) == 3


def test_events_on_once_off_and_wildcards():
    builder, _ = build([call("Paris"), "done", "again"])
    agent = builder.build()
    seen: dict[str, list[str]] = {"exact": [], "domain": [], "all": [], "once": []}
    agent.on("stream.tool_start", lambda e: seen["exact"].append(e.payload["name"]))
    agent.on("stream.*", lambda e: seen["domain"].append(e.name))
    off = agent.on("*", lambda e: seen["all"].append(e.name))
    agent.once("agent.iteration_start", lambda e: seen["once"].append(e.payload["iteration"]))
    agent.run_sync("go")
    assert seen["exact"] == ["weather"] and seen["once"] == [1]
    assert seen["domain"] == [
        "stream.llm_start",
        "stream.llm_end",
        "stream.tool_start",
        "stream.tool_end",
        "stream.llm_start",
        "stream.llm_end",
    ]
    # every event is in the commit log too
    logged = [e.name for c in agent.snapshot().history() for e in c.events]
    assert logged == seen["all"]
    off()
    count = len(seen["all"])
    agent.run_sync("again")
    assert len(seen["all"]) == count and len(seen["domain"]) > 6


def test_commits_and_events_grow_linearly_with_iterations():
    def counts(n):
        replies = [call(f"c{i}", i) for i in range(n)] + ["done"]
        builder, _ = build(replies, max_iterations=n + 1)
        agent = builder.build()
        agent.run_sync("go")
        snap = agent.snapshot()
        return len(snap), sum(len(c.events) for c in snap.history())

    (c1, e1), (c2, e2), (c4, e4) = counts(1), counts(2), counts(4)
    assert c2 - c1 == c4 - c2 - (c2 - c1) == 3  # 3 commits per tool turn
    assert e4 - e2 == 2 * (e2 - e1)  # a constant number of events per turn


def test_running_out_of_scripted_replies_is_a_clear_error():
    agent = Agent.create(provider=mock(replies=[call("A")]), model="m").tool(weather_tool()).build()
    with pytest.raises(MockExhaustedError, match="ran out of replies") as info:
        agent.run_sync("go")
    # a provider failure surfaces as itself; the engine's wrapping is kept for the stage
    wrapped = info.value.stage_error
    assert isinstance(wrapped, StageError) and wrapped.__cause__ is info.value
    assert wrapped.stage_path == "call-llm#5" and wrapped.snapshot.status == "failed"


def test_receipts_hash_what_was_sent_and_record_reported_usage_only():
    provider = mock(
        replies=[
            {
                "tool_calls": [{"id": "x", "name": "weather", "args": {"city": "P"}}],
                "usage": {"input_tokens": 12, "output_tokens": 3},
            },
            "done",
        ]
    )
    agent = Agent.create(provider=provider, model="m").tool(weather_tool()).build()
    agent.run_sync("go")
    first, second = receipts(agent)
    assert first["usage"] == {"input_tokens": 12, "output_tokens": 3}
    assert second["usage"] is None  # not reported: never estimated
    assert first["request_hash"] == provider.requests[0].hash == served_at(agent, 1).hash
    assert set(first["tool_schema_hashes"]) == {"weather"} and first["model"] == "m"


def test_int_temperature_and_loose_history_still_obey_the_law():
    from trackway.agent import Conversation

    provider = mock(reply="x")
    agent = Agent.create(provider=provider, model="m", temperature=1).build()
    agent.run_sync("hi", continue_from=Conversation(history=[{"role": "assistant"}], agent="a"))
    assert served_at(agent, 1).hash == receipts(agent)[0]["request_hash"]
    assert provider.requests[0].hash == receipts(agent)[0]["request_hash"]
    assert agent.snapshot().status == "done"
    with pytest.raises(InvalidRunInputError, match="not valid"):
        agent.run_sync("hi", continue_from=Conversation(history=[{"role": "robot"}], agent="a"))


def test_a_failing_listener_does_not_silence_the_others():
    agent = Agent.create(provider=mock(reply="x"), model="m").build()
    seen = []
    agent.on("agent.turn_start", lambda e: 1 / 0)
    agent.on("*", lambda e: seen.append(e.name))
    agent.run_sync("hi")
    assert "agent.turn_start" in seen
    assert [f.hook for f in agent.snapshot().recorder_failures] == ["on_emit"]


def test_wrap_up_turned_off_is_in_settings_and_an_older_recording_without_it_replays(tmp_path):
    from trackway.agent import load_recording, replay, save_recording

    builder, _ = build(
        [call("A", 1), call("B", 2)], max_iterations=2, wrap_up_at_max_iterations=False
    )
    agent = builder.build()
    agent.run_sync("go")
    assert agent.snapshot().state["settings"]["wrap_up_at_max_iterations"] is False
    path = save_recording(agent, tmp_path / "run.json")
    replay(load_recording(path))  # agentless: the setting is read from the record
    # as this version's predecessor recorded it: the stop says what the setting was
    text = path.read_text()
    older = text.replace(',\\"wrap_up_at_max_iterations\\":false', "").replace(
        ',"wrap_up_at_max_iterations":false', ""
    )
    assert older != text
    (tmp_path / "older.json").write_text(older)
    replayed = replay(load_recording(tmp_path / "older.json"))
    assert "wrap_up_at_max_iterations" not in replayed.state["settings"]
    replay(load_recording(tmp_path / "older.json"), agent)  # and against today's agent
    default, _ = build([call("A", 1), "done"], max_iterations=2)
    done = default.build()
    done.run_sync("go")  # left on (the default): nothing written
    assert "wrap_up_at_max_iterations" not in done.snapshot().state["settings"]
