"""The trace viewer's page: its data, its chart, and that no recorded value becomes markup."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson

from trackway import Executor, flow_chart
from trackway._demo import demo_chart
from trackway._viewer import build_view, render_page, write_viewer
from trackway._viewer_chart import chart_from_log, chart_from_mermaid, draw, node_of
from trackway.agent import LLMCall, Parallel, Sequence, mock, receipts, save_recording, served_at
from trackway.engine import select
from trackway.recorders import jsonl, narrative_from_log

DEMO_INPUT = {"application": {"name": "Ada", "amount": 18_000, "income": 64_000}}


def _page_data(html: str) -> dict[str, Any]:
    m = re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S)
    assert m is not None
    doc: dict[str, Any] = orjson.loads(m.group(1))
    return doc


def test_the_page_holds_the_log_the_narrative_and_every_call(tmp_path: Path) -> None:
    researcher = LLMCall.create(provider=mock(replies=["facts"]), model="m").build()
    writer = LLMCall.create(provider=mock(replies=["prose"]), model="m").build()
    article = Sequence.create(name="article").step("research", researcher)
    article = article.step("write", writer).build()
    article.run_sync("Why?")
    rec = save_recording(article, tmp_path / "article.jsonl")
    page = write_viewer(rec, tmp_path / "t.html")
    data = _page_data(page.read_text())
    snap = article.snapshot()
    assert data["format"] == "trackway.viewer/1"
    assert [c["seq"] for c in data["commits"]] == [c.seq for c in snap.history()]
    assert [n["text"] for n in data["narrative"]] == narrative_from_log(
        snap, max_value_chars=60
    ).lines()
    made = receipts(snap)
    assert [c["hash"] for c in data["calls"]] == [served_at(snap, k).hash for k in (1, 2)]
    assert [c["receipt"]["request_hash"] for c in data["calls"]] == [
        r["request_hash"] for r in made
    ]
    assert all(c["match"] for c in data["calls"])
    # members nested: each call and its commits carry the member they ran in
    assert [c["member"] for c in data["calls"]] == ["research", "write"]
    members = {c["member"] for c in data["commits"]}
    assert {"research", "write"} <= members
    assert data["chart"]["source"] == "recording"


def test_nested_members_are_named_by_their_dotted_path(tmp_path: Path) -> None:
    a = LLMCall.create(provider=mock(replies=["a"]), model="m").build()
    b = LLMCall.create(provider=mock(replies=["b"]), model="m").build()
    inner = Parallel.create(name="both").branch("a", a).branch("b", b)
    inner = inner.merge(lambda answers: " & ".join(answers.values())).build()
    outer = Sequence.create(name="outer").step("fan", inner).build()
    outer.run_sync("go")
    data, _ = build_view(outer.snapshot())
    assert sorted(c["member"] for c in data["calls"]) == ["fan.a", "fan.b"]


def test_a_plain_chart_marks_no_members_and_draws_its_structure(tmp_path: Path) -> None:
    chart = demo_chart()
    rec = tmp_path / "loan.jsonl"
    Executor(chart, recorders=[jsonl(rec, chart=chart)]).run_sync(DEMO_INPUT)
    data = _page_data(write_viewer(rec, tmp_path / "t.html").read_text())
    assert {c["member"] for c in data["commits"]} == {""}  # forks are not members
    assert data["calls"] == []
    nodes = {c["stage_id"]: c["node"] for c in data["commits"]}
    assert nodes["credit"] == "n_checks_credit" and nodes["route"] == "n_route"
    assert data["chart"]["nodes"][0] == "n_intake"


def test_without_a_recorded_structure_the_chart_is_drawn_from_the_log(tmp_path: Path) -> None:
    rec = tmp_path / "loan.jsonl"
    Executor(demo_chart(), recorders=[jsonl(rec)]).run_sync(DEMO_INPUT)
    html = write_viewer(rec, tmp_path / "t.html").read_text()
    data = _page_data(html)
    assert data["chart"]["source"] == "log"
    assert data["chart"]["nodes"] == [
        "n_intake",
        "n_checks",
        "n_route",
        "n_decline",  # the branch this run took: Ada's score declines her
        "n_notify",
    ]
    assert 'data-node="n_route"' in html


def test_every_shape_the_mermaid_text_can_hold_is_read() -> None:
    inner = flow_chart("Inner", lambda s: None, id="inner").build()

    def pick(scope: Any) -> Any:
        return select(scope, [], default=["x"])

    chart = (
        flow_chart("Start", lambda s: None, id="start")
        .subflow("Sub", inner, id="sub")
        .selector("Pick", pick, id="pick")
        .branch("x", "X", lambda s: None)
        .end()
        .then("Again", lambda s: None, id="again")
        .loop_to("start")
        .build()
    )
    drawing = chart_from_mermaid(chart.to_mermaid())
    assert drawing is not None
    shapes = {n.id: n.shape for n in drawing.nodes}
    assert shapes["n_sub"] == "subflow" and shapes["n_pick"] == "selector"
    assert any(e.loop for e in drawing.edges)
    svg = draw(drawing, {"n_start": 2})
    assert svg.count("<g class=") == len(drawing.nodes) and "edge loop" in svg
    assert 'class="node box ran"' in svg  # start ran
    assert chart_from_mermaid("graph LR\n  a --> b") is None


def test_no_recorded_value_can_become_markup(tmp_path: Path) -> None:
    hostile = '</script><img src=x onerror="alert(1)"><!--'
    chart = flow_chart(
        '<b>"Stage"</b>', lambda s: s.__setitem__(hostile, hostile), id="write"
    ).build()
    rec = tmp_path / "h.jsonl"
    Executor(chart, recorders=[jsonl(rec, chart=chart)]).run_sync({"note": hostile})
    html = write_viewer(rec, tmp_path / "t.html").read_text()
    assert "<img" not in html and "<!--" not in html
    assert html.count("</script>") == 2  # the data element's and the script's own
    assert "&lt;b&gt;" in html  # the stage name in the SVG, escaped
    data = _page_data(html)
    assert data["commits"][0]["ops"][0]["key"] == hostile  # the same value, read back


def test_render_page_never_rescans_what_it_put_in() -> None:
    snap = Executor(flow_chart("W", lambda s: s.__setitem__("v", "{{js}}")).build()).run_sync()
    data, svg = build_view(snap.snapshot)
    html = render_page(data, svg)
    assert _page_data(html)["commits"][0]["ops"][0]["value"] == "{{js}}"


def test_node_of_picks_a_fork_branch_then_the_stage() -> None:
    result = Executor(demo_chart()).run_sync(DEMO_INPUT)
    drawing = chart_from_log(result.snapshot.history())
    known = {n.id for n in drawing.nodes} | {"n_checks_fraud"}
    fraud = next(c for c in result.snapshot.history() if c.stage_id == "fraud")
    assert node_of(fraud, known) == "n_checks_fraud"
    assert node_of(fraud, {"n_checks"}) == "n_checks"
    assert node_of(fraud, set()) is None
