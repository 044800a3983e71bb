"""An expense approval that waits for a manager, and is resumed by another process.

Run it: ``python examples/approval.py [RUNS_DB]``. Without ``RUNS_DB`` it uses a temporary
directory. The first process submits an expense; the chart routes it to a manager, pauses and
keeps the run in a SQLite store. A second process (this file again, started with ``resume``)
loads the checkpoint from the store, resumes it with the manager's answer and prints the audit
trail. Then the first process tries to resume the same checkpoint again, and is refused.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from trackway import (
    CheckpointClaimedError,
    Executor,
    FlowChart,
    Rule,
    Scope,
    Snapshot,
    SqliteStore,
    decide,
    flow_chart,
)

AUTO_APPROVE_LIMIT = 500
MANAGERS = {"engineering": "Maria Jensen", "sales": "Tom Berg"}
EXPENSE = {
    "id": "EXP-1042",
    "employee": "Sam Okafor",
    "department": "engineering",
    "amount": 1850,
    "currency": "EUR",
    "purpose": "Team offsite venue",
}


# -- the chart ----------------------------------------------------------------------------


def submit(scope: Scope) -> None:
    expense = scope["expense"]
    scope["amount"] = expense["amount"]
    scope["approver"] = MANAGERS[expense["department"]]
    scope.append("audit", f"{expense['id']} submitted by {expense['employee']}")


def check_policy(scope: Scope) -> Any:
    return decide(
        scope,
        [Rule({"amount": {"lte": AUTO_APPROVE_LIMIT}}, "auto", label="Within the auto limit")],
        default="manager",
    )


def auto_approve(scope: Scope) -> None:
    scope["decision"] = "approve"
    scope.append("audit", "approved by policy")


def ask_manager(scope: Scope) -> None:
    expense = scope["expense"]
    scope.append("audit", f"sent to {scope['approver']}")
    scope.pause(
        {
            "approver": scope["approver"],
            "question": f"Approve {expense['amount']} {expense['currency']} for "
            f"{expense['purpose']!r}?",
            "answers": ["approve", "decline"],
        }
    )


def record_answer(scope: Scope, answer: Any) -> None:
    if answer not in ("approve", "decline"):
        scope.pause({"approver": scope["approver"], "question": "Please answer approve or decline"})
    scope["decision"] = answer
    scope.append("audit", f"{answer}d by {scope['approver']}")


def settle(scope: Scope) -> None:
    scope["status"] = "approved for payment" if scope["decision"] == "approve" else "declined"
    scope.append("audit", scope["status"])


def build_chart() -> FlowChart:
    return (
        flow_chart("Submit", submit, id="submit", description="Take the expense claim")
        .decider("Check policy", check_policy, id="check-policy")
        .branch("auto", "Auto-approve", auto_approve, id="auto-approve")
        .branch("manager", "Ask manager", ask_manager, id="ask-manager", on_resume=record_answer)
        .end()
        .then("Settle", settle, id="settle", description="Approve or decline")
        .build(name="Expense approval")
    )


# -- the two processes --------------------------------------------------------------------


def print_trail(snapshot: Snapshot) -> None:
    print(f"Audit trail of {snapshot.run_id} ({snapshot.status}, {len(snapshot)} commits):")
    for c in snapshot.history():
        writes = ", ".join(op.key for op in c.ops) or "-"
        print(f"  {c.seq}. {c.stage_path:<24} {c.kind:<8} {c.outcome:<7} wrote {writes}")
        detail = c.detail or {}
        if "decision" in detail:
            print(f"       chose {detail['decision']['chosen']!r}")
        if "pause" in detail:
            print(f"       asked {detail['pause']['approver']}: {detail['pause']['question']}")
        if "resume" in detail:
            print(f"       answer: {json.dumps(detail['resume']['value'])}")
    print("Audit log: " + "; ".join(snapshot.state["audit"]))


def start(db: Path) -> int:
    store = SqliteStore(db)
    try:
        result = Executor(build_chart(), store=store).run_sync({"expense": EXPENSE})
    finally:
        store.close()
    assert result.status == "paused" and result.checkpoint is not None
    checkpoint_id = result.checkpoint.checkpoint_id
    asked = result.checkpoint.payload
    print(f"[process {os.getpid()}] run {result.run_id}: paused at {result.checkpoint.paused_at}")
    print(f"Waiting for {asked['approver']}: {asked['question']}")
    print(f"Checkpoint {checkpoint_id} is in {db}")

    # The manager answers later, somewhere else: here, a separate Python process.
    child = subprocess.run(
        [sys.executable, __file__, "resume", str(db), checkpoint_id, "approve"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    print(child.stdout, end="")
    if child.returncode != 0:
        print(child.stderr, end="", file=sys.stderr)
        return child.returncode

    # A second click on the same approval link: the store has the claim, so it is refused.
    store = SqliteStore(db)
    try:
        again = store.load_checkpoint(checkpoint_id)
        Executor(build_chart(), store=store).resume_sync(again, "approve")
    except CheckpointClaimedError:
        print(f"A second resume of {checkpoint_id} was refused: a checkpoint resumes once.")
    else:
        raise AssertionError("the checkpoint was resumed twice")
    finally:
        store.close()
    return 0


def resume(db: Path, checkpoint_id: str, answer: str) -> int:
    store = SqliteStore(db)
    try:
        checkpoint = store.load_checkpoint(checkpoint_id)
        who = checkpoint.payload["approver"]
        print(f"[process {os.getpid()}] resuming {checkpoint_id}: {who} answered {answer!r}")
        result = Executor(build_chart(), store=store).resume_sync(checkpoint, answer)
        outcome = f"{result.status}, {result.state['status']}"
        print(f"[process {os.getpid()}] run {result.run_id}: {outcome}")
        print_trail(store.load(result.run_id))  # read back from the store, not from memory
    finally:
        store.close()
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["resume"]:
        db, checkpoint_id, answer = argv[1:4]
        return resume(Path(db), checkpoint_id, answer)
    if argv:
        return start(Path(argv[0]))
    with tempfile.TemporaryDirectory() as tmp:
        return start(Path(tmp) / "approvals.db")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
