"""``trackway show`` of a paused run and ``trackway resume``: a real SQLite file, charts and
agents imported from a module in the current directory, exit codes 0/1/2."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import orjson
import pytest

from trackway import Executor, SqliteStore
from trackway.cli import main

PG_DSN = os.environ.get("TRACKWAY_TEST_PG_DSN")

CHARTS = """
from trackway import flow_chart
from trackway.agent import Agent, mock
from trackway.engine import SqliteStore
from trackway.tools import ask_human


def ask(s):
    s.pause({"question": "Approve?", "amount": s.get("amount", 0), "note": "\\x1b[31mred"})


def take(s, value):
    s["answer"] = value
    if value == "again":
        s.pause({"question": "Sure?"})


chart = flow_chart("Ask", ask, id="ask", on_resume=take).then("Done", lambda s: None).build()
not_a_chart = 42


def build_agent(db, replies):
    return (
        Agent.create(provider=mock(replies=replies), model="m", store=SqliteStore(db))
        .tool(ask_human())
        .build()
    )


agent = build_agent(DB, ["Thanks, noted."])
"""


@pytest.fixture
def charts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A module of charts in the current directory, named for this test (no stale import)."""
    name = f"cli_charts_{tmp_path.name}"
    db = tmp_path / "runs.db"
    (tmp_path / f"{name}.py").write_text(CHARTS.replace("DB", repr(str(db))))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    sys.path.insert(0, str(tmp_path))
    module = __import__(name)
    yield name, module, db
    sys.modules.pop(name, None)


def test_show_prints_the_pause_payload_escaped(charts, capsys) -> None:
    _, module, db = charts
    store = SqliteStore(db)
    run_id = Executor(module.chart, store=store).run_sync({"amount": 5}).run_id
    store.close()
    assert main(["show", run_id, "--store", str(db)]) == 0
    out = capsys.readouterr().out
    assert f"paused at ask#0 (checkpoint {run_id}@1), waiting for:" in out
    assert '"question": "Approve?"' in out and '"amount": 5' in out
    assert "\x1b" not in out and "\\u001b[31mred" in out  # the stored value cannot drive it
    assert f"trackway resume {run_id} --value JSON --chart module:attr" in out
    assert main(["show", run_id, "--store", str(db), "--json"]) == 0
    doc = orjson.loads(capsys.readouterr().out)
    assert doc["pause"] == {
        "checkpoint_id": f"{run_id}@1",
        "paused_at": "ask#0",
        "payload": {"question": "Approve?", "amount": 5, "note": "\x1b[31mred"},
    }


def test_resume_a_chart_from_the_command_line(charts, capsys) -> None:
    name, module, db = charts
    store = SqliteStore(db)
    run_id = Executor(module.chart, store=store).run_sync().run_id
    store.close()
    args = ["resume", run_id, "--store", str(db), "--chart", f"{name}:chart"]
    assert main([*args, "--value", '"again"']) == 0
    out = capsys.readouterr().out
    assert f"Run {run_id}: paused, 2 commits" in out
    assert f"paused at ask#0:resume1 (checkpoint {run_id}@2)" in out and '"Sure?"' in out
    assert main([*args, "--value", '{"ok": true}']) == 0
    assert f"Run {run_id}: done, 4 commits" in capsys.readouterr().out
    store = SqliteStore(db, read_only=True)
    assert store.load(run_id).state["answer"] == {"ok": True} and store.paused() == []
    store.close()
    assert main([*args, "--value", "1"]) == 1  # nothing waits any more: named
    assert "is not paused" in capsys.readouterr().err


def test_resume_usage_errors_exit_2_and_name_the_option(charts, capsys) -> None:
    name, module, db = charts
    store = SqliteStore(db)
    run_id = Executor(module.chart, store=store).run_sync().run_id
    store.close()
    base = ["resume", run_id, "--store", str(db)]
    assert main([*base, "--chart", f"{name}:chart", "--value", "{nope"]) == 2
    err = capsys.readouterr().err
    assert "--value" in err and "is not JSON" in err
    assert main([*base, "--chart", "no_colon", "--value", "1"]) == 2
    assert "module:attr" in capsys.readouterr().err
    assert main([*base, "--chart", "no_such_module_xyz:chart", "--value", "1"]) == 2
    assert "cannot import module 'no_such_module_xyz'" in capsys.readouterr().err
    assert main([*base, "--chart", f"{name}:missing", "--value", "1"]) == 2
    assert "has no attribute 'missing'" in capsys.readouterr().err
    assert main([*base, "--chart", f"{name}:not_a_chart", "--value", "1"]) == 2
    assert "is a int, not a FlowChart" in capsys.readouterr().err
    assert main([*base, "--value", "1"]) == 2  # --chart is required
    assert main(["resume", "run-nope", "--store", str(db), "--chart", f"{name}:chart"]) == 1
    assert "no run 'run-nope'" in capsys.readouterr().err
    # nothing was resumed by any of these
    store = SqliteStore(db, read_only=True)
    assert [p.run_id for p in store.paused()] == [run_id]
    store.close()


def test_resume_an_agent_in_its_own_store(charts, capsys) -> None:
    name, module, db = charts
    asking = module.build_agent(
        str(db),
        [{"tool_calls": [{"id": "a1", "name": "ask_human", "args": {"question": "Which?"}}]}],
    )
    paused = asking.run_sync("refund please")
    run_id = paused.checkpoint.run_id
    assert main(["show", run_id, "--store", str(db)]) == 0
    assert '"question": "Which?"' in capsys.readouterr().out
    given = ["resume", run_id, "--chart", f"{name}:agent", "--value", '"order 42"']
    assert main([*given, "--store", str(db)]) == 2
    assert "resumes in the store it was built with" in capsys.readouterr().err
    assert main(given) == 0
    out = capsys.readouterr().out
    assert f"Run {run_id}: done" in out and "answer: Thanks, noted." in out


@pytest.mark.skipif(PG_DSN is None, reason="needs TRACKWAY_TEST_PG_DSN (.ci/postgres.sh)")
def test_resume_on_postgres(charts, capsys) -> None:
    from trackway import PostgresStore

    name, module, _ = charts
    assert PG_DSN is not None
    store = PostgresStore(PG_DSN)
    run_id = Executor(module.chart, store=store).run_sync().run_id
    store.close()
    args = ["resume", run_id, "--store", PG_DSN, "--chart", f"{name}:chart", "--value", "true"]
    assert main(args) == 0
    assert f"Run {run_id}: done" in capsys.readouterr().out
