from __future__ import annotations

import sys
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from trackway import Executor, FlowChart, Rule, Scope, decide, flow_chart
from trackway.recorders import OtelRecorder, otel


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def recorder(exporter: InMemorySpanExporter) -> OtelRecorder:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return otel(provider)


def tree(spans: tuple[ReadableSpan, ...]) -> list[str]:
    """The span tree as indented names, children in start order."""
    by_parent: dict[int | None, list[ReadableSpan]] = {}
    for span in sorted(spans, key=lambda s: s.start_time or 0):
        parent = span.parent.span_id if span.parent is not None else None
        by_parent.setdefault(parent, []).append(span)
    out: list[str] = []

    def walk(parent: int | None, depth: int) -> None:
        for span in by_parent.get(parent, []):
            out.append("  " * depth + span.name)
            assert span.context is not None
            walk(span.context.span_id, depth + 1)

    walk(None, 0)
    return out


def by_name(spans: tuple[ReadableSpan, ...], name: str) -> ReadableSpan:
    (span,) = [s for s in spans if s.name == name]
    return span


def route(scope: Scope) -> Any:
    return decide(scope, [Rule({"n": {"gt": 1}}, "big", label="Big n")], "small")


def nested_chart() -> FlowChart:
    deepest = flow_chart("Leaf", lambda s: s.__setitem__("leaf", s["n"]), id="leaf").build()
    middle = (
        flow_chart("Mid", lambda s: None, id="mid").subflow("Deeper", deepest, id="deeper").build()
    )
    return (
        flow_chart("Start", lambda s: s.__setitem__("n", 2), id="start")
        .decider("Route", route, id="route")
        .branch("big", "Big", lambda s: None)
        .branch("small", "Small", lambda s: None)
        .end()
        .subflow("Outer", middle, id="outer")
        .fork("Both", {"a": lambda s: s.__setitem__("a", 1), "b": lambda s: None})
        .build()
    )


def test_spans_nest_run_subflow_stage(recorder, exporter):
    result = Executor(nested_chart(), recorders=[recorder]).run_sync()
    spans = exporter.get_finished_spans()
    assert tree(spans) == [
        "run start",
        "  stage Start",
        "  stage Route",
        "  stage Big",
        "  subflow mid",
        "    stage Mid",
        "    subflow leaf",
        "      stage Leaf",
        "  stage a",
        "  stage b",
    ]
    assert len({s.context.trace_id for s in spans if s.context}) == 1
    run = by_name(spans, "run start")
    assert run.attributes is not None
    assert run.attributes["trackway.run_id"] == result.run_id
    assert run.attributes["trackway.status"] == "done"
    assert run.attributes["trackway.seq"] == len(result.snapshot)
    assert run.status.status_code == StatusCode.UNSET


def test_stage_spans_carry_path_seq_outcome_keys_and_decision(recorder, exporter):
    result = Executor(nested_chart(), recorders=[recorder]).run_sync()
    spans = exporter.get_finished_spans()
    route_span = by_name(spans, "stage Route")
    assert dict(route_span.attributes or {}) == {
        "trackway.run_id": result.run_id,
        "trackway.stage_path": "route#1",
        "trackway.stage_id": "route",
        "trackway.stage_kind": "decider",
        "trackway.seq": 2,
        "trackway.keys_read": ("n",),
        "trackway.keys_written": (),
        "trackway.decision.chosen": ("big",),
        "trackway.decision.rules": ("Big n",),
        "trackway.outcome": "ok",
    }
    leaf = by_name(spans, "stage Leaf")
    assert leaf.attributes is not None
    assert leaf.attributes["trackway.stage_path"] == "outer/deeper/leaf#4"
    assert leaf.attributes["trackway.keys_written"] == ("leaf",)
    # A fork branch gets its seq when the branches merge; its span still ends on time.
    branch = by_name(spans, "stage a")
    commit = next(
        c
        for c in result.snapshot.commits
        if c.stage_path == branch.attributes["trackway.stage_path"]
    )
    assert branch.attributes is not None and branch.attributes["trackway.seq"] == commit.seq
    assert branch.end_time is not None and branch.end_time <= by_name(spans, "run start").end_time
    assert branch.end_time <= int(commit.ended_at * 1e9) + 5_000_000  # before the merge, not after
    merge_events = [e for e in by_name(spans, "run start").events if e.name == "trackway.commit"]
    assert [e.attributes["trackway.kind"] for e in merge_events] == ["merge"]


def test_a_failure_sets_error_status_on_the_stage_and_the_run(recorder, exporter):
    def bad(scope: Scope) -> None:
        raise ValueError("boom")

    chart = flow_chart("Ok", lambda s: None).then("Bad", bad).build()
    Executor(chart, recorders=[recorder]).run_sync(raise_on_error=False)
    spans = exporter.get_finished_spans()
    stage = by_name(spans, "stage Bad")
    assert stage.status.status_code == StatusCode.ERROR
    assert stage.status.description == "ValueError: boom"
    assert stage.attributes is not None and stage.attributes["trackway.outcome"] == "error"
    assert [e.name for e in stage.events] == ["exception"]
    run = by_name(spans, "run ok")
    assert run.status.status_code == StatusCode.ERROR
    assert run.status.description is not None and run.status.description.startswith("StageError")
    assert run.attributes is not None and run.attributes["trackway.status"] == "failed"
    assert by_name(spans, "stage Ok").status.status_code == StatusCode.UNSET


def test_pause_and_resume_make_two_run_spans_for_one_run_id(recorder, exporter):
    chart = (
        flow_chart("Ask", lambda s: s.pause("ok?"), on_resume=lambda s, v: None)
        .then("Pay", lambda s: None)
        .build()
    )
    executor = Executor(chart, recorders=[recorder])
    first = executor.run_sync()
    executor.resume_sync(first.checkpoint, "yes")
    spans = exporter.get_finished_spans()
    assert tree(spans) == ["run ask", "  stage Ask", "run ask", "  stage Ask", "  stage Pay"]
    runs = [s for s in spans if s.name == "run ask"]
    assert [r.attributes["trackway.status"] for r in runs] == ["done", "paused"] or [
        r.attributes["trackway.status"] for r in sorted(runs, key=lambda s: s.start_time or 0)
    ] == ["paused", "done"]
    assert {r.attributes["trackway.run_id"] for r in runs} == {first.run_id}
    paused = [s for s in spans if s.name == "stage Ask"]
    outcomes = sorted(s.attributes["trackway.outcome"] for s in paused)
    assert outcomes == ["ok", "paused"]


def test_the_run_span_is_a_child_of_the_current_span(recorder, exporter):
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("app")
    with tracer.start_as_current_span("request"):
        Executor(flow_chart("A", lambda s: None).build(), recorders=[recorder]).run_sync()
    assert tree(exporter.get_finished_spans()) == ["request", "  run a", "    stage A"]


def test_without_opentelemetry_otel_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    with pytest.raises(ImportError, match=r"pip install 'trackway\[otel\]'"):
        otel()


def test_the_recorder_has_a_name(recorder):
    assert recorder.name == "otel"


def test_a_timeout_marks_the_cancelled_stage_and_the_run(recorder, exporter):
    import anyio

    async def slow(scope: Scope) -> None:
        await anyio.sleep(5)

    chart = flow_chart("Slow", slow).build()
    Executor(chart, recorders=[recorder]).run_sync(timeout=0.05, raise_on_error=False)
    spans = exporter.get_finished_spans()
    stage = by_name(spans, "stage Slow")
    assert stage.attributes is not None and stage.attributes["trackway.outcome"] == "cancelled"
    assert stage.status.status_code == StatusCode.ERROR
    run = by_name(spans, "run slow")
    assert run.status.status_code == StatusCode.ERROR
    assert run.status.description is not None
    assert run.status.description.startswith("RunTimeoutError")


def test_a_pause_inside_a_subflow_ends_its_span_with_the_run(recorder, exporter):
    inner = flow_chart("Ask", lambda s: s.pause(), id="ask", on_resume=lambda s, v: None)
    chart = flow_chart("S", lambda s: None).subflow("Sub", inner.build(), id="sub").build()
    Executor(chart, recorders=[recorder]).run_sync()
    spans = exporter.get_finished_spans()
    assert tree(spans) == ["run s", "  stage S", "  subflow ask", "    stage Ask"]
    sub = by_name(spans, "subflow ask")
    assert sub.attributes is not None and sub.attributes["trackway.outcome"] == "paused"
