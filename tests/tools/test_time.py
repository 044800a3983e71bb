"""The time layer's pure part: zones, instants, candidates (date orders, am/pm, DST gaps and
folds), the policy, time asks and their MCP elicitations."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, available_timezones

import anyio
import mcp.types
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.server.mcpserver import Context, MCPServer

from tests.examples import examples
from trackway.engine import ConfigurationError
from trackway.tools.time import (
    DEFAULT_TIME_ASK_MESSAGES,
    Clock,
    InstantError,
    UnknownZoneError,
    answer_from_elicitation,
    candidates_of,
    check_messages,
    check_policy,
    check_time_answer,
    elicitation_of,
    offset_label,
    parse_instant,
    settle,
    time_readings,
    wall_instants,
    zone_of,
)

ZONES = sorted(available_timezones())
LOCAL = st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2037, 12, 31))


def _brute_instants(wall: datetime, zone: ZoneInfo) -> set[datetime]:
    """Every UTC instant whose wall clock in ``zone`` reads ``wall``, found without
    zoneinfo's fold logic: try each offset the zone uses within two days of it."""
    naive_utc = wall.replace(tzinfo=UTC)
    offsets = {
        (naive_utc + timedelta(hours=h)).astimezone(zone).utcoffset() for h in range(-50, 51)
    }
    found = set()
    for offset in offsets:
        assert offset is not None
        u = naive_utc - offset
        if u.astimezone(zone).replace(tzinfo=None) == wall:
            found.add(u)
    return found


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(zone=st.sampled_from(ZONES), wall=LOCAL.map(lambda d: d.replace(second=0, microsecond=0)))
def test_wall_instants_are_exactly_the_instants_the_clocks_read_so(zone: str, wall: datetime):
    place = ZoneInfo(zone)
    found, kind = wall_instants(wall.date(), wall.time(), place)
    expected = _brute_instants(wall, place)
    assert {f.astimezone(UTC) for f in found} == expected
    assert kind == {0: "gap", 1: "one", 2: "fold"}[len(expected)]
    for moment in found:  # each reads back as the wall time asked for
        assert moment.astimezone(UTC).astimezone(place).replace(tzinfo=None) == wall
    assert [f.astimezone(UTC) for f in found] == sorted(f.astimezone(UTC) for f in found)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    zone=st.sampled_from(ZONES),
    fields=st.tuples(st.integers(1, 31), st.integers(1, 31), st.integers(0, 99)),
    start=st.tuples(st.integers(0, 23), st.integers(0, 59)),
    stated=st.booleans(),
)
def test_every_candidate_is_an_instant_whose_wall_time_reads_back_as_the_parts(
    zone: str, fields: tuple[int, int, int], start: tuple[int, int], stated: bool
):
    place = ZoneInfo(zone)
    h, m = start
    wall = (
        {"h": h % 12 or 12, "m": m, "meridiem": "pm" if h >= 12 else "am"}
        if stated
        else {"h": h, "m": m}
    )
    now = datetime(2026, 6, 1, 12, tzinfo=UTC)
    parse = {"date": {"kind": "numeric", "fields": list(fields)}, "at": {"wall": wall}}
    out = candidates_of(parse, place, now)
    a, b, c = fields
    for cand in out["candidates"]:
        moment = parse_instant(cand["from"]).astimezone(place)
        y, mo, d = (int(x) for x in cand["date"].split("-"))
        assert (moment.year, moment.month, moment.day) == (y, mo, d)
        assert y % 100 in (a, b, c)
        ordered = {"DMY": (a, b, c), "MDY": (b, a, c), "YMD": (c, b, a)}[cand["date_order"]]
        assert (d, mo, y % 100) == ordered
        assert moment.minute == m
        if stated:
            assert moment.hour == h
        else:
            assert moment.hour in {h, (h + 12) % 24} if 1 <= h <= 12 else moment.hour == h
    for gone in out["dropped"]:  # a dropped wall time really is skipped
        assert gone["reason"] == "gap"
        day, clock = date.fromisoformat(gone["date"]), time.fromisoformat(gone["wall"])
        assert not _brute_instants(datetime.combine(day, clock), place)


@pytest.mark.parametrize(
    ("zone", "day", "wall", "kind", "offsets"),
    [
        ("Europe/London", date(2026, 3, 29), time(1, 30), "gap", []),
        ("Europe/London", date(2026, 10, 25), time(1, 30), "fold", ["+01:00", "+00:00"]),
        ("America/New_York", date(2026, 3, 8), time(2, 30), "gap", []),
        ("America/New_York", date(2026, 11, 1), time(1, 30), "fold", ["-04:00", "-05:00"]),
        ("Australia/Lord_Howe", date(2026, 10, 4), time(2, 15), "gap", []),
        ("Australia/Lord_Howe", date(2026, 10, 4), time(2, 30), "one", ["+11:00"]),
        ("Australia/Lord_Howe", date(2026, 4, 5), time(1, 45), "fold", ["+11:00", "+10:30"]),
        ("Australia/Lord_Howe", date(2026, 4, 5), time(2, 0), "one", ["+10:30"]),
    ],
)
def test_dst_edges(zone: str, day: date, wall: time, kind: str, offsets: list[str]):
    found, got = wall_instants(day, wall, ZoneInfo(zone))
    assert got == kind
    assert [f.isoformat()[-6:] for f in found] == offsets
    if kind == "fold":  # the two instants are one shift apart: 30 minutes on Lord Howe
        shift = found[1].astimezone(UTC) - found[0].astimezone(UTC)
        assert shift == timedelta(minutes=30 if zone == "Australia/Lord_Howe" else 60)


def test_a_range_over_a_fold_has_every_pairing_in_order_and_a_gap_is_dropped():
    london = ZoneInfo("Europe/London")
    now = datetime(2026, 10, 1, tzinfo=UTC)
    parse = {
        "date": {"kind": "calendar", "y": 2026, "m": 10, "d": 25},
        "range_of": [
            {"wall": {"h": 1, "m": 10, "meridiem": "am"}},
            {"wall": {"h": 1, "m": 50, "meridiem": "am"}},
        ],
    }
    out = candidates_of(parse, london, now)
    pairs = [(c["from"], c["to"], c["fold"]) for c in out["candidates"]]
    assert pairs == [
        ("2026-10-25T01:10:00+01:00", "2026-10-25T01:50:00+01:00", [0, 0]),
        ("2026-10-25T01:10:00+01:00", "2026-10-25T01:50:00+00:00", [0, 1]),
        ("2026-10-25T01:10:00+00:00", "2026-10-25T01:50:00+00:00", [1, 1]),
    ]
    assert [d["reason"] for d in out["dropped"]] == ["ends-before-start"]
    spring = {**parse, "date": {"kind": "calendar", "y": 2026, "m": 3, "d": 29}}
    gone = candidates_of(spring, london, now)
    assert gone["candidates"] == []
    assert gone["dropped"] == [{"date": "2026-03-29", "wall": "01:10:00", "reason": "gap"}]


class FixtureReader:
    """The parts a tokenizer returns for "10/09/26 8 AM to 8:40 AM"."""

    id = "example/fixture"
    version = "1.0.0"
    locale = "en-US"
    kind = "rule"

    def __init__(self) -> None:
        self.reads = 0

    def read(self, text: str) -> dict:
        self.reads += 1
        quote = "10/09/26 8 AM to 8:40 AM"
        if quote not in text:
            return {"mentions": []}
        walls = [
            {"wall": {"h": 8, "meridiem": "am"}},
            {"wall": {"h": 8, "m": 40, "meridiem": "am"}},
        ]
        date_ = {"kind": "numeric", "fields": [10, 9, 26]}
        return {"mentions": [{"quote": quote, "parses": [{"date": date_, "range_of": walls}]}]}


def test_the_policy_settles_or_leaves_the_choice_open():
    now = parse_instant("2026-10-09T09:00:00-07:00")
    text = "any errors 10/09/26 8 AM to 8:40 AM?"
    zone = "America/Los_Angeles"
    open_ = time_readings(FixtureReader(), text, zone=zone, now=now, policy=check_policy(None))[0]
    assert open_["how"] == "ask" and open_["settled"] is None
    assert {(c["date_order"], c["date"][:4]) for c in open_["open"]} == {
        ("DMY", "2026"), ("DMY", "1926"), ("MDY", "2026"), ("MDY", "1926"),
        ("YMD", "2010"), ("YMD", "2110"),
    }  # fmt: skip
    policy = check_policy({"date_order": "MDY", "year": "nearest"})
    row = time_readings(FixtureReader(), text, zone=zone, now=now, policy=policy)[0]
    assert row["how"] == "policy"
    assert (row["settled"]["from"], row["settled"]["to"]) == (
        "2026-10-09T08:00:00-07:00",
        "2026-10-09T08:40:00-07:00",
    )
    assert row["reader"] == {
        "id": "example/fixture",
        "version": "1.0.0",
        "locale": "en-US",
        "kind": "rule",
    }
    assert row["quote"] == "10/09/26 8 AM to 8:40 AM"
    assert time_readings(FixtureReader(), "nothing", zone=zone, now=now, policy=policy) == []
    assert settle([], policy)["how"] == "no-candidate"
    with pytest.raises(ConfigurationError, match="date_order='DM'"):
        check_policy({"date_order": "DM"})
    with pytest.raises(ConfigurationError, match="unknown keys"):
        check_policy({"order": "MDY"})


def test_zones_and_instants_are_checked():
    assert zone_of("Australia/Lord_Howe").key == "Australia/Lord_Howe"
    for bad in ("PST", "Mars/Olympus", "", None, "../etc/passwd"):
        with pytest.raises(UnknownZoneError, match="IANA"):
            zone_of(bad)
    with pytest.raises(InstantError, match="no offset"):
        parse_instant("2026-10-09T08:00:00")
    with pytest.raises(InstantError, match="not an ISO 8601"):
        parse_instant("tomorrow")
    assert parse_instant("2026-10-09T15:00:00Z") == datetime(2026, 10, 9, 15, tzinfo=UTC)
    assert offset_label(timedelta(hours=-7)) == "UTC-07:00"
    assert offset_label(timedelta(hours=10, minutes=30)) == "UTC+10:30"
    with pytest.raises(InstantError):
        Clock(now=datetime(2026, 1, 1))
    with pytest.raises(UnknownZoneError):
        Clock(zone="CET-ish")
    assert Clock("2026-01-01T00:00:00Z", "UTC").instant() == datetime(2026, 1, 1, tzinfo=UTC)


INSTANTS = st.datetimes(
    min_value=datetime(1980, 1, 1), max_value=datetime(2035, 1, 1), timezones=st.just(UTC)
)


@settings(max_examples=examples(200), deadline=None)
@given(a=INSTANTS, b=INSTANTS, zone=st.sampled_from(ZONES))
def test_a_range_is_taken_in_order_and_refused_out_of_order(a: datetime, b: datetime, zone: str):
    first, last = sorted((a, b))
    place = ZoneInfo(zone)
    span = {"from": first.astimezone(place).isoformat(), "to": last.astimezone(place).isoformat()}
    assert check_time_answer("time-range", span, zone=zone) is None
    if first != last:
        back = {"from": span["to"], "to": span["from"]}
        refused = check_time_answer("time-range", back, zone=zone)
        assert refused is not None and refused["key"] == "answer.out-of-order"
        assert refused["answer"] == back
        assert refused["reason"] == (
            f"That window ends ({span['from']}) before it starts ({span['to']})."
        )


def test_time_asks_refuse_with_their_sentences_and_take_rewordings():
    la = "America/Los_Angeles"
    cases = [
        ("instant", "2026-10-09T08:00:00", "answer.no-offset"),
        ("instant", "soon", "answer.not-an-instant"),
        ("instant", 5, "answer.not-an-instant"),
        ("instant", "2026-03-08T02:30:00-08:00", "answer.skipped-wall-time"),
        ("time-range", {"from": "2026-10-09T08:00:00-07:00"}, "answer.not-a-range"),
        (
            "time-range",
            {"from": "2026-10-09T08:00:00", "to": "2026-10-09T09:00:00-07:00"},
            "answer.no-offset",
        ),
        ("time-range", "2026-10-09T09:00:00Z/2026-10-09T08:00:00Z", "answer.out-of-order"),
        ("zone", "", "answer.no-zone"),
        ("zone", "PST", "answer.unknown-zone"),
    ]
    for fmt, answer, key in cases:
        refused = check_time_answer(fmt, answer, zone=la)
        assert refused is not None and refused["key"] == key, (fmt, answer)
        assert refused["reason"] and "{{" not in refused["reason"]
    # the same wall time written in UTC is an instant that exists: taken
    assert check_time_answer("instant", "2026-03-08T02:30:00+00:00", zone=la) is None
    # without the person's zone nothing is skipped
    assert check_time_answer("instant", "2026-03-08T02:30:00-08:00") is None
    assert check_time_answer("zone", "Australia/Lord_Howe") is None
    assert check_time_answer("time-range", "2026-10-09T08:00:00Z/2026-10-09T09:00:00Z") is None
    said = check_messages({"answer.unknown-zone": "No zone called {{answer}}."})
    refused = check_time_answer("zone", "PST", messages=said)
    assert refused is not None and refused["reason"] == "No zone called PST."
    refused = check_time_answer("instant", "2026-10-09T08:00:00", zone=la)
    assert refused is not None
    assert refused["reason"] == DEFAULT_TIME_ASK_MESSAGES["answer.no-offset"].replace(
        "{{answer}}", "2026-10-09T08:00:00"
    )
    with pytest.raises(ConfigurationError, match="unknown keys"):
        check_messages({"answer.late": "x"})


def test_elicitations_carry_the_asks_over_mcp():
    ask = {"question": "Which window?", "format": "time-range", "labels": {"from": "Start"}}
    request = elicitation_of(ask)
    assert request["message"] == "Which window?"
    schema = request["requestedSchema"]
    assert schema["required"] == ["from", "to"]
    assert {p["format"] for p in schema["properties"].values()} == {"date-time"}
    assert schema["properties"]["from"]["title"] == "Start"
    # the MCP SDK takes it as an elicitation request, as sent over the wire
    params = mcp.types.ElicitRequestFormParams.model_validate(request)
    wire = params.model_dump(by_alias=True, exclude_none=True)
    assert wire["requestedSchema"] == schema
    content = {"from": "2026-10-09T08:00:00-07:00", "to": "2026-10-09T08:40:00-07:00"}
    result = mcp.types.ElicitResult(action="accept", content=content)
    assert result.content is not None
    answer = answer_from_elicitation(ask, result.content)
    assert answer == content
    assert check_time_answer("time-range", answer) is None
    zone_ask = {"question": "Your zone?", "format": "zone", "choices": ["Europe/London", "UTC"]}
    free = elicitation_of(zone_ask)["requestedSchema"]["properties"]["zone"]
    assert "enum" not in free and free["description"].endswith("Europe/London, UTC.")
    strict = elicitation_of({**zone_ask, "strict": True})["requestedSchema"]["properties"]
    assert strict["zone"]["enum"] == ["Europe/London", "UTC"]
    assert answer_from_elicitation(zone_ask, {"zone": "UTC"}) == "UTC"
    with pytest.raises(ConfigurationError, match="has no to"):
        answer_from_elicitation(ask, {"from": content["from"]})
    with pytest.raises(ConfigurationError, match="format None"):
        elicitation_of({"question": "?"})


def test_a_time_ask_round_trips_as_an_mcp_elicitation_through_the_sdk():
    """A server written with the SDK elicits the ask from a client with the SDK's own
    session (in-process): the client sees the request elicitation_of made, and its answer
    comes back through answer_from_elicitation to the same check."""
    ask = {"question": "Which window should the search cover?", "format": "time-range"}
    server = MCPServer("time-asks")

    @server.tool()
    async def collect_window(ctx: Context) -> str:
        request = elicitation_of(ask)
        result = await ctx.session.elicit_form(request["message"], request["requestedSchema"])
        if result.action != "accept" or result.content is None:
            return result.action
        answer = answer_from_elicitation(ask, result.content)
        refused = check_time_answer("time-range", answer, zone="America/Los_Angeles")
        return "taken" if refused is None else refused["reason"]

    given = [
        {"from": "2026-10-09T08:40:00-07:00", "to": "2026-10-09T08:00:00-07:00"},
        {"from": "2026-10-09T08:00:00-07:00", "to": "2026-10-09T08:40:00-07:00"},
    ]
    seen: list[mcp.types.ElicitRequestParams] = []

    async def on_elicit(context: object, params: mcp.types.ElicitRequestParams) -> object:
        seen.append(params)
        return mcp.types.ElicitResult(action="accept", content=given[len(seen) - 1])

    async def main() -> list[str]:
        said = []
        async with mcp.Client(server, elicitation_callback=on_elicit, mode="legacy") as client:
            for _ in given:
                out = await client.call_tool("collect_window", {})
                said.append(out.content[0].text)
        return said

    assert anyio.run(main) == [
        "That window ends (2026-10-09T08:00:00-07:00) before it starts "
        "(2026-10-09T08:40:00-07:00).",
        "taken",
    ]
    assert seen[0].message == ask["question"]
    assert seen[0].requested_schema == elicitation_of(ask)["requestedSchema"]
