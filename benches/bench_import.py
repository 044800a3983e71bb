"""What importing trackway costs a fresh interpreter: ``import trackway`` and the first names.

Each row runs ``python -c CODE`` in a new process, 5 times (1 with ``--quick``), and keeps
the best wall-clock time (the least disturbed by the rest of the machine; the median is shown
beside it). ``python -c pass`` is the interpreter's own start-up, for reference. The
``-X importtime`` column is what the interpreter itself counts for the imports of that code
(start-up's own imports left out), from one extra run.

Target: ``import trackway`` ≤ 0.3 s, start-up included — the facade loads its layers on first
use (PEP 562), so a CLI or a test that imports trackway and touches nothing pays almost
nothing. The other rows show what the first names cost: a flowchart loads the engine (and
pydantic, jsonschema), an agent the three layers and the HTTP client.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import print_table, print_targets, write_json

ROWS = [
    ("python -c pass", "pass"),
    ("import trackway", "import trackway"),
    ("from trackway import Executor, flow_chart", "from trackway import Executor, flow_chart"),
    ("from trackway import Agent, mock, tool", "from trackway import Agent, mock, tool"),
    ("import trackway.testing", "import trackway.testing"),
]
TARGET_S = 0.3


def _wall(code: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - started


def _importtime_ms(code: str) -> float:
    """The cumulative -X importtime of every top-level import ``code`` makes, in ms."""
    baseline = _importtime_modules("pass")
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, check=True
    )
    total = 0
    for line in out.stderr.splitlines():
        _, _, rest = line.partition("import time:")
        fields = rest.split("|")
        if len(fields) != 3 or not fields[1].strip().isdigit():
            continue
        name = fields[2]
        top_level = len(name) - len(name.lstrip()) == 1
        if top_level and name.strip() not in baseline:
            total += int(fields[1])
    return total / 1000


def _importtime_modules(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, check=True
    )
    return {line.rpartition("|")[2].strip() for line in out.stderr.splitlines() if "|" in line}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="one run per row")
    ap.add_argument("--no-peers", action="store_true", help="(no peers here; accepted)")
    ap.add_argument("--profile", action="store_true", help="(accepted; see -X importtime)")
    args = ap.parse_args()
    repeats = 1 if args.quick else 5
    rows: list[dict[str, Any]] = []
    for label, code in ROWS:
        _wall(code)  # warm the file system cache: the first run reads every .pyc from disk
        times = [_wall(code) for _ in range(repeats)]
        rows.append(
            {
                "code": label,
                "best_s": min(times),
                "median_s": statistics.median(times),
                "importtime_ms": _importtime_ms(code),
                "repeats": repeats,
            }
        )
    print_table(
        f"Import cost in a fresh interpreter (best and median of {repeats}, seconds)",
        ["code", "best s", "median s", "-X importtime ms"],
        [
            [r["code"], f"{r['best_s']:.3f}", f"{r['median_s']:.3f}", r["importtime_ms"]]
            for r in rows
        ],
    )
    facade = next(r for r in rows if r["code"] == "import trackway")
    targets = [
        {
            "target": "import trackway, start-up included (s, best)",
            "measured": facade["best_s"],
            "threshold": f"≤ {TARGET_S}",
            "pass": facade["best_s"] <= TARGET_S,
        }
    ]
    print_targets(targets)
    path = write_json(
        "bench_import",
        {
            "method": "wall clock of `python -c CODE` in a new process, after one warm-up run; "
            "best and median of the repeats; importtime_ms: -X importtime, top-level imports "
            "not made by `python -c pass`",
            "rows": rows,
            "targets": targets,
        },
    )
    print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
