"""Periods: the checks where a tool declares one, the wire form, and the one verdict."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trackway.tools.results._coverage_items import DeclarationRefused
from trackway.tools.results._period import (
    PERIOD_VERDICTS,
    PERIOD_WIRE,
    check_instant,
    check_period,
    check_provenance,
    period_verdict,
)

Q = {"from": "2026-09-26T09:00:00Z", "to": "2026-09-26T10:00:00Z"}


def _period(held: Any, queried: Any = Q, **extra: Any) -> dict[str, Any]:
    return {"queried": queried, "held": held, **extra}


def test_wire_constants_are_pinned() -> None:
    assert PERIOD_WIRE == {
        "key": "period",
        "queried": "queried",
        "held": "held",
        "read_at": "read_at",
        "from": "from",
        "to": "to",
        "unknown": "unknown",
    }
    assert PERIOD_VERDICTS == ("covered", "partly-held", "not-held", "unknown")


def test_a_period_is_kept_exactly_as_written() -> None:
    period = _period(
        {"from": "2026-08-27T04:00:00+02:00", "to": "2026-09-26T02:00:00.250000Z"},
        read_at="2026-09-26T10:05:00-07:00",
    )
    out = check_period(period)
    assert out == period
    assert list(out) == ["queried", "held", "read_at"]
    assert out is not period and out["queried"] is not period["queried"]
    assert check_period(_period("unknown")) == {"queried": Q, "held": "unknown"}


@pytest.mark.parametrize("instant", ["2026-09-26T09:00:00Z", "2026-09-26T11:00:00+02:00"])
def test_instants_with_a_zone_are_taken(instant: str) -> None:
    assert check_instant(instant, "x") == instant


@pytest.mark.parametrize(
    ("period", "field", "phrase"),
    [
        (_period("unknown", {"from": "2026-09-26T09:00:00", "to": Q["to"]}), "period.queried.from",
         "an instant needs a zone"),
        (_period("unknown", {"from": "2026-09-26", "to": Q["to"]}), "period.queried.from",
         "2026-09-26T09:00:00Z"),
        (_period("unknown", {"from": "yesterday", "to": Q["to"]}), "period.queried.from",
         "not an ISO 8601 instant"),
        (_period("unknown", {"from": datetime.now(UTC), "to": Q["to"]}), "period.queried.from",
         "not datetime"),
        (_period("unknown", {"from": Q["from"]}), "period.queried.to", "needs `to`"),
        (_period("unknown", {"start": Q["from"], "to": Q["to"]}), "period.queried.start",
         "not read here"),
        (_period("unknown", ["a", "b"]), "period.queried", "must be a mapping"),
        (_period("unknown", {"from": "2026-09-26T10:00:01Z", "to": Q["to"]}), "period.queried",
         "after it ends"),
        # 09:30Z is after 11:00+02:00 (= 09:00Z): instants are compared, not the text.
        (_period("unknown", {"from": "2026-09-26T09:30:00Z", "to": "2026-09-26T11:00:00+02:00"}),
         "period.queried", "after it ends"),
        (_period({"from": Q["to"], "to": Q["from"]}), "period.held", "swap"),
        (_period("Unknown"), "period.held", "'unknown'"),
        (_period(None), "period.held", "must be a mapping"),
        ({"queried": Q}, "period.held", "needs `held`"),
        ({"held": "unknown"}, "period.queried", "needs `queried`"),
        (_period("unknown", readAt=Q["to"]), "period.readAt", "did you mean read_at?"),
        (_period("unknown", read_at="2026-09-26T10:00:00"), "period.read_at", "needs a zone"),
        ("2026-09-26T09:00:00Z/2026-09-26T10:00:00Z", "period", "must be a mapping"),
    ],
)  # fmt: skip
def test_a_bad_period_is_refused(period: Any, field: str, phrase: str) -> None:
    with pytest.raises(DeclarationRefused) as caught:
        check_period(period)
    assert caught.value.field == field
    assert phrase in caught.value.message
    assert str(caught.value) == f"{caught.value.message} (field: {field})"


def test_from_equal_to_is_a_moment_and_is_taken() -> None:
    moment = {"from": Q["from"], "to": Q["from"]}
    assert period_verdict(_period(moment, moment)) == "covered"


def test_different_zones_for_one_span_are_compared_as_instants() -> None:
    # 10:00+02:00 is 08:00Z, before 09:00Z: this span runs forwards.
    span = {"from": "2026-09-26T10:00:00+02:00", "to": "2026-09-26T09:00:00Z"}
    assert check_period(_period(span, span))["queried"] == span


@pytest.mark.parametrize(
    ("held", "verdict"),
    [
        ("unknown", "unknown"),
        ({"from": Q["from"], "to": Q["to"]}, "covered"),  # bounds inclusive
        ({"from": "2026-08-27T02:00:00Z", "to": "2026-09-27T02:00:00Z"}, "covered"),
        # the same instants written in another zone
        ({"from": "2026-09-26T11:00:00+02:00", "to": "2026-09-26T12:00:00+02:00"}, "covered"),
        ({"from": "2026-09-26T11:00:00+02:00", "to": "2026-09-26T11:59:59+02:00"}, "partly-held"),
        ({"from": "2026-08-27T02:00:00Z", "to": "2026-09-26T09:30:00Z"}, "partly-held"),
        ({"from": "2026-09-26T09:30:00Z", "to": "2026-09-26T12:00:00Z"}, "partly-held"),
        ({"from": "2026-09-26T09:10:00Z", "to": "2026-09-26T09:20:00Z"}, "partly-held"),
        # touching at one instant is an overlap (bounds inclusive)
        ({"from": "2026-08-27T02:00:00Z", "to": Q["from"]}, "partly-held"),
        ({"from": Q["to"], "to": "2026-09-27T00:00:00Z"}, "partly-held"),
        ({"from": "2026-08-27T02:00:00Z", "to": "2026-09-26T08:59:59Z"}, "not-held"),
        ({"from": "2026-08-27T02:00:00Z", "to": "2026-09-26T02:00:00Z"}, "not-held"),
        ({"from": "2026-09-26T10:00:01Z", "to": "2026-09-27T00:00:00Z"}, "not-held"),
        ({"from": "2026-08-27T02:00:00Z", "to": "2026-09-26T10:59:59+02:00"}, "not-held"),
    ],
)
def test_period_verdict(held: Any, verdict: str) -> None:
    assert period_verdict(_period(held)) == verdict
    assert verdict in PERIOD_VERDICTS


def test_period_verdict_refuses_a_bad_period() -> None:
    with pytest.raises(DeclarationRefused) as caught:
        period_verdict({"queried": Q, "held": {"from": "2026-09-26T09:00:00", "to": Q["to"]}})
    assert caught.value.field == "period.held.from"


_ZONES = st.sampled_from([UTC, timezone(timedelta(hours=2)), timezone(timedelta(hours=-7))])
_BASE = datetime(2026, 9, 26, tzinfo=UTC)


def _at(minutes: int, zone: timezone) -> str:
    return (_BASE + timedelta(minutes=minutes)).astimezone(zone).isoformat()


@given(st.lists(st.integers(0, 200), min_size=4, max_size=4), st.lists(_ZONES, min_size=4,
       max_size=4))  # fmt: skip
def test_verdict_follows_the_instants_whatever_the_zone(
    bounds: list[int], zones: list[timezone]
) -> None:
    q_from, q_to = sorted(bounds[:2])
    h_from, h_to = sorted(bounds[2:])
    period = {
        "queried": {"from": _at(q_from, zones[0]), "to": _at(q_to, zones[1])},
        "held": {"from": _at(h_from, zones[2]), "to": _at(h_to, zones[3])},
    }
    if h_from <= q_from and q_to <= h_to:
        expected = "covered"
    elif h_from <= q_to and q_from <= h_to:
        expected = "partly-held"
    else:
        expected = "not-held"
    assert period_verdict(period) == expected


def test_provenance_is_checked_by_the_same_instant_rule() -> None:
    good = {"measured_at": "2026-08-19T10:12:00Z", "source": "nightly export"}
    assert check_provenance(good) == good
    with pytest.raises(DeclarationRefused) as caught:
        check_provenance({"measured_at": "2026-08-19T10:12:00", "source": "x"})
    assert caught.value.field == "provenance.measured_at"
    assert "needs a zone" in caught.value.message
