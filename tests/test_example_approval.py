"""examples/approval.py runs as a script: it pauses, resumes in another process, and audits."""

from __future__ import annotations

import re
import runpy

from trackway import Executor, SqliteStore

from .example_script import EXAMPLES, run_script

EXAMPLE = EXAMPLES / "approval.py"


def run_example(*args: str) -> str:
    proc = run_script(EXAMPLE, *args)
    return proc.stdout


def test_pauses_resumes_in_a_second_process_and_prints_the_audit_trail(tmp_path):
    db = tmp_path / "approvals.db"
    out = run_example(str(db))

    pids = re.findall(r"^\[process (\d+)\]", out, flags=re.MULTILINE)
    assert len(pids) == 3 and pids[0] != pids[1] == pids[2], out  # resumed elsewhere
    (run_id,) = set(re.findall(r"run (run-[0-9a-f]+-[0-9a-f]+):", out))
    assert f"run {run_id}: paused at ask-manager#2" in out
    assert "Waiting for Maria Jensen: Approve 1850 EUR for 'Team offsite venue'?" in out
    assert f"run {run_id}: done, approved for payment" in out
    assert f"Audit trail of {run_id} (done, 5 commits):" in out
    trail = [line.split()[1] for line in out.splitlines() if re.match(r"\s+\d+\. ", line)]
    assert trail == [
        "submit#0",
        "check-policy#1",
        "ask-manager#2",
        "ask-manager#2:resume1",
        "settle#3",
    ]
    assert "chose 'manager'" in out and 'answer: "approve"' in out
    assert (
        "Audit log: EXP-1042 submitted by Sam Okafor; sent to Maria Jensen; "
        "approved by Maria Jensen; approved for payment"
    ) in out
    assert f"A second resume of {run_id}@3 was refused" in out

    # The store the two processes shared holds the whole run, in one log.
    store = SqliteStore(db)
    try:
        (info,) = store.list_runs()
        assert (info.run_id, info.status, info.commit_count) == (run_id, "done", 5)
        snapshot = store.load(run_id)
        assert snapshot.state["decision"] == "approve"
        assert [c.outcome for c in snapshot.history()] == ["ok", "ok", "paused", "ok", "ok"]
    finally:
        store.close()


def test_runs_without_arguments_in_a_temporary_directory():
    out = run_example()
    assert "approvals.db" in out and "done, approved for payment" in out


def test_small_expenses_are_approved_without_a_pause(tmp_path):
    approval = runpy.run_path(str(EXAMPLE))
    expense = {**approval["EXPENSE"], "amount": 120}
    store = SqliteStore(tmp_path / "runs.db")
    try:
        result = Executor(approval["build_chart"](), store=store).run_sync({"expense": expense})
    finally:
        store.close()
    assert result.status == "done" and result.checkpoint is None
    assert result.state["status"] == "approved for payment"
    assert list(result.state["audit"])[1] == "approved by policy"
