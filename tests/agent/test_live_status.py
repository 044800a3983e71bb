"""Live status lines, voice templates, commentary and the app name (issue 36, live)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.law import assert_law
from trackway import define_tool
from trackway.agent import (
    COMMENTARY_TEMPLATES,
    THINKING_TEMPLATES,
    Agent,
    StatusLine,
    TemplateError,
    chat_bubble_live_status,
    commentary,
    load_recording,
    mock,
    replay,
    save_recording,
    status_line,
)

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def _walk(args: dict[str, Any], ctx: Any) -> str:
    """Reports progress twice: once with a message, once with numbers only."""
    ctx.progress({"message": f"  hop {args['n']} of 3  ", "done": args["n"]})
    ctx.progress({"done": args["n"], "total": 3})
    return f"walked {args['n']}"


WALK = define_tool(name="walk", description="Walk.", input_schema=SCHEMA, execute=_walk)


def _agent(*, strategy: Any = None, parallel: int = 1, **voice: Any) -> Agent:
    calls = [{"id": f"c{i}", "name": "walk", "args": {"n": i}} for i in (1, 2)]
    builder = Agent.create(
        provider=mock(replies=[{"tool_calls": calls}, "done"]),
        model="m",
        max_parallel_tool_calls=parallel,
    ).tool(WALK)
    if strategy is not None:
        builder.live_status(strategy=strategy)
    if "thinking" in voice:
        builder.thinking_templates(voice["thinking"])
    if "app" in voice:
        builder.app_name(voice["app"])
    return builder.build()


# -- the rules of one line --------------------------------------------------------------------


def test_a_message_is_shown_verbatim_and_stripped() -> None:
    line = status_line(
        "stream.tool_progress", {"id": "c1", "name": "walk", "payload": {"message": "  a b  "}}
    )
    assert line == StatusLine("tool.progress", "a b", "c1", "walk")
    assert str(line) == "a b"


@given(st.text(min_size=1, max_size=400).filter(lambda t: t.strip() != ""))
def test_the_120_character_cut_is_exact_and_says_how_much(message: str) -> None:
    payload = {"id": "c1", "name": "walk", "payload": {"message": message}}
    line = status_line("stream.tool_progress", payload)
    assert line is not None
    text = message.strip()
    if len(text) <= 120:
        assert line.text == text
    else:
        assert line.text == text[:120] + f"… (+{len(text) - 120} more)"
        cut = int(re.fullmatch(r".*… \(\+(\d+) more\)", line.text, re.S)[1])  # type: ignore[index]
        assert len(line.text) - len(f"… (+{cut} more)") + cut == len(text)


@pytest.mark.parametrize(
    "payload",
    [{"done": 3}, {"message": 7}, {"message": "   "}, "a bare string", None, [1, 2]],
)
def test_anything_but_a_string_message_gets_the_generic_line(payload: Any) -> None:
    event = {"id": "c1", "name": "walk", "payload": payload}
    line = status_line("stream.tool_progress", event, count=2)
    assert line == StatusLine(
        "tool.progress.generic", "walk is still working (2 reports so far)…", "c1", "walk"
    )
    assert "3" not in line.text and "message" not in line.text  # never the payload
    dropped = status_line("stream.tool_progress", {"id": "c1", "name": "walk", "dropped": "X"})
    assert dropped is not None and dropped.key == "tool.progress.generic"


def test_the_other_events() -> None:
    assert status_line("stream.llm_start", {"k": 1, "model": "m"}) == StatusLine(
        "thinking", "Thinking…"
    )
    assert status_line("stream.tool_start", {"id": "c9", "name": "walk"}) == StatusLine(
        "tool", "Running walk…", "c9", "walk"
    )
    assert status_line("stream.tool_end", {"id": "c9", "name": "walk"}) is None
    assert status_line("agent.turn_end", {"answer": "x"}) is None


def test_templates_per_tool_override_and_the_ladder_falls_through() -> None:
    progress = {"id": "c1", "name": "walk", "payload": {"message": "hop 1"}}
    numbers = {"id": "c1", "name": "walk", "payload": {"n": 1}}
    own = {"tool.walk.progress": "{app}: walking ({message})", "tool.progress": "- {message}"}
    assert status_line("stream.tool_progress", progress, templates=own, app_name="Ada") == (
        StatusLine("tool.walk.progress", "Ada: walking (hop 1)", "c1", "walk")
    )
    other = {**progress, "name": "fly"}
    assert status_line("stream.tool_progress", other, templates=own).text == "- hop 1"  # type: ignore[union-attr]
    # a map written with only the tool's own line keeps rendering that line
    older = {"tool.walk": "Walking…"}
    assert status_line("stream.tool_progress", progress, templates=older).text == "Walking…"  # type: ignore[union-attr]
    assert status_line("stream.tool_progress", numbers, templates=older).key == "tool.walk"  # type: ignore[union-attr]
    generic = {"tool.walk.progress.generic": "{tool}: {count}"}
    assert status_line("stream.tool_progress", numbers, templates=generic, count=4).text == (  # type: ignore[union-attr]
        "walk: 4"
    )


def test_unknown_keys_and_placeholders_are_refused_naming_the_valid_ones() -> None:
    builder = Agent.create(provider=mock(reply="x"), model="m")
    with pytest.raises(TemplateError, match=r"unknown key 'tools\.progress'.*progress\.generic"):
        builder.thinking_templates({"tools.progress": "x"})
    with pytest.raises(TemplateError, match="names the tool 'progres'"):  # a typo is caught
        builder.thinking_templates({"tool.progres": "x"}).build()
    with pytest.raises(TemplateError, match=r"\{message\}.*offers \{app\}, \{count\}"):
        Agent.create(provider=mock(reply="x"), model="m").thinking_templates(
            {"tool.progress.generic": "{message}"}
        )
    with pytest.raises(TemplateError, match="names the tool 'fly'.*tools: walk"):
        Agent.create(provider=mock(reply="x"), model="m").tool(WALK).thinking_templates(
            {"tool.fly.progress": "x"}
        ).build()
    with pytest.raises(TemplateError, match="unknown key 'paused!'.*turn.start, llm.start"):
        Agent.create(provider=mock(reply="x"), model="m").commentary_templates({"paused!": "x"})
    with pytest.raises(TemplateError, match="app_name"):
        Agent.create(provider=mock(reply="x"), model="m").app_name("  ")
    with pytest.raises(TemplateError, match="heard"):
        Agent.create(provider=mock(reply="x"), model="m").live_status(strategy=print)  # type: ignore[arg-type]


def test_the_voice_is_readable_on_the_agent() -> None:
    plain = _agent()
    assert plain.app_name == "Chatbot"
    assert dict(plain.thinking_templates) == dict(THINKING_TEMPLATES)
    assert dict(plain.commentary_templates) == dict(COMMENTARY_TEMPLATES)
    agent = (
        Agent.create(provider=mock(reply="x"), model="m")
        .tool(WALK)
        .app_name("Weatherbot")
        .thinking_templates({"tool.walk": "Walking…"})
        .commentary_templates({"tool.walk.start": "{app} went for a walk."})
        .build()
    )
    assert agent.app_name == "Weatherbot"
    assert agent.thinking_templates["tool.walk"] == "Walking…"
    assert agent.thinking_templates["thinking"] == "Thinking…"
    assert agent.commentary_templates["tool.walk.start"] == "{app} went for a walk."


# -- the chat bubble ------------------------------------------------------------------------


def test_the_bubble_shows_one_line_at_a_time_and_clears_at_tool_and_turn_end() -> None:
    lines: list[StatusLine | None] = []
    agent = _agent(strategy=chat_bubble_live_status(on_line=lines.append))
    assert agent.run_sync("walk twice") == "done"
    texts = [None if line is None else (line.call_id, line.text) for line in lines]
    assert texts == [
        (None, "Thinking…"),
        ("c1", "Running walk…"),
        ("c1", "hop 1 of 3"),
        ("c1", "walk is still working (2 reports so far)…"),
        None,  # c1 ended, nothing else running
        ("c2", "Running walk…"),
        ("c2", "hop 2 of 3"),
        ("c2", "walk is still working (2 reports so far)…"),
        None,
        (None, "Thinking…"),
        None,  # the turn ended
    ]


def test_parallel_calls_stay_apart_and_one_ending_never_clears_its_sibling() -> None:
    seen: list[tuple[str | None, str] | None] = []

    async def step(args: dict[str, Any], ctx: Any) -> str:
        ctx.progress({"message": f"c{args['n']} started"})
        await anyio.sleep(0.01 * (3 - args["n"]))  # c2 finishes first
        ctx.progress({"rows": args["n"]})
        return "ok"

    tool = define_tool(name="step", description="S.", input_schema=SCHEMA, execute=step)
    calls = [{"id": f"c{i}", "name": "step", "args": {"n": i}} for i in (1, 2)]
    bubble = chat_bubble_live_status(
        on_line=lambda line: seen.append(None if line is None else (line.call_id, line.text))
    )
    agent = (
        Agent.create(provider=mock(replies=[{"tool_calls": calls}, "ok"]), model="m")
        .tool(tool)
        .live_status(strategy=bubble)
        .build()
    )
    assert agent.run_sync("go") == "ok"
    # the calls ran at once; their reports are emitted in call order once both are done
    # (so the record does not depend on which finished first), each call keeping its count
    assert seen == [
        (None, "Thinking…"),
        ("c1", "Running step…"),
        ("c2", "Running step…"),
        ("c1", "c1 started"),
        ("c1", "step is still working (2 reports so far)…"),
        ("c2", "Running step…"),  # c1 ended: the line of its sibling, still running, is back
        ("c2", "c2 started"),
        ("c2", "step is still working (2 reports so far)…"),
        None,
        (None, "Thinking…"),
        None,
    ]


def test_interleaved_reports_of_two_calls_and_two_runs_are_kept_apart() -> None:
    seen: list[StatusLine | None] = []
    bubble = chat_bubble_live_status(on_line=seen.append)
    voice = Agent.create(provider=mock(reply="x"), model="m").build().voice

    def report(run: str, call: str, payload: Any) -> None:
        bubble.heard(
            run, "stream.tool_progress", {"id": call, "name": "t", "payload": payload}, voice
        )

    report("r1", "a", {"n": 1})
    report("r1", "b", {"message": "b working"})
    report("r1", "a", {"n": 2})
    report("r2", "a", {"n": 1})  # another run's call "a": a count of its own
    assert [str(x) for x in seen] == [
        "t is still working (1 report so far)…",
        "b working",
        "t is still working (2 reports so far)…",
        "t is still working (1 report so far)…",
    ]
    bubble.ended("r2")  # the other run's turn ended: r1's newest line (a) is back
    assert (
        bubble.line is not None and bubble.line.call_id == "a" and "2 reports" in str(bubble.line)
    )
    bubble.heard("r1", "stream.tool_end", {"id": "b", "name": "t"}, voice)  # not shown: no change
    assert len(seen) == 5
    bubble.heard("r1", "stream.tool_end", {"id": "a", "name": "t"}, voice)
    assert seen[-1] is None and bubble.line is None
    report("r1", "a", {"n": 3})  # a call id used again starts its count afresh
    assert "1 report so far" in str(seen[-1])


def test_a_failing_on_line_does_not_break_the_run_and_is_reported() -> None:
    def boom(line: Any) -> None:
        raise RuntimeError("bubble gone")

    agent = _agent(strategy=chat_bubble_live_status(on_line=boom))
    assert agent.run_sync("walk") == "done"
    failures = agent.snapshot().recorder_failures
    assert failures and {f.recorder for f in failures} == {"live-status"}
    assert "bubble gone" in failures[0].error.message
    assert assert_law(agent) == 2


_TIMES = re.compile(rb'"(started_at|ended_at|duration|run_id)":("[^"]*"|-?[0-9][0-9.eE+-]*)')
_RUN_ID = re.compile(rb"run-[0-9a-f]{16}-[0-9a-f]{6}")


def _bytes(agent: Agent, tmp: Path, name: str) -> bytes:
    data = save_recording(agent, tmp / name).read_bytes()
    return _RUN_ID.sub(b"run-x", _TIMES.sub(rb'"\1":0', data))


def test_a_configured_live_status_and_voice_leave_the_record_byte_identical(
    tmp_path: Path,
) -> None:
    plain = _agent()
    plain.run_sync("walk")
    voiced = _agent(
        strategy=chat_bubble_live_status(on_line=lambda line: None),
        thinking={"tool.walk.progress": "{message}!"},
        app="Ada",
    )
    voiced.run_sync("walk")
    assert _bytes(plain, tmp_path, "a.json") == _bytes(voiced, tmp_path, "b.json")
    assert plain.spec().to_mermaid() == voiced.spec().to_mermaid()  # no stage
    assert set(plain.snapshot().state) == set(voiced.snapshot().state)  # no key
    assert plain.snapshot().state["settings"] == voiced.snapshot().state["settings"]
    assert assert_law(voiced) == 2
    assert replay(voiced.snapshot())  # agentless: nothing to rebuild


# -- commentary ----------------------------------------------------------------------------


def _weather_recording(tmp: Path) -> Path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    try:
        import weather_agent
    finally:
        sys.path.pop(0)
    agent = weather_agent.build_agent()
    agent.run_sync(weather_agent.QUESTION)
    return save_recording(agent, tmp / "weather-turn.json")


def test_commentary_narrates_the_weather_recording_in_the_third_person(tmp_path: Path) -> None:
    path = _weather_recording(tmp_path)
    told = commentary(path, app_name="Weatherbot")
    assert told == [
        "The user asked Weatherbot a question.",
        "Weatherbot asked the model offline.",
        "Weatherbot called weather.",
        "Weatherbot called weather.",
        "The weather tool finished (success).",
        "The weather tool finished (success).",
        "Weatherbot asked the model offline.",
        "Weatherbot called convert.",
        "Weatherbot called convert.",
        "The convert tool finished (success).",
        "The convert tool finished (success).",
        "Weatherbot asked the model offline.",
        "Weatherbot answered after 3 model call(s).",
    ]
    # agentless and from the replay alike: the replayed snapshot tells the same story
    assert commentary(replay(load_recording(path)), app_name="Weatherbot") == told
    own = commentary(path, templates={"tool.convert.start": "{app} converted a temperature."})
    assert own.count("Chatbot converted a temperature.") == 2
    assert "Chatbot called weather." in own


def test_commentary_tells_progress_as_a_fact_and_reads_an_agents_own_voice() -> None:
    agent = (
        Agent.create(
            provider=mock(
                replies=[{"tool_calls": [{"id": "c1", "name": "walk", "args": {"n": 1}}]}, "done"]
            ),
            model="m",
        )
        .tool(WALK)
        .app_name("Ada")
        .commentary_templates({"tool.walk.end": "{tool} done: {status}."})
        .build()
    )
    agent.run_sync("walk")
    told = commentary(agent)
    progress = "The walk tool reported progress while it was still running."
    assert told.count(progress) == 2  # the fact, twice; never "hop 1 of 3"
    assert not any("hop" in line for line in told)
    assert "Ada called walk." in told and "walk done: success." in told


def test_a_recording_with_progress_from_this_version_is_narrated_and_worded() -> None:
    """A recording kept from this version (tests/agent/fixtures/recording-live-v1.jsonl: two
    parallel walk_graph calls, each reporting a message, one of 141 characters, then
    numbers) replays without its agent, is narrated, and its recorded events word the same
    status lines a live bubble showed."""
    loaded = load_recording(Path(__file__).parent / "fixtures" / "recording-live-v1.jsonl")
    assert assert_law(loaded) == 2
    replayed = replay(loaded)
    assert [c.stage_path for c in replayed.history()] == [c.stage_path for c in loaded.history()]
    told = commentary(loaded, app_name="Walker")
    assert told == [
        "The user asked Walker a question.",
        "Walker asked the model m.",
        "Walker called walk_graph.",
        "Walker called walk_graph.",
        "The walk_graph tool reported progress while it was still running.",
        "The walk_graph tool reported progress while it was still running.",
        "The walk_graph tool finished (success).",
        "The walk_graph tool reported progress while it was still running.",
        "The walk_graph tool reported progress while it was still running.",
        "The walk_graph tool finished (success).",
        "Walker asked the model m.",
        "Walker answered after 2 model call(s).",
    ]
    shown: list[StatusLine | None] = []
    bubble = chat_bubble_live_status(on_line=shown.append)
    voice = Agent.create(provider=mock(reply="x"), model="m").build().voice
    for commit in loaded.history():
        for event in commit.events:
            bubble.heard(loaded.run_id, event.name, event.payload, voice)
    bubble.ended(loaded.run_id)
    assert [None if x is None else (x.call_id, x.text) for x in shown] == [
        (None, "Thinking…"),
        ("c1", "Running walk_graph…"),
        ("c2", "Running walk_graph…"),
        ("c1", "hop 1 of 2 " + "x" * 109 + "… (+21 more)"),
        ("c1", "walk_graph is still working (2 reports so far)…"),
        ("c2", "Running walk_graph…"),
        ("c2", "hop 1 of 2"),
        ("c2", "walk_graph is still working (2 reports so far)…"),
        None,
        (None, "Thinking…"),
        None,
    ]
