"""The trace viewer on long recordings: writing the page, opening it, selecting commits.

A chart that loops N times (N = 1,000 and 10,000), each step incrementing ``i`` and appending
100 bytes to ``log``, is recorded with ``jsonl(path, chart=chart)``. Then, per N:

- ``write``: ``trackway view`` in Python (read the recording, tell the narrative from the
  log, lay out the chart, write the file): ms, and µs per commit (the growth between sizes
  says whether it stays O(commits));
- ``page``: the file's size;
- in headless Chromium (Playwright driving Debian's ``chromium``): ``open`` — from navigation
  to the page's ready mark (the data parsed, the last commit selected, its state folded from
  the log), as the page measures it; ``select`` — one click on a commit row until the state
  is on the page (first, middle, last), measured inside the page around the click.

No peer has an offline viewer of this kind, so there are no ratios here. Targets: opening
10,000 commits ≤ 2 s, any selection ≤ 100 ms (the page never freezes), write growth ≤ 1.5.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import clock, print_table, print_targets, write_json

from trackway import Executor, flow_chart
from trackway._viewer import write_viewer
from trackway.recorders import jsonl


def _recording(folder: Path, n: int) -> Path:
    def step(scope: Any) -> None:
        scope["i"] = scope.get("i", 0) + 1
        scope.append("log", "x" * 100)
        if scope["i"] >= n:
            scope.break_()

    chart = flow_chart("Step", step, id="step").loop_to("step").build()
    path = folder / f"loop-{n}.jsonl"
    Executor(chart, recorders=[jsonl(path, chart=chart)], max_iterations=n + 10).run_sync()
    return path


_SELECT = """(seq) => {
  const timeline = document.getElementById('timeline');
  timeline.scrollTop = (seq - 1) * 22;
  timeline.dispatchEvent(new Event('scroll'));
  const row = document.querySelector(`#timeline-rows .row[data-seq="${seq}"]`);
  const t0 = performance.now();
  row.click();
  const took = performance.now() - t0;
  const shown = document.querySelector('#state .kv[data-key="i"] .value').textContent;
  return [took, shown];
}"""


def _browser_rows(
    chromium: str, pages: dict[int, Path], repeats: int
) -> dict[int, dict[str, float]]:
    from playwright.sync_api import sync_playwright

    out: dict[int, dict[str, float]] = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=chromium,
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        for n, page_file in pages.items():
            opens, selects = [], {"first": [], "middle": [], "last": []}
            for _ in range(repeats):
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                page.goto(page_file.as_uri())
                page.wait_for_selector("body[data-ready=true]", timeout=60_000)
                opens.append(float(page.get_attribute("body", "data-ready-ms") or "nan"))
                for name, seq in (("first", 1), ("middle", n // 2), ("last", n)):
                    took, shown = page.evaluate(_SELECT, seq)
                    assert shown == str(seq), f"commit {seq}: the page shows i = {shown}"
                    selects[name].append(took)
                page.close()
            out[n] = {
                "open_ms": sorted(opens)[len(opens) // 2],
                **{f"select_{k}_ms": sorted(v)[len(v) // 2] for k, v in selects.items()},
            }
        browser.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="N = 1,000 only, one repeat")
    ap.add_argument("--no-peers", action="store_true", help="(no peers here; accepted)")
    ap.add_argument("--profile", action="store_true", help="(accepted; nothing to profile)")
    args = ap.parse_args()
    sizes = [1_000] if args.quick else [1_000, 10_000]
    repeats = 1 if args.quick else 3
    folder = Path(tempfile.mkdtemp(prefix="trackway-bench-viewer-"))
    rows: dict[int, dict[str, Any]] = {}
    pages: dict[int, Path] = {}
    for n in sizes:
        rec = _recording(folder, n)
        times = []
        for _ in range(repeats):
            t0 = clock()
            page = write_viewer(rec, folder / f"loop-{n}.html")
            times.append(clock() - t0)
        write_s = sorted(times)[len(times) // 2]
        pages[n] = page
        rows[n] = {
            "commits": n,
            "recording_bytes": rec.stat().st_size,
            "page_bytes": page.stat().st_size,
            "write_ms": write_s * 1000,
            "write_us_per_commit": write_s / n * 1e6,
        }
    chromium = os.environ.get("TRACKWAY_TEST_CHROMIUM") or shutil.which("chromium")
    if chromium:
        for n, measured in _browser_rows(chromium, pages, repeats).items():
            rows[n].update(measured)
    else:
        print("chromium not found: the browser rows were not measured (apt-get install chromium)")
    table = [
        [
            f"{n:,}",
            r["page_bytes"] / 1e6,
            r["write_ms"],
            r["write_us_per_commit"],
            r.get("open_ms"),
            r.get("select_first_ms"),
            r.get("select_middle_ms"),
            r.get("select_last_ms"),
        ]
        for n, r in rows.items()
    ]
    print_table(
        f"Trace viewer (medians of {repeats})",
        [
            "commits",
            "page MB",
            "write ms",
            "write µs/commit",
            "open ms",
            "select first ms",
            "select middle ms",
            "select last ms",
        ],
        table,
    )
    targets: list[dict[str, Any]] = []
    big = rows[max(rows)]
    if "open_ms" in big:
        targets.append(
            {
                "target": f"open {max(rows):,} commits (ms)",
                "measured": big["open_ms"],
                "threshold": "≤ 2,000",
                "pass": big["open_ms"] <= 2000,
            }
        )
        worst = max(r[k] for r in rows.values() for k in r if k.startswith("select_"))
        targets.append(
            {
                "target": "slowest selection (ms)",
                "measured": worst,
                "threshold": "≤ 100",
                "pass": worst <= 100,
            }
        )
    if len(rows) > 1:
        growth = rows[10_000]["write_us_per_commit"] / rows[1_000]["write_us_per_commit"]
        targets.append(
            {
                "target": "write growth 1,000 → 10,000 (per commit)",
                "measured": growth,
                "threshold": "≤ 1.5",
                "pass": growth <= 1.5,
            }
        )
    print_targets(targets)
    path = write_json(
        "bench_viewer",
        {"rows": list(rows.values()), "targets": targets, "chromium": chromium},
    )
    print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
