"""The time layer's part of a run: the clock a run declares (checked before anything runs),
the ``clock`` stage that commits it as a row (and the reader's time-reading rows), a
dispatch-time row per tool call, and a clock-on-resume row when a resume brings another
clock. Every row goes to the ``time_rows`` state key, in order; ``settings["time"]`` says
how the layer was configured, so a replay rebuilds it without code."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from trackway.engine import Scope, thaw
from trackway.tools.time import (
    Clock,
    InstantError,
    TimeReader,
    UnknownZoneError,
    instant_text,
    offset_label,
    parse_instant,
    time_readings,
    zone_of,
)
from trackway.tools.time._clock import utc_now
from trackway.tools.time._reading import reader_info

from ..context._config import emit
from ..messages._errors import ClockRequiredError, InvalidRunInputError
from ._choice import choice_question, chosen_row

__all__ = [
    "TIME_ROWS",
    "TimeLayer",
    "call_dispatched",
    "check_clock",
    "clock_input",
    "clock_resumed",
    "clock_stage",
    "person_zone",
    "resume_value",
    "resumed_clock",
    "time_settings",
]

TIME_ROWS = "time_rows"
"""The state key of the time layer's rows (``kind``: ``clock``, ``time-reading``, ``call``,
``clock-on-resume``)."""


@dataclass(frozen=True)
class TimeLayer:
    """``.time(...)`` as the stages use it. ``clock`` is the real clock (UTC); a replay's
    reads the recorded instants instead, and ``recorded`` holds the recorded time-reading
    rows (a replay never runs the reader)."""

    zone: str | None
    reader: TimeReader | None
    policy: dict[str, str]
    messages: dict[str, str]
    reader_record: dict[str, str] | None = None
    clock: Callable[[], datetime] = utc_now
    recorded: list[dict[str, Any]] | None = field(default=None, compare=False)

    def record(self) -> dict[str, Any]:
        """What ``settings["time"]`` holds (a replay rebuilds the layer from it)."""
        out: dict[str, Any] = {"zone": self.zone, "policy": dict(self.policy)}
        if self.messages:
            out["messages"] = dict(self.messages)
        info = self.reader_record or (None if self.reader is None else reader_info(self.reader))
        if info is not None:
            out["reader"] = info
        return out

    @property
    def reads(self) -> bool:
        return self.reader is not None or self.reader_record is not None


def time_settings(layer: TimeLayer | None, settings: dict[str, Any]) -> None:
    """``seed``'s hook: ``settings["time"]`` when the layer is armed (only then)."""
    if layer is not None:
        settings["time"] = layer.record()


def clock_input(value: Any) -> dict[str, Any] | None:
    """A run's ``time=`` (a :class:`Clock`, or ``{"now": ..., "zone": ...}`` with either
    left out) as ``{"now": ISO | None, "zone": str | None}``; refused when it cannot be."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - {"now", "zone"})
        if unknown:
            raise InvalidRunInputError(
                f"time= has unknown keys {unknown}; give {{'now': ..., 'zone': ...}} (either "
                "may be left out) or Clock(now, zone)"
            )
        try:
            value = Clock(now=value.get("now"), zone=value.get("zone"))
        except (InstantError, UnknownZoneError) as exc:
            raise InvalidRunInputError(f"time=: {exc}") from None
    if not isinstance(value, Clock):
        raise InvalidRunInputError(
            f"time={value!r}: give {{'now': <ISO instant with offset>, 'zone': <IANA name>}} "
            "or Clock(now, zone)"
        )
    now = value.instant()
    return {"now": None if now is None else instant_text(now), "zone": value.zone}


def check_clock(layer: TimeLayer | None, given: Mapping[str, Any] | None, where: str) -> None:
    """Before a run: a clock given to an agent without ``.time()``, or a run under it with
    no zone at all, is refused (nothing runs)."""
    if layer is None:
        if given is not None:
            raise InvalidRunInputError(
                f"{where}(time=...) gives a clock, but this agent has no time layer: add "
                ".time(zone=...) to the builder, or leave time= out"
            )
        return
    if (given is None or given.get("zone") is None) and layer.zone is None:
        raise ClockRequiredError(
            f"this agent keeps a clock (.time()), and the run names no zone: pass "
            f"{where}(..., time={{'zone': 'Europe/London'}}) with the person's IANA zone, or "
            "give the builder a fallback, .time(zone=...). The server's zone is never used"
        )


def _clock_row(layer: TimeLayer, given: Mapping[str, Any] | None, kind: str) -> dict[str, Any]:
    given = given or {}
    zone, zone_source = (
        (given["zone"], "run") if given.get("zone") is not None else (layer.zone, "builder")
    )
    if zone is None:  # check_clock refuses this before a run; a turn started elsewhere
        raise ClockRequiredError(
            "the run names no zone and the builder has none: pass time={'zone': ...} or "
            ".time(zone=...)"
        )
    if given.get("now") is not None:
        now, now_source = parse_instant(given["now"]), "app"
    else:
        now, now_source = layer.clock(), "default"
    local = now.astimezone(zone_of(zone))
    return {
        "kind": kind,
        "now": instant_text(local),
        "now_source": now_source,
        "zone": zone,
        "zone_source": zone_source,
        "offset": offset_label(local.utcoffset()),
    }


def clock_stage(layer: TimeLayer) -> Callable[[Scope], None]:
    """The ``clock`` stage (after ``seed``): the turn's clock row, then, with a reader, one
    time-reading row per mention in the person's message (the reader runs once per turn)."""

    def clock(scope: Scope) -> None:
        given = scope.get("time")
        row = _clock_row(layer, None if given is None else thaw(given), "clock")
        scope.append(TIME_ROWS, row)
        _held(scope)["zone"] = row["zone"]
        emit(scope, "time.clock", row)
        if not layer.reads or scope.get("retry"):
            return
        if layer.recorded is not None:  # a replay: the rows as the reader left them
            readings = [r for r in layer.recorded if r.get("kind") == "time-reading"]
        else:
            assert layer.reader is not None
            readings = [
                {"kind": "time-reading", **r}
                for r in time_readings(
                    layer.reader,
                    scope["user_message"],
                    zone=row["zone"],
                    now=parse_instant(row["now"]),
                    policy=layer.policy,
                )
            ]
        for reading in readings:
            scope.append(TIME_ROWS, reading)
            emit(scope, "time.reading", {k: reading[k] for k in ("quote", "how", "settled")})
        asked = choice_question(scope, readings)
        if asked is not None:  # a reading the policy left open: the person chooses
            rows = thaw(scope.get(TIME_ROWS, []))
            asked["reading"] = len(rows) - len(readings) + asked["reading"]
            scope["pending_question"] = asked
            emit(scope, "agent.paused", {k: v for k, v in asked.items() if k != "candidates"})
            scope.pause(asked)

    return clock


def clock_resumed(scope: Scope, value: Any) -> None:
    """The ``clock`` stage's ``on_resume``: the person chose (or the question was dropped)."""
    pending = thaw(scope["pending_question"])
    del scope["pending_question"]
    chosen_row(scope, pending, value)


def _held(scope: Scope) -> dict[str, str]:
    """This run's zone, once known (a call row costs O(1), not a walk over the rows)."""
    run_local = getattr(scope, "run_local", None)
    return {} if run_local is None else run_local(("trackway-time-zone",), dict)


def _zone_now(scope: Scope) -> str:
    """The zone of the turn's clock (the latest clock or clock-on-resume row)."""
    held = _held(scope)
    if "zone" in held:
        return held["zone"]
    for row in reversed(thaw(scope.get(TIME_ROWS, []))):
        if row.get("kind") in ("clock", "clock-on-resume"):
            held["zone"] = str(row["zone"])
            return held["zone"]
    raise ClockRequiredError("a tool call was dispatched before the turn's clock row")


def call_dispatched(layer: TimeLayer, scope: Scope, call: Mapping[str, Any]) -> None:
    """``dispatch``'s hook: the call's dispatch-time row (the real clock, in the person's
    zone)."""
    local = layer.clock().astimezone(zone_of(_zone_now(scope)))
    row = {
        "kind": "call",
        "call_id": call["id"],
        "name": call["name"],
        "dispatched_at": instant_text(local),
    }
    scope.append(TIME_ROWS, row)


def resumed_clock(layer: TimeLayer, scope: Scope, value: Mapping[str, Any]) -> None:
    """``resumed``'s hook: a resume that brings a clock unlike the turn's gets a
    clock-on-resume row (the paused turn keeps its clock rows as they were)."""
    given = value.get("time")
    if given is None:
        return
    rows = thaw(scope.get(TIME_ROWS, []))
    last = next(r for r in reversed(rows) if r.get("kind") in ("clock", "clock-on-resume"))
    zone = given.get("zone") or last["zone"]
    if given.get("now") is None and zone == last["zone"]:
        return  # nothing new: the same zone, no instant
    row = _clock_row(layer, {"zone": zone, "now": given.get("now")}, "clock-on-resume")
    if given.get("zone") is None:
        row["zone_source"] = last["zone_source"]
    if (row["now"], row["zone"]) == (last["now"], last["zone"]):
        return  # the same clock
    scope.append(TIME_ROWS, row)
    _held(scope)["zone"] = row["zone"]
    emit(scope, "time.clock", row)


def resume_value(layer: TimeLayer | None, value: dict[str, Any], time: Any) -> dict[str, Any]:
    """The resume value with the resume's clock (``resume(..., time=)``), checked."""
    clock = clock_input(time)
    if clock is None:
        return value
    if layer is None:
        raise InvalidRunInputError(
            "resume(time=...) gives a clock, but this agent has no time layer: add "
            ".time(zone=...) to the builder, or leave time= out"
        )
    return {**value, "time": clock}


def person_zone(layer: TimeLayer | None, scope: Scope) -> str | None:
    """The person's zone for what is shown to them (period lines), under ``.time()``."""
    return None if layer is None else _zone_now(scope)
