"""Examples are tests: each runs as a script, and the CLI demo runs end to end."""

from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

from trackway import Snapshot
from trackway.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_loan_example_decides_and_explains(capsys):
    runpy.run_path(str(ROOT / "examples" / "loan.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "decision: manual review" in out and "chose 'review' (default)" in out


def test_loan_example_rejects_high_risk():
    loan = runpy.run_path(str(ROOT / "examples" / "loan.py"))
    result = loan["run"]({"name": "Bo", "amount": 90_000, "income": 60_000})
    assert result.state["decision"] == "rejected"
    route = next(c for c in result.snapshot.history() if c.stage_id == "route")
    assert route.detail["decision"]["rules"][0]["matched"] is True


def test_cli_demo_prints_the_trail_and_writes_a_recording(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "FlowChart: Loan decision (demo)" in out and "Final decision: approved" in out
    (recording,) = tmp_path.glob("run-*.json")
    snap = Snapshot.from_json(recording.read_bytes())
    assert snap.status == "done" and snap.state["decision"] == "approved"


def test_cli_is_installed_as_a_command(tmp_path):
    exe = Path(sys.executable).with_name("trackway")
    proc = subprocess.run(
        [str(exe), "demo", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Recording:" in proc.stdout
