"""The agent's time layer: the clock a run declares, its rows, period lines in the person's
zone, the reader's time-reading rows, time asks on resume, and replay from the record."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import anyio
import orjson
import pytest

from tests.law import assert_law
from trackway.agent import (
    Agent,
    AgentBuildError,
    ClockRequiredError,
    InvalidAnswerError,
    InvalidRunInputError,
    TimeAnswerRefusedError,
    is_paused,
    load_recording,
    mock,
    replay,
    save_recording,
)
from trackway.engine import thaw, write_value
from trackway.tools import (
    Clock,
    ToolDefinitionError,
    absent,
    ask_human,
    define_tool,
    request_input,
)

FIXTURE = Path(__file__).parent / "fixtures" / "recording-time-v1.jsonl"
LA = "America/Los_Angeles"


def _failures(args: dict[str, Any], ctx: Any) -> Any:
    period = {
        "queried": {"from": "2026-10-09T15:00:00Z", "to": "2026-10-09T15:40:00Z"},
        "held": "unknown",
    }
    return absent(what="backup failures", checked=["the nightly export"], period=period)


FAILURES = define_tool(
    name="backup_failures",
    description="Failed backups in a window.",
    input_schema={"type": "object", "properties": {}},
    execute=_failures,
)


def _calls(*ids: str) -> dict[str, Any]:
    return {"tool_calls": [{"id": i, "name": "backup_failures", "args": {}} for i in ids]}


def desk(replies: list[Any], **time: Any) -> Agent:
    return (
        Agent.create(provider=mock(replies=replies), model="m")
        .tool(FAILURES)
        .time(**time)
        .limits_travel_with_the_answer()
        .build()
    )


def _ops(agent: Agent, drop_time: bool = False) -> list[tuple[str, list[tuple[str, str, bytes]]]]:
    """Each commit's stage and its ops as bytes (no times); ``drop_time``: without the
    clock stage, the time rows and the time setting."""
    out = []
    for c in agent.snapshot().history():
        if drop_time and c.stage_id == "clock":
            continue
        ops = []
        for op, key, raw, value in c.writes:
            if drop_time and key == "time_rows":
                continue
            if drop_time and key == "settings":
                raw = orjson.dumps(
                    {
                        k: v
                        for k, v in thaw(write_value((op, key, raw, value))).items()
                        if k != "time"
                    }
                )
            ops.append((op, key, raw))
        out.append((c.stage_id, ops))
    return out


def test_not_armed_mounts_no_stage_and_writes_no_key_the_rest_byte_identical():
    replies = [_calls("c1"), {"content": "None."}]
    plain = Agent.create(provider=mock(replies=replies), model="m").tool(FAILURES).build()
    plain.run_sync("any failures?")
    armed = (
        Agent.create(provider=mock(replies=replies), model="m").tool(FAILURES).time(zone="UTC")
    ).build()
    armed.run_sync("any failures?", time={"now": "2026-10-09T16:00:00Z"})
    assert "clock" not in plain.spec().graph and "clock" in armed.spec().graph
    state = plain.snapshot().state
    assert "time_rows" not in state and "time" not in state["settings"]
    assert plain.time_rows() == []
    # the armed run differs by its clock stage, its keys and nothing else
    assert _ops(armed, drop_time=True) == _ops(plain)
    assert [c.stage_id for c in armed.snapshot().history()][:2] == ["seed", "clock"]
    with pytest.raises(InvalidRunInputError, match="no time layer"):
        plain.run_sync("hi", time={"zone": "UTC"})
    with pytest.raises(InvalidRunInputError, match="no time layer"):  # every way in
        plain.turn_sync({"message": "hi", "time": {"zone": "UTC"}})
    with pytest.raises(ClockRequiredError):
        Agent.create(provider=mock(reply="x"), model="m").time().build().turn_sync("hi")


def test_the_clock_row_says_where_now_and_the_zone_came_from():
    heard: list[dict[str, Any]] = []
    agent = desk([_calls("c1", "c2"), {"content": "None."}], zone=LA)
    agent.on("time.clock", lambda event: heard.append(event))
    agent.run_sync("any?", time=Clock(now="2026-10-09T16:00:00Z", zone="Europe/London"))
    clock, *calls = agent.time_rows()
    assert clock == {
        "kind": "clock",
        "now": "2026-10-09T17:00:00+01:00",
        "now_source": "app",
        "zone": "Europe/London",
        "zone_source": "run",
        "offset": "UTC+01:00",
    }
    assert [(r["kind"], r["call_id"]) for r in calls] == [("call", "c1"), ("call", "c2")]
    for row in calls:  # the real clock at dispatch, shown in the person's zone
        at = datetime.fromisoformat(row["dispatched_at"])
        assert at.utcoffset() == at.astimezone(ZoneInfo("Europe/London")).utcoffset()
    assert len(heard) == 1
    agent = desk([{"content": "ok"}], zone=LA)
    agent.run_sync("hi")  # the real clock, the builder's zone
    (row,) = agent.time_rows()
    assert (row["now_source"], row["zone"], row["zone_source"]) == ("default", LA, "builder")
    assert row["offset"] in ("UTC-07:00", "UTC-08:00")
    assert agent.snapshot().state["settings"]["time"] == {
        "zone": LA,
        "policy": {"date_order": "ask", "year": "ask"},
    }


def test_a_run_with_no_zone_or_a_bad_one_is_refused_before_anything_runs():
    agent = desk([{"content": "ok"}])
    with pytest.raises(ClockRequiredError, match=r"time=\{'zone'"):
        agent.run_sync("hi")
    with pytest.raises(ClockRequiredError):
        agent.run_sync("hi", time={"now": "2026-10-09T16:00:00Z"})
    with pytest.raises(InvalidRunInputError, match="not an IANA zone"):
        agent.run_sync("hi", time={"zone": "PST"})
    with pytest.raises(InvalidRunInputError, match="no offset"):
        agent.run_sync("hi", time={"now": "2026-10-09T16:00:00", "zone": LA})
    with pytest.raises(InvalidRunInputError, match="unknown keys"):
        agent.run_sync("hi", time={"zone": LA, "tz": LA})
    with pytest.raises(AgentBuildError, match="not an IANA zone"):
        Agent.create(provider=mock(reply="x"), model="m").time(zone="Pacific Time")
    with pytest.raises(AgentBuildError, match="twice"):
        Agent.create(provider=mock(reply="x"), model="m").time(zone=LA).time(zone=LA)
    assert agent.commit_count() == 0  # nothing ran
    assert agent.run_sync({"message": "hi", "time": {"zone": LA}}) == "ok"  # the dict form


def test_a_stream_takes_the_runs_clock_and_refuses_a_run_without_one():
    agent = desk([{"content": "ok"}])
    with pytest.raises(ClockRequiredError):
        agent.stream("hi")
    clock = {"now": "2026-10-09T16:00:00Z", "zone": "Europe/London"}

    async def main() -> tuple[list[str], Any]:
        async with agent.stream("hi", time=clock) as events:
            names = [event.name async for event in events]
        return names, events.outcome

    names, outcome = anyio.run(main)
    assert outcome == "ok" and names  # events were heard as they came
    (row,) = agent.time_rows()
    assert (row["now"], row["zone_source"]) == ("2026-10-09T17:00:00+01:00", "run")


def test_period_lines_are_shown_in_the_persons_zone_the_zone_named():
    agent = desk([_calls("c1"), {"content": "None."}], zone=LA)
    answer = agent.run_sync("any?", time={"now": "2026-10-09T16:00:00Z"})
    assert answer.endswith(
        "Period:\n- backup_failures queried 2026-10-09 08:00–08:40 America/Los_Angeles "
        "(UTC-07:00); what the store holds is unknown"
    )
    # the data keeps the instants as the tool declared them
    assert agent.answer_coverage()["periods"][0]["queried"]["from"] == "2026-10-09T15:00:00Z"
    on_lord_howe = desk([_calls("c1"), {"content": "None."}], zone="Australia/Lord_Howe")
    assert "2026-10-10 02:00–02:40 Australia/Lord_Howe (UTC+11:00)" in on_lord_howe.run_sync("?")


def _replays(agent: Agent, tmp_path: Path) -> None:
    """The recording alone replays to the same writes (no agent, no clock, no reader)."""
    path = tmp_path / "run.jsonl"
    save_recording(agent, path)
    loaded = load_recording(path)
    assert [c.writes for c in replay(loaded).history()] == [c.writes for c in loaded.history()]


def test_a_resume_with_another_clock_gets_a_row_and_the_paused_turn_keeps_its_own(
    tmp_path: Path,
):
    asker = ask_human(question="Which host?")
    agent = (
        Agent.create(
            provider=mock(
                replies=[
                    {"tool_calls": [{"id": "q", "name": "ask_human", "args": {}}]},
                    {"content": "done"},
                ]
            ),
            model="m",
        )
        .tool(asker)
        .time(zone=LA)
        .build()
    )
    paused = agent.run_sync("check", time={"now": "2026-10-09T16:00:00Z"})
    assert is_paused(paused)
    later = {"now": "2026-10-10T09:00:00+11:00", "zone": "Australia/Sydney"}
    assert agent.resume_sync(paused.checkpoint, "db-1", time=later) == "done"
    rows = agent.time_rows()
    assert [r["kind"] for r in rows] == ["clock", "call", "clock-on-resume"]
    assert rows[0]["now"] == "2026-10-09T09:00:00-07:00"  # the paused turn's, as it was
    assert rows[2] | {"now": None} == {
        "kind": "clock-on-resume",
        "now": None,
        "now_source": "app",
        "zone": "Australia/Sydney",
        "zone_source": "run",
        "offset": "UTC+11:00",
    }
    assert_law(agent)
    _replays(agent, tmp_path)
    # the same clock again is no new row
    again = (
        Agent.create(
            provider=mock(
                replies=[{"tool_calls": [{"id": "q", "name": "ask_human", "args": {}}]}, "ok"]
            ),
            model="m",
        )
        .tool(asker)
        .time(zone=LA)
        .build()
    )
    paused = again.run_sync("check", time={"now": "2026-10-09T16:00:00Z"})
    again.resume_sync(paused.checkpoint, "db-1", time={"now": "2026-10-09T09:00:00-07:00"})
    assert [r["kind"] for r in again.time_rows()] == ["clock", "call"]


class FixtureReader:
    """The parts a tokenizer returns for "10/09/26 8 AM to 8:40 AM"; counts its reads."""

    id = "example/fixture"
    version = "1.0.0"
    locale = "en-US"
    kind = "rule"
    reads = 0

    def read(self, text: str) -> dict[str, Any]:
        FixtureReader.reads += 1
        quote = "10/09/26 8 AM to 8:40 AM"
        if quote not in text:
            return {"mentions": []}
        walls = [
            {"wall": {"h": 8, "meridiem": "am"}},
            {"wall": {"h": 8, "m": 40, "meridiem": "am"}},
        ]
        date = {"kind": "numeric", "fields": [10, 9, 26]}
        return {"mentions": [{"quote": quote, "parses": [{"date": date, "range_of": walls}]}]}


def reading_desk(policy: dict[str, str] | None = None) -> Agent:
    return (
        Agent.create(provider=mock(replies=[_calls("c1"), {"content": "None."}]), model="m")
        .tool(FAILURES)
        .time(zone=LA, reader=FixtureReader(), policy=policy)
        .build()
    )


def test_the_reader_runs_once_per_message_and_replay_reads_the_rows(tmp_path: Path):
    agent = reading_desk({"date_order": "MDY", "year": "nearest"})
    before = FixtureReader.reads
    agent.run_sync("Any failures 10/09/26 8 AM to 8:40 AM?", time={"now": "2026-10-09T16:00:00Z"})
    assert FixtureReader.reads == before + 1
    (reading,) = agent.time_rows("time-reading")
    assert reading["how"] == "policy"
    assert (reading["settled"]["from"], reading["settled"]["to"]) == (
        "2026-10-09T08:00:00-07:00",
        "2026-10-09T08:40:00-07:00",
    )
    assert reading["reader"]["id"] == "example/fixture"
    assert len(reading["candidates"]) == 6  # 3 orders x 2 readings of "26"
    path = tmp_path / "run.jsonl"
    save_recording(agent, path)
    loaded = load_recording(path)
    replayed = replay(loaded)  # no agent, no reader, no clock
    assert [c.writes for c in replayed.history()] == [c.writes for c in loaded.history()]
    replay(loaded, agent)
    assert FixtureReader.reads == before + 1  # a replay never reads again


def test_a_reading_left_open_is_put_to_the_person_and_the_choice_is_a_row(tmp_path: Path):
    agent = reading_desk()
    said = "Any failures 10/09/26 8 AM to 8:40 AM?"
    paused = agent.run_sync(said, time={"now": "2026-10-09T16:00:00Z"})
    assert is_paused(paused) and paused.kind == "time_choice"
    assert paused.question == "When you wrote “10/09/26 8 AM to 8:40 AM”, which did you mean?"
    assert paused.choices is not None and len(paused.choices) == 6
    assert "2026-10-09 08:00–08:40 America/Los_Angeles (UTC-07:00)" in paused.choices
    (row,) = agent.time_rows("time-reading")
    assert row["how"] == "ask" and row["settled"] is None and len(row["open"]) == 6
    with pytest.raises(InvalidAnswerError, match="answer with the index of a choice"):
        agent.resume_sync(paused.checkpoint, 6)
    chosen = {"from": "2026-10-09T08:00:00-07:00", "to": "2026-10-09T08:40:00-07:00"}
    assert agent.resume_sync(paused.checkpoint, chosen) == "None."
    (choice,) = agent.time_rows("time-choice")
    assert choice["by"] == "person" and choice["chosen"]["date_order"] == "MDY"
    assert agent.time_rows()[choice["reading"]]["kind"] == "time-reading"
    assert_law(agent)
    path = tmp_path / "run.jsonl"
    save_recording(agent, path)
    loaded = load_recording(path)
    replayed = replay(loaded)  # the recorded choice is given again; no reader runs
    assert [c.writes for c in replayed.history()] == [c.writes for c in loaded.history()]
    dropped = reading_desk()
    dropped.run_sync(said, time={"now": "2026-10-09T16:00:00Z"})
    assert dropped.abandon_pause_sync() is not None
    assert dropped.time_rows("time-choice")[0]["abandoned"] is True


def window_desk(**time: Any) -> Agent:
    collect = request_input(
        question="Which window should the search cover?",
        format="time-range",
        name="collect_window",
        labels={"from": "Start", "to": "End"},
    )
    script = [
        {"tool_calls": [{"id": "c1", "name": "collect_window", "args": {}}]},
        {"content": "No errors on checkout in that window."},
    ]
    return Agent.create(provider=mock(replies=script), model="m").tool(collect).time(**time).build()


def test_a_time_ask_refuses_an_answer_with_the_same_ask_and_a_repeat_count(tmp_path: Path):
    agent = window_desk(
        zone=LA,
        messages={"answer.out-of-order": "That window ends ({{to}}) before it starts ({{from}})."},
    )
    paused = agent.run_sync("errors?", time={"now": "2026-10-09T16:00:00Z"})
    assert is_paused(paused) and paused.format == "time-range" and paused.refused is None
    commits = agent.commit_count()
    backwards = {"from": "2026-10-09T08:40:00-07:00", "to": "2026-10-09T08:00:00-07:00"}
    again = agent.resume_sync(paused.checkpoint, backwards)
    assert again.refused == {
        "answer": backwards,
        "reason": "That window ends (2026-10-09T08:00:00-07:00) before it starts "
        "(2026-10-09T08:40:00-07:00).",
    }
    assert again.repeat == {"count": 1} and again.question == paused.question
    skipped = {"from": "2026-03-08T02:30:00-08:00", "to": "2026-03-08T04:00:00-07:00"}
    third = agent.resume_sync(again.checkpoint, skipped)
    assert third.refused["reason"].endswith(
        "the clocks in America/Los_Angeles skip; choose another."
    )
    assert third.repeat == {"count": 2}
    zoneless = agent.resume_sync(third.checkpoint, {"from": "2026-10-09T08:00:00", "to": "x"})
    assert "no offset" in zoneless.refused["reason"]
    assert agent.commit_count() == commits  # nothing ran
    with pytest.raises(TimeAnswerRefusedError) as info:  # the turn API raises it, with the ask
        agent.resume_turn_sync(paused.checkpoint, backwards)
    assert info.value.paused.repeat == {"count": 4}
    good = {"from": "2026-10-09T08:00:00-07:00", "to": "2026-10-09T08:40:00-07:00"}
    assert agent.resume_sync(paused.checkpoint, good) == "No errors on checkout in that window."
    (served,) = [m for m in agent.snapshot().state["history"] if m["role"] == "tool"]
    assert orjson.loads(served["content"]) == good
    assert_law(agent)
    _replays(agent, tmp_path)


def test_a_time_ask_without_a_time_layer_still_checks_its_answers():
    agent = (
        Agent.create(
            provider=mock(
                replies=[{"tool_calls": [{"id": "c1", "name": "when", "args": {}}]}, "ok"]
            ),
            model="m",
        )
        .tool(request_input(question="When?", format="instant", name="when"))
        .build()
    )
    paused = agent.run_sync("go")
    assert agent.resume_sync(paused.checkpoint, "tomorrow").refused["answer"] == "tomorrow"
    # without .time() no wall time is skipped: the instant is taken
    assert agent.resume_sync(paused.checkpoint, "2026-03-08T02:30:00-08:00") == "ok"
    assert "time_rows" not in agent.snapshot().state


def test_a_strict_time_ask_takes_only_its_choices_and_free_entry_stays_open_otherwise():
    zones = ["Europe/London", "America/New_York"]

    def ask_zone(strict: bool) -> Agent:
        tool = request_input(
            question="Your zone?", format="zone", name="zone", choices=zones, strict=strict
        )
        script = [{"tool_calls": [{"id": "z", "name": "zone", "args": {}}]}, "ok"]
        return Agent.create(provider=mock(replies=script), model="m").tool(tool).build()

    strict = ask_zone(True)
    paused = strict.run_sync("go")
    assert list(paused.choices) == zones
    again = strict.resume_sync(paused.checkpoint, "Asia/Tokyo")
    assert again.refused == {"answer": "Asia/Tokyo", "reason": "Choose one of the offered answers."}
    assert strict.resume_sync(paused.checkpoint, "Europe/London") == "ok"
    free = ask_zone(False)
    paused = free.run_sync("go")
    assert free.resume_sync(paused.checkpoint, "Asia/Tokyo") == "ok"
    with pytest.raises(ToolDefinitionError, match="not a zone answer"):
        request_input(question="?", format="zone", choices=["PST"])
    with pytest.raises(ToolDefinitionError, match="needs choices"):
        request_input(question="?", format="zone", strict=True)


def fixture_agent() -> Agent:
    """The run kept in ``fixtures/recording-time-v1.jsonl`` (made by this function): a run
    clock in New York across its fold, a reading, two calls, period lines in the zone."""
    return (
        Agent.create(provider=mock(replies=[_calls("c1", "c2"), {"content": "None."}]), model="m")
        .tool(FAILURES)
        .time(zone=LA, reader=FixtureReader(), policy={"date_order": "MDY", "year": "nearest"})
        .limits_travel_with_the_answer()
        .build()
    )


FIXTURE_RUN = {
    "message": "Failures 10/09/26 8 AM to 8:40 AM?",
    "time": {"now": "2026-11-01T01:30:00-05:00", "zone": "America/New_York"},
}


def test_a_recording_from_this_version_loads_and_replays():
    loaded = load_recording(FIXTURE)
    assert assert_law(loaded) == 2
    state = thaw(loaded.state)
    assert state["settings"]["time"]["reader"]["id"] == "example/fixture"
    kinds = [r["kind"] for r in state["time_rows"]]
    assert kinds == ["clock", "time-reading", "call", "call"]
    assert state["time_rows"][0]["offset"] == "UTC-05:00"  # the second 01:30 of the fold
    assert "America/New_York (UTC-04:00)" in state["final_answer"]
    replayed = replay(loaded)  # no agent, no reader, no clock: the rows are read
    assert [c.writes for c in replayed.history()] == [c.writes for c in loaded.history()]
    fresh = fixture_agent()
    fresh.run_sync(FIXTURE_RUN)
    rows = fresh.time_rows()
    for row in rows:
        row.pop("dispatched_at", None)
    assert rows == [
        {k: v for k, v in r.items() if k != "dispatched_at"} for r in state["time_rows"]
    ]


if __name__ == "__main__":  # python -m tests.agent.test_time_layer: writes the fixture
    made = fixture_agent()
    made.run_sync(FIXTURE_RUN)
    save_recording(made, FIXTURE)
