"""examples/custom_recorder.py runs as a script: its audit recorder credits every write."""

from __future__ import annotations

import runpy
from pathlib import Path

from trackway import Executor

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "custom_recorder.py"


def test_the_example_prints_the_audit_trail_and_the_narrative(capsys):
    runpy.run_path(str(EXAMPLE), run_name="__main__")
    out = capsys.readouterr().out
    assert "Run done: total 70, status shipped" in out
    assert "'status' was written by: Receive, Price, Ship" in out
    assert "  3  Reserve    append ledger    ['reserve A-1 x2', 'reserve B-7 x1']" in out
    assert 'Stage 5: Ship — wrote status = "shipped"' in out


def test_the_audit_recorder_credits_branch_stages_not_the_merge_and_keeps_runs_apart():
    example = runpy.run_path(str(EXAMPLE))
    audit = example["AuditTrail"]()
    executor = Executor(example["build_chart"](), recorders=[audit])
    small = executor.run_sync({"order": {"items": [{"sku": "X", "qty": 1, "price": 5}]}})
    big = executor.run_sync({"order": {"items": [{"sku": "Y", "qty": 3, "price": 9}]}})
    assert audit.status == {small.run_id: "done", big.run_id: "done"}
    assert audit.who_wrote("charged", small.run_id) == ["Charge"]
    assert audit.who_wrote("ledger") == ["Reserve"]  # default: the last run
    rows = [r for r in audit.rows if r.run_id == big.run_id]
    assert [(r.seq, r.stage, r.op, r.key) for r in rows] == [
        (1, "Receive", "set", "items"),
        (1, "Receive", "set", "status"),
        (2, "Price", "set", "total"),
        (2, "Price", "set", "status"),
        (3, "Reserve", "append", "ledger"),
        (4, "Charge", "set", "charged"),
        (6, "Ship", "set", "status"),
    ]
    assert rows[-2].value == 27 and rows[4].value == ["reserve Y x3"]
    merge = next(c for c in big.snapshot.commits if c.kind == "merge")
    assert merge.seq == 5 and not any(r.seq == 5 for r in rows)
    assert big.snapshot.recorder_failures == ()
