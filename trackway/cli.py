"""The ``trackway`` command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from trackway.engine import Executor, Snapshot

from ._demo import demo_chart

__all__ = ["main"]


def _demo(out_dir: Path) -> int:
    chart = demo_chart()
    print(chart.describe(), end="\n\n")
    result = Executor(chart).run_sync(
        {"application": {"name": "Ada Lovelace", "amount": 18_000, "income": 64_000}}
    )
    snap = result.snapshot
    print(f"Run {result.run_id}: {result.status}, {len(snap)} commits")
    for c in snap.history():
        writes = ", ".join(f"{op.kind} {op.key}" for op in c.ops) or "no writes"
        frame = f" [branch {c.frame}]" if c.frame else ""
        print(
            f"  {c.seq:>2}. {c.stage_path:<22} {c.outcome:<5} read {list(c.reads)}; {writes}{frame}"
        )
        decision = (c.detail or {}).get("decision")
        if decision:
            for rule in decision.get("rules", []):
                mark = "matched" if rule["matched"] else "no match"
                print(f"        rule {rule['label']!r}: {mark}")
            print(f"        chose {decision['chosen']!r}")
    route = next(c.seq for c in snap.history() if c.stage_id == "route")
    print(f"\nState just before Route (state_at({route - 1})): {dict(snap.state_at(route - 1))}")
    print(f"Final decision: {result.state['decision']}")
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{result.run_id}.json"
    path.write_bytes(snap.to_json())
    again = Snapshot.from_json(path.read_bytes())
    assert again == snap, "the recording did not round-trip"
    print(f"Recording: {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="trackway", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run an offline demo chart and print its audit trail")
    demo.add_argument(
        "--out",
        type=Path,
        default=Path("trackway-demo"),
        help="where to write the run's recording (default: ./trackway-demo)",
    )
    args = parser.parse_args(argv)
    if args.command == "demo":
        return _demo(args.out)
    return 2  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":
    sys.exit(main())
