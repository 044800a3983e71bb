"""The time layer in a replay: rebuilt from ``settings["time"]``, its clock reading the
instants the recording's rows hold (in the order they were taken) and its reader replaced by
the recorded time-reading rows. No real clock is read and no reader runs."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from trackway.engine import Snapshot, thaw
from trackway.tools.time import parse_instant

from ..messages._errors import ReplayDivergence
from ._layer import TIME_ROWS, TimeLayer

__all__ = ["replay_time"]


class _RecordedClock:
    """The instants the run read from the real clock, in order."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self._instants = [
            row["dispatched_at"] if row["kind"] == "call" else row["now"]
            for row in rows
            if row["kind"] == "call"
            or (row["kind"] in ("clock", "clock-on-resume") and row["now_source"] == "default")
        ]

    def __call__(self) -> datetime:
        if not self._instants:
            raise ReplayDivergence(
                "the replay read the clock more often than the recording did",
                stage_path="clock",
                key=TIME_ROWS,
            )
        return parse_instant(self._instants.pop(0))


def replay_time(builder: Any, snap: Snapshot, layer: TimeLayer | None = None) -> None:
    """Arm a replay's builder with the recording's time layer (when it had one; ``layer``,
    the agent's, when the run ended before ``seed`` recorded its settings)."""
    settings = thaw(snap.state.get("settings")) or {}
    recorded = settings.get("time")
    if recorded is None and layer is not None:
        recorded = layer.record()
    if recorded is None:
        return
    rows = [dict(r) for r in thaw(snap.state.get(TIME_ROWS, []))]
    builder._time_layer = TimeLayer(
        zone=recorded.get("zone"),
        reader=None,
        policy=dict(recorded.get("policy") or {}),
        messages=dict(recorded.get("messages") or {}),
        reader_record=recorded.get("reader"),
        clock=_RecordedClock(rows),
        recorded=[r for r in rows if r["kind"] == "time-reading"],
    )
