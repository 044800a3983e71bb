"""Write your own recorder: an audit trail of which stage wrote which state key.

Run it: ``python examples/custom_recorder.py``. The tests run it too (examples are tests).

A recorder is any object with some of the hook methods (``on_commit``, ``on_run_end``, ...);
subclassing ``Recorder`` gives no-op defaults. This one keeps one row per committed write,
credited to the stage that made it (inside a fork, the branch stage, not the merge), and is
attached next to the built-in narrative.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from trackway import (
    Commit,
    Executor,
    FlowChart,
    Recorder,
    RunEndEvent,
    RunStartEvent,
    Scope,
    flow_chart,
    thaw,
)
from trackway.recorders import narrative


class AuditRow(NamedTuple):
    run_id: str
    seq: int
    stage: str
    stage_path: str
    op: str
    key: str
    value: Any


class AuditTrail(Recorder):
    """Who wrote what: one row per committed write, per run."""

    name = "audit"  # how failures of this recorder are reported

    # Engine plumbing: a merge re-writes what its branches wrote; subflow input and output
    # commits copy values across a subflow boundary. Credit the stages that did the work.
    SKIP = frozenset({"merge", "subflow-input", "subflow-output"})

    def __init__(self) -> None:
        self.rows: list[AuditRow] = []
        self.status: dict[str, str] = {}

    def on_run_start(self, event: RunStartEvent) -> None:
        self.status[event.run_id] = "running"

    def on_commit(self, commit: Commit) -> None:
        if commit.kind in self.SKIP:
            return
        for op in commit.ops:
            row = AuditRow(
                commit.run_id,
                commit.seq,
                commit.stage_name,
                commit.stage_path,
                op.kind,
                op.key,
                thaw(op.value),  # a plain copy: committed values are read-only views
            )
            self.rows.append(row)

    def on_run_end(self, event: RunEndEvent) -> None:
        self.status[event.run_id] = event.status

    def who_wrote(self, key: str, run_id: str | None = None) -> list[str]:
        """The stages that wrote ``key``, in commit order."""
        return [r.stage for r in self._rows(run_id) if r.key == key]

    def report(self, run_id: str | None = None) -> str:
        lines = [f"{'seq':>3}  {'stage':<10} {'op':<6} {'key':<9} value"]
        for r in sorted(self._rows(run_id), key=lambda r: r.seq):
            lines.append(f"{r.seq:>3}  {r.stage:<10} {r.op:<6} {r.key:<9} {r.value!r}")
        return "\n".join(lines)

    def _rows(self, run_id: str | None) -> Iterable[AuditRow]:
        wanted = run_id or next(reversed(self.status), None)
        return (r for r in self.rows if r.run_id == wanted)


def receive(scope: Scope) -> None:
    order = scope["order"]
    scope["items"] = order["items"]
    scope["status"] = "received"


def price(scope: Scope) -> None:
    scope["total"] = sum(item["qty"] * item["price"] for item in scope["items"])
    scope["status"] = "priced"


def reserve(scope: Scope) -> None:
    scope.extend("ledger", [f"reserve {item['sku']} x{item['qty']}" for item in scope["items"]])


def charge(scope: Scope) -> None:
    scope["charged"] = scope["total"]


def ship(scope: Scope) -> None:
    scope["status"] = "shipped"


def build_chart() -> FlowChart:
    return (
        flow_chart("Receive", receive, id="receive")
        .then("Price", price, id="price")
        .fork("Fulfil", {"reserve": ("Reserve", reserve), "charge": ("Charge", charge)})
        .then("Ship", ship, id="ship")
        .build(name="Order")
    )


def main() -> AuditTrail:
    audit = AuditTrail()
    story = narrative()
    order = {
        "items": [{"sku": "A-1", "qty": 2, "price": 15}, {"sku": "B-7", "qty": 1, "price": 40}]
    }
    result = Executor(build_chart(), recorders=[audit, story]).run_sync({"order": order})
    print(f"Run {result.status}: total {result.state['total']}, status {result.state['status']}")
    print("\nAudit trail (who wrote what):")
    print(audit.report())
    print(f"\n'status' was written by: {', '.join(audit.who_wrote('status'))}")
    print("\nNarrative:")
    print(story.text())
    return audit


if __name__ == "__main__":
    main()
