"""Run every ``benches/bench_*.py`` in turn, each in its own process, and judge the targets.

Each bench runs with this same interpreter from the repository root; arguments given here
are passed on to every bench (e.g. ``--quick``). ``make bench`` calls this script.

A bench reports its targets in ``results/<bench>.json`` (``targets``: ``{target, measured,
threshold, pass}``). A timing is noisy, so a bench with a failed target is run once more, and
only the targets that fail again count as missed: a miss is a miss twice in a row. The run
ends with the missed targets listed and exits 1 when there is any, or when a bench crashed
(exited non-zero without a failed target to show for it; a crash is not re-run).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent


@dataclass
class Outcome:
    """One bench's run: its exit code, its failed target rows, whether it was run again."""

    name: str
    code: int
    failed: list[dict[str, Any]] = field(default_factory=list)
    rerun: bool = False
    seconds: float = 0.0

    @property
    def crashed(self) -> bool:
        return self.code != 0 and not self.failed


def _failed_targets(results: Path, since: float) -> list[dict[str, Any]] | None:
    """The failed target rows of a results file written at or after ``since`` (``None``
    when the bench wrote none this time: an old file says nothing about this run)."""
    if not results.is_file() or results.stat().st_mtime < since:
        return None
    doc = json.loads(results.read_text(encoding="utf-8"))
    return [t for t in doc.get("targets", []) if t.get("pass") is False]


def _run_once(script: Path, argv: Sequence[str], cwd: Path) -> tuple[int, list[dict[str, Any]]]:
    results = script.parent / "results" / f"{script.stem}.json"
    started = time.time() - 1  # file systems with one-second mtimes
    code = subprocess.call([sys.executable, str(script), *argv], cwd=cwd)
    return code, _failed_targets(results, started) or []


def run_bench(script: Path, argv: Sequence[str], cwd: Path) -> Outcome:
    """Run ``script``; when a target failed, once more, and keep the second run's verdict."""
    started = time.perf_counter()
    code, failed = _run_once(script, argv, cwd)
    outcome = Outcome(script.stem, code, failed)
    if failed:
        names = ", ".join(str(t["target"]) for t in failed)
        print(f"\n{script.name}: {len(failed)} target(s) failed ({names}); running it again")
        code, failed = _run_once(script, argv, cwd)
        outcome = Outcome(script.stem, code, failed, rerun=True)
    outcome.seconds = time.perf_counter() - started
    return outcome


def _report(outcomes: list[Outcome], results_dir: Path) -> int:
    missed = [(o.name, t) for o in outcomes for t in o.failed]
    crashed = [o for o in outcomes if o.crashed]
    if missed:
        print(f"\n{len(missed)} target(s) missed (failed twice in a row):")
        for name, t in missed:
            print(f"  {name}: {t['target']}: measured {t['measured']}, threshold {t['threshold']}")
    for o in crashed:
        print(f"\n{o.name} crashed (exit {o.code}); its output is above")
    if missed or crashed:
        return 1
    print(f"\nall {len(outcomes)} bench(es) met their targets; results in {results_dir}")
    return 0


def main(argv: list[str], bench_dir: Path = BENCH_DIR) -> int:
    scripts = sorted(bench_dir.glob("bench_*.py"))
    if not scripts:
        print(f"no bench_*.py found in {bench_dir}", file=sys.stderr)
        return 1
    outcomes: list[Outcome] = []
    for script in scripts:
        print(f"\n=== {script.name} ===", flush=True)
        outcome = run_bench(script, argv, bench_dir.parent)
        outcomes.append(outcome)
        verdict = (
            f"crashed (exit {outcome.code})"
            if outcome.crashed
            else f"{len(outcome.failed)} target(s) missed"
            if outcome.failed
            else "ok" + (" on the second run" if outcome.rerun else "")
        )
        print(f"=== {script.name}: {verdict} in {outcome.seconds:.1f} s ===", flush=True)
    return _report(outcomes, bench_dir / "results")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
