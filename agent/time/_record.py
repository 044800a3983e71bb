"""Readers of the time layer's rows on the agent (the last run's)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trackway.engine import thaw

from ._layer import TIME_ROWS

__all__ = ["TimeRecord"]


class TimeRecord:
    """``agent.time_rows()``."""

    def _state(self) -> Mapping[str, Any]:
        raise NotImplementedError  # RunRecord's

    def time_rows(self, kind: str | None = None) -> list[dict[str, Any]]:
        """The last run's time rows in order (``.time()``): ``clock`` (``now``,
        ``now_source`` ``"app"`` | ``"default"``, ``zone``, ``zone_source`` ``"run"`` |
        ``"builder"``, ``offset``), ``time-reading`` (``quote``, ``candidates``, ``dropped``,
        ``how``, ``settled``, ``open``, ``reader``), ``call`` (``call_id``, ``name``,
        ``dispatched_at``) and ``clock-on-resume``; only those of ``kind`` when given. Empty
        without a time layer."""
        rows = [dict(r) for r in thaw(self._state().get(TIME_ROWS, []))]
        return rows if kind is None else [r for r in rows if r["kind"] == kind]
