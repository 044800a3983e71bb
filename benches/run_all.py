"""Run every ``benches/bench_*.py`` in turn, each in its own process, stopping at a failure.

Each bench runs with this same interpreter from the repository root; arguments given here
are passed on to every bench (e.g. ``--quick``). ``make bench`` calls this script.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    scripts = sorted(BENCH_DIR.glob("bench_*.py"))
    if not scripts:
        print(f"no bench_*.py found in {BENCH_DIR}", file=sys.stderr)
        return 1
    for script in scripts:
        print(f"\n=== {script.name} ===", flush=True)
        started = time.perf_counter()
        code = subprocess.call([sys.executable, str(script), *argv], cwd=BENCH_DIR.parent)
        took = time.perf_counter() - started
        if code != 0:
            print(f"\n{script.name} failed (exit {code}) after {took:.1f} s; stopping", flush=True)
            return code
        print(f"=== {script.name}: ok in {took:.1f} s ===", flush=True)
    print(f"\nall {len(scripts)} bench(es) passed; results in {BENCH_DIR / 'results'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
