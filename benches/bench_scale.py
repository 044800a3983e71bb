"""Scaling out: group commit under durability "sync", the worker pool on PostgreSQL, and
fan-out on Ray — each a section of its own module, run here in one process run.

1. Group commit (``_scale_group.py``): µs per acknowledged commit at 1, 10 and 100
   concurrent runs sharing one store, SQLite (and PostgreSQL when ``TRACKWAY_TEST_PG_DSN`` is
   set), against the old one-fsync-per-commit path.
2. Workers (``_scale_workers.py``, needs ``TRACKWAY_TEST_PG_DSN``): runs per second for 1, 2
   and 4 ``trackway worker`` processes (10 stages of ~1 KB per run), claim latency, and the
   time from SIGKILLing a run's worker to its next commit by another.
3. Ray (``_scale_ray.py``, needs the ``ray`` extra): fan-out overhead per branch against
   inline, and the item count at which Ray wins on this machine.

Prints one table per section and the targets, writes ``benches/results/bench_scale.json``
and exits 1 when a target is missed.

    .venv/bin/python benches/bench_scale.py [--quick] [--only group,workers,ray]
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
import traceback
from collections.abc import Sequence
from typing import Any

from _common import machine_info, print_table, print_targets, write_json

SECTIONS = {
    "group": ("_scale_group", "group_section"),
    "workers": ("_scale_workers", "workers_section"),
    "ray": ("_scale_ray", "ray_section"),
}


def _print(section: dict[str, Any]) -> None:
    rows = section.get("rows") or []
    if section.get("skipped"):
        print(f"\n{section['title']}: skipped ({section['skipped']})")
        return
    if not rows:
        return
    headers = list(rows[0])
    print_table(section["title"], headers, [[r.get(h) for h in headers] for r in rows])


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="trackway scaling figures")
    ap.add_argument("--quick", action="store_true", help="fewer runs and items")
    ap.add_argument("--only", default=",".join(SECTIONS), help="sections, comma-separated")
    args = ap.parse_args(argv)
    chosen = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = sorted(set(chosen) - set(SECTIONS))
    if unknown:
        ap.error(f"unknown section(s) {unknown}; choose from {sorted(SECTIONS)}")
    results: dict[str, Any] = {}
    targets: list[dict[str, Any]] = []
    crashed: list[str] = []
    started = time.perf_counter()
    for name in chosen:
        module, fn = SECTIONS[name]
        try:
            section = getattr(importlib.import_module(module), fn)(args.quick)
        except Exception:
            traceback.print_exc()
            crashed.append(name)
            continue
        results[name] = section
        _print(section)
        targets.extend(section.get("targets", []))
    if targets:
        print_targets(targets)
    payload = {
        "machine": machine_info(),
        "quick": args.quick,
        "seconds": round(time.perf_counter() - started, 1),
        "sections": results,
        "targets": targets,
        "crashed": crashed,
    }
    path = write_json("bench_scale", payload)
    print(f"\nwrote {path}")
    missed = [t["target"] for t in targets if not t["pass"]]
    if crashed:
        print(f"\nFAIL: section(s) crashed: {', '.join(crashed)}")
    if missed:
        print(f"\nFAIL: {len(missed)} target(s) missed: {'; '.join(missed)}")
    return 1 if missed or crashed else 0


if __name__ == "__main__":
    sys.exit(main())
