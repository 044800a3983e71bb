"""``trackway view RUN --store DB -o FILE``: the one-file viewer of a stored run, its chart
drawn from the structure the store recorded (a checkpoint's), from ``--chart``, or from the
log (and said so); a store given where a recording belongs is refused with the fix."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from trackway import Executor, SqliteStore
from trackway._demo import demo_chart
from trackway._viewer_chart import chart_from_mermaid
from trackway._viewer_store import store_label
from trackway.agent import Agent, mock, receipts, served_at
from trackway.cli import main
from trackway.tools import ask_human

CHARTS = """
from trackway import flow_chart
from trackway._demo import demo_chart


def ask(s):
    s.pause({"question": "Approve?"})


def take(s, value):
    s["answer"] = value


chart = (
    flow_chart("Ask", ask, id="ask", on_resume=take)
    .then("Done", lambda s: None)
    .build()
)
demo = demo_chart()
"""
DEMO_INPUT = {"application": {"name": "Ada", "amount": 18_000, "income": 64_000}}


def _page_data(html: str) -> dict[str, Any]:
    m = re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S)
    assert m is not None
    doc: dict[str, Any] = orjson.loads(m.group(1))
    return doc


@pytest.fixture
def charts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Any, Path]]:
    """A module of charts in the current directory, named for this test."""
    name = f"view_charts_{tmp_path.name}"
    (tmp_path / f"{name}.py").write_text(CHARTS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    module = __import__(name)
    yield name, module, tmp_path / "runs.db"
    sys.modules.pop(name, None)


def test_a_run_that_paused_is_drawn_from_the_structure_its_checkpoint_recorded(
    charts: tuple[str, Any, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, module, db = charts
    store = SqliteStore(db)
    executor = Executor(module.chart, store=store)
    run_id = executor.run_sync({"amount": 5}).run_id
    executor.resume_sync(run_id, "yes")
    history = [c.seq for c in store.history(run_id)]
    store.close()
    page = db.parent / "run.html"
    assert main(["view", run_id, "--store", str(db), "-o", str(page)]) == 0
    assert f"wrote {page}" in capsys.readouterr().out
    data = _page_data(page.read_text())
    assert data["run"]["run_id"] == run_id and data["run"]["status"] == "done"
    assert [c["seq"] for c in data["commits"]] == history
    assert data["chart"]["source"] == "checkpoint"
    drawn = chart_from_mermaid(module.chart.to_mermaid())
    assert drawn is not None
    assert data["chart"]["nodes"] == [n.id for n in drawn.nodes]
    # the nodes are named by the stage names the commits recorded
    assert ">Ask</text>" in page.read_text() and ">Done</text>" in page.read_text()
    assert data["source"] == "runs.db"


def test_a_run_that_never_paused_is_drawn_from_its_log_or_from_chart(
    charts: tuple[str, Any, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    name, _, db = charts
    store = SqliteStore(db)
    run_id = Executor(demo_chart(), store=store).run_sync(DEMO_INPUT).run_id
    store.close()
    page = db.parent / "run.html"
    assert main(["view", run_id, "--store", str(db), "-o", str(page)]) == 0
    assert "recorded no chart structure" in capsys.readouterr().out
    assert _page_data(page.read_text())["chart"]["source"] == "log"
    args = ["view", run_id, "--store", str(db), "-o", str(page), "--chart"]
    assert main([*args, f"{name}:demo"]) == 0
    data = _page_data(page.read_text())
    assert data["chart"]["source"] == "chart"
    drawn = chart_from_mermaid(demo_chart().to_mermaid())
    assert drawn is not None and data["chart"]["nodes"] == [n.id for n in drawn.nodes]
    # a chart other than the one that ran is refused, named
    assert main([*args, f"{name}:chart"]) == 2
    err = capsys.readouterr().err
    assert "--chart is chart 'ask'" in err and "name the chart it ran" in err


def test_an_agent_run_in_a_store_rebuilds_every_call(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    agent = (
        Agent.create(provider=mock(replies=["Thanks, noted."]), model="m", store=SqliteStore(db))
        .tool(ask_human())
        .build()
    )
    agent.run_sync("hello")
    snap = agent.snapshot()
    page = tmp_path / "agent.html"
    assert main(["view", snap.run_id, "--store", str(db), "-o", str(page)]) == 0
    data = _page_data(page.read_text())
    assert [c["hash"] for c in data["calls"]] == [served_at(snap, 1).hash]
    assert [c["receipt"]["request_hash"] for c in data["calls"]] == [
        r["request_hash"] for r in receipts(snap)
    ]
    assert all(c["match"] for c in data["calls"])


def test_a_store_given_as_a_recording_is_refused_with_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "runs.db"
    store = SqliteStore(db)
    Executor(demo_chart(), store=store).run_sync(DEMO_INPUT)
    store.close()
    page = tmp_path / "t.html"
    assert main(["view", str(db), "-o", str(page)]) == 2
    err = capsys.readouterr().err
    assert "is a SQLite run store, not a recording" in err
    assert f"trackway view RUN --store {db} -o {page}" in err and "UTF-8" not in err
    assert not page.exists()
    assert main(["view", "postgresql://u:secret@h/db", "-o", str(page)]) == 2
    assert "--store URL" in capsys.readouterr().err


def test_usage_errors_and_an_unknown_run_are_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "runs.db"
    store = SqliteStore(db)
    Executor(demo_chart(), store=store).run_sync(DEMO_INPUT)
    store.close()
    page = tmp_path / "t.html"
    assert main(["view", "nope", "--store", str(db), "-o", str(page)]) == 1
    assert "no run nope in runs.db; trackway runs --store runs.db" in capsys.readouterr().err
    assert main(["view", "x", "--store", str(db), "--run", "y", "-o", str(page)]) == 2
    assert "--run picks a run of a recording" in capsys.readouterr().err
    assert main(["view", "rec.jsonl", "--chart", "m:c", "-o", str(page)]) == 2
    assert "goes with --store" in capsys.readouterr().err
    assert not page.exists()


def test_a_store_is_named_without_its_credentials() -> None:
    assert store_label("postgresql://user:secret@db.example:5433/runs") == (
        "postgresql://db.example:5433/runs"
    )
    assert store_label("/a/b/runs.db") == "runs.db"
