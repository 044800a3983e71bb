"""The metrics recorder: wall time and counts per stage id, over every run it sees."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from trackway.engine import Commit, Recorder, RunEndEvent, StageEndEvent, StageStartEvent

__all__ = ["Metrics", "metrics"]

_STAGE_KINDS = frozenset({"stage", "decider", "selector", "resume"})


def _rank(ordered: list[float], q: float) -> float:
    """The nearest-rank percentile ``q`` (0 < q <= 1) of sorted ``ordered`` values."""
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


class _Stage:
    __slots__ = ("durations", "name", "outcomes", "reads", "writes")

    def __init__(self, name: str) -> None:
        self.name = name
        self.durations: list[float] = []
        self.outcomes: Counter[str] = Counter()
        self.reads = 0
        self.writes = 0


class Metrics(Recorder):
    """Collects per-stage timings and counts; see :func:`metrics`."""

    name = "metrics"

    def __init__(self) -> None:
        self._stages: dict[str, _Stage] = {}
        self._ids: dict[tuple[str, str], str] = {}
        self.runs: Counter[str] = Counter()
        """How many runs ended with each status (a resumed run counts once per call)."""

    def _stage(self, stage_id: str, name: str) -> _Stage:
        stage = self._stages.get(stage_id)
        if stage is None:
            stage = self._stages[stage_id] = _Stage(name)
        return stage

    def on_stage_start(self, event: StageStartEvent) -> None:
        self._ids[(event.run_id, event.stage_path)] = event.stage_id
        self._stage(event.stage_id, event.stage_name)

    def on_commit(self, commit: Commit) -> None:
        if commit.kind in _STAGE_KINDS:
            stage = self._stage(commit.stage_id, commit.stage_name)
            stage.reads += len(commit.reads)
            stage.writes += len(commit.writes)

    def on_stage_end(self, event: StageEndEvent) -> None:
        stage_id = self._ids.pop((event.run_id, event.stage_path), None)
        if stage_id is None:
            return
        stage = self._stages[stage_id]
        stage.durations.append(event.duration)
        stage.outcomes[event.outcome] += 1

    def on_run_end(self, event: RunEndEvent) -> None:
        self.runs[event.status] += 1
        for key in [k for k in self._ids if k[0] == event.run_id]:
            del self._ids[key]

    def summary(self) -> dict[str, dict[str, Any]]:
        """Per stage id, in the order first seen: its name, ``count`` (executions), ``total``,
        ``mean``, ``p50``, ``p95`` and ``max`` wall time in seconds (nearest-rank
        percentiles), ``outcomes`` (count per outcome), and the keys ``reads`` and ``writes``
        its commits made.
        """
        out: dict[str, dict[str, Any]] = {}
        for stage_id, stage in self._stages.items():
            ordered = sorted(stage.durations)
            n = len(ordered)
            total = sum(ordered)
            out[stage_id] = {
                "name": stage.name,
                "count": n,
                "total": total,
                "mean": total / n if n else 0.0,
                "p50": _rank(ordered, 0.5) if n else 0.0,
                "p95": _rank(ordered, 0.95) if n else 0.0,
                "max": ordered[-1] if n else 0.0,
                "outcomes": dict(stage.outcomes),
                "reads": stage.reads,
                "writes": stage.writes,
            }
        return out

    def table(self) -> str:
        """The summary as a text table, times in milliseconds."""
        header = ["stage", "count", "total ms", "mean ms", "p50 ms", "p95 ms", "max ms", "outcomes"]
        rows = [header]
        for stage_id, s in self.summary().items():
            outcomes = " ".join(f"{k}={v}" for k, v in sorted(s["outcomes"].items()))
            rows.append(
                [
                    stage_id,
                    str(s["count"]),
                    *(f"{s[k] * 1000:.3f}" for k in ("total", "mean", "p50", "p95", "max")),
                    outcomes,
                ]
            )
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        lines = []
        for row in rows:
            cells = [
                cell.ljust(w) if i in (0, len(header) - 1) else cell.rjust(w)
                for i, (cell, w) in enumerate(zip(row, widths, strict=True))
            ]
            lines.append("  ".join(cells).rstrip())
        return "\n".join(lines)

    def clear(self) -> None:
        """Forget everything measured so far."""
        self._stages.clear()
        self._ids.clear()
        self.runs.clear()


def metrics() -> Metrics:
    """A recorder that times every stage (from ``on_stage_start`` to ``on_stage_end``).

    Stages are grouped by stage id across all runs it sees: ``.summary()`` gives count,
    total, mean, p50, p95, max (seconds) and outcome counts; ``.table()`` the same as text.
    """
    return Metrics()
