"""The OpenTelemetry recorder: one span per run, per subflow and per stage.

Stage spans are children of the subflow span they run in (or of the run span); subflow spans
are children of the subflow they are mounted in (or of the run span). The run span is a child
of whatever span is current when the run starts. OpenTelemetry is imported only when
``otel()`` is called, so trackway itself does not need it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from trackway.engine import (
    Commit,
    CommitDetail,
    DecisionEvent,
    EmitEvent,
    ErrorEvent,
    PauseEvent,
    Recorder,
    ResumeEvent,
    RunEndEvent,
    RunStartEvent,
    StageEndEvent,
    StageStartEvent,
    SubflowEvent,
)

if TYPE_CHECKING:
    from opentelemetry.trace import Span, TracerProvider

__all__ = ["OtelRecorder", "otel"]

_INSTALL = "pip install 'trackway[otel]'"


class _RunSpans:
    __slots__ = ("committed", "ended", "run", "stages", "subflows")

    def __init__(self, run: Span) -> None:
        self.run = run
        self.subflows: dict[str, Span] = {}
        self.stages: dict[str, Span] = {}
        self.committed: set[str] = set()
        # stage spans that ended before their commit arrived (parallel branches): end time
        self.ended: dict[str, int] = {}

    def parent_of(self, path: str) -> Span:
        """The innermost open subflow whose mount holds ``path``, else the run."""
        best, size = self.run, -1
        for mount, span in self.subflows.items():
            if len(mount) > size and path.startswith(mount + "/"):
                best, size = span, len(mount)
        return best


class OtelRecorder(Recorder):
    """Turns runs into OpenTelemetry spans; see :func:`otel`."""

    name = "otel"

    def __init__(self, tracer_provider: TracerProvider | None = None) -> None:
        try:
            from opentelemetry import trace
        except ImportError as exc:
            raise ImportError(
                f"otel() needs the OpenTelemetry SDK, which is not installed: {_INSTALL}"
            ) from exc
        self._trace = trace
        self._tracer = trace.get_tracer("trackway", tracer_provider=tracer_provider)
        self._runs: dict[str, _RunSpans] = {}

    def _start(self, name: str, parent: Span | None, attributes: dict[str, Any]) -> Span:
        context = None if parent is None else self._trace.set_span_in_context(parent)
        return self._tracer.start_span(name, context=context, attributes=attributes)

    def _error(self, span: Span, kind: str, message: str) -> None:
        status = self._trace.Status(self._trace.StatusCode.ERROR, f"{kind}: {message}")
        span.set_status(status)
        span.add_event("exception", {"exception.type": kind, "exception.message": message})

    # -- hooks -----------------------------------------------------------------------------

    def on_run_start(self, event: RunStartEvent) -> None:
        span = self._start(
            f"run {event.chart_id}",
            None,
            {
                "trackway.run_id": event.run_id,
                "trackway.chart_id": event.chart_id,
                "trackway.seq": event.seq,
                "trackway.resumed": event.seq > 0,
            },
        )
        self._runs[event.run_id] = _RunSpans(span)

    def on_subflow_enter(self, event: SubflowEvent) -> None:
        run = self._runs.get(event.run_id)
        if run is None:
            return
        mount = event.stage_path
        run.subflows[mount] = self._start(
            f"subflow {event.subflow_id}",
            run.parent_of(mount),
            {
                "trackway.run_id": event.run_id,
                "trackway.stage_path": mount,
                "trackway.subflow_id": event.subflow_id,
                "trackway.isolated": event.isolated,
            },
        )

    def on_subflow_exit(self, event: SubflowEvent) -> None:
        run = self._runs.get(event.run_id)
        span = None if run is None else run.subflows.pop(event.stage_path, None)
        if span is not None:
            span.end()

    def on_stage_start(self, event: StageStartEvent) -> None:
        run = self._runs.get(event.run_id)
        if run is None:
            return
        path = event.stage_path
        run.stages[path] = self._start(
            f"stage {event.stage_name}",
            run.parent_of(path),
            {
                "trackway.run_id": event.run_id,
                "trackway.stage_path": path,
                "trackway.stage_id": event.stage_id,
                "trackway.stage_kind": event.kind,
            },
        )

    def on_emit(self, event: EmitEvent) -> None:
        span = self._stage_span(event.run_id, event.stage_path)
        if span is not None:
            span.add_event("trackway.emit", {"trackway.event": event.name})

    def on_commit(self, commit: Commit) -> None:
        run = self._runs.get(commit.run_id)
        if run is None:
            return
        path = commit.stage_path
        span = run.stages.get(path)
        if span is None:  # merges, subflow input and output: an event on the enclosing span
            run.parent_of(path).add_event(
                "trackway.commit",
                {
                    "trackway.seq": commit.seq,
                    "trackway.stage_path": path,
                    "trackway.kind": commit.kind,
                    "trackway.outcome": commit.outcome,
                    "trackway.keys_written": list(commit.keys_written),
                },
            )
            return
        span.set_attributes(
            {
                "trackway.seq": commit.seq,
                "trackway.keys_read": list(commit.reads),
                "trackway.keys_written": list(commit.keys_written),
            }
        )
        detail: CommitDetail = commit.detail or {}
        if "break" in detail:
            span.set_attribute("trackway.break", detail["break"])
        run.committed.add(path)
        ended = run.ended.pop(path, None)
        if ended is not None:
            del run.stages[path]
            span.end(end_time=ended)

    def on_decision(self, event: DecisionEvent) -> None:
        span = self._stage_span(event.run_id, event.stage_path)
        if span is None:
            return
        span.set_attribute("trackway.decision.chosen", list(event.chosen))
        evidence = event.evidence if isinstance(event.evidence, Mapping) else {}
        rules = evidence.get("rules") or []
        labels = [str(r.get("label") or f"#{r.get('rule')}") for r in rules if r.get("matched")]
        if labels:
            span.set_attribute("trackway.decision.rules", labels)
        if evidence.get("default"):
            span.set_attribute("trackway.decision.default", True)

    def on_error(self, event: ErrorEvent) -> None:
        run = self._runs.get(event.run_id)
        if run is None:
            return
        path = event.stage_path
        span = None if path is None or path in run.ended else run.stages.get(path)
        if span is not None:
            self._error(span, event.error.type, event.error.message)

    def on_pause(self, event: PauseEvent) -> None:
        span = self._stage_span(event.run_id, event.stage_path)
        if span is not None:
            span.add_event("trackway.pause")

    def on_resume(self, event: ResumeEvent) -> None:
        run = self._runs.get(event.run_id)
        if run is not None:
            run.run.add_event("trackway.resume", {"trackway.stage_path": event.stage_path})

    def on_stage_end(self, event: StageEndEvent) -> None:
        run = self._runs.get(event.run_id)
        if run is None:
            return
        path = event.stage_path
        span = run.stages.get(path)
        if span is None:
            return
        span.set_attribute("trackway.outcome", event.outcome)
        if event.outcome == "cancelled":
            self._error(span, "Cancelled", "the stage was cancelled")
        if path in run.committed:
            del run.stages[path]
            run.committed.discard(path)
            span.end()
        else:  # a parallel branch: its commit (and seq) comes when the branches merge
            run.ended[path] = time.time_ns()

    def on_run_end(self, event: RunEndEvent) -> None:
        run = self._runs.pop(event.run_id, None)
        if run is None:
            return
        for path, span in run.stages.items():
            span.end(end_time=run.ended.get(path))
        for span in reversed(run.subflows.values()):
            span.set_attribute("trackway.outcome", event.status)
            span.end()
        run.run.set_attributes({"trackway.status": event.status, "trackway.seq": event.seq})
        if event.error is not None:
            self._error(run.run, event.error.type, event.error.message)
        run.run.end()

    def _stage_span(self, run_id: str, path: str) -> Span | None:
        run = self._runs.get(run_id)
        return None if run is None else run.stages.get(path)


def otel(tracer_provider: TracerProvider | None = None) -> OtelRecorder:
    """A recorder that sends each run to OpenTelemetry as a tree of spans.

    One span per run (``run <chart id>``), per subflow (``subflow <chart id>``) and per
    stage (``stage <name>``), with the attributes ``trackway.run_id``,
    ``trackway.stage_path``, ``trackway.seq``, ``trackway.outcome``, ``trackway.keys_read``,
    ``trackway.keys_written`` and ``trackway.decision.chosen``; a failure sets error status.
    Spans go to ``tracer_provider`` (default: the global one). Needs the ``otel`` extra:
    ``pip install 'trackway[otel]'``.
    """
    return OtelRecorder(tracer_provider)
