"""benches/run_all.py judges the targets: a miss twice in a row fails ``make bench``.

Fake bench scripts in a temporary folder stand in for the real ones (which take minutes):
each writes ``results/<name>.json`` as a real bench does, and counts its runs in a file.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

RUN_ALL = Path(__file__).resolve().parent.parent / "benches" / "run_all.py"


@pytest.fixture(scope="module")
def run_all() -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location("run_all_under_test", RUN_ALL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def _bench(folder: Path, name: str, passes: list[bool], *, exit_code: int = 0) -> Path:
    """A bench whose n-th run reports one target passing as ``passes[n]`` (the last entry
    repeats), writes no results when ``passes`` is empty, and exits with ``exit_code``."""
    script = folder / f"{name}.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import json, sys
            from pathlib import Path
            here = Path(__file__).resolve().parent
            runs = here / "{name}.runs"
            n = int(runs.read_text()) if runs.exists() else 0
            runs.write_text(str(n + 1))
            passes = {passes!r}
            if passes:
                ok = passes[min(n, len(passes) - 1)]
                target = {{"target": "speed (ms)", "measured": 12.5, "threshold": "≤ 10",
                           "pass": ok}}
                (here / "results").mkdir(exist_ok=True)
                (here / "results" / "{name}.json").write_text(json.dumps({{"targets": [target]}}))
            sys.exit({exit_code})
            """
        )
    )
    return script


def _runs(folder: Path, name: str) -> int:
    return int((folder / f"{name}.runs").read_text())


def test_all_targets_met_exits_zero(run_all, tmp_path, capsys):
    _bench(tmp_path, "bench_a", [True])
    _bench(tmp_path, "bench_b", [True])
    assert run_all.main([], tmp_path) == 0
    assert "all 2 bench(es) met their targets" in capsys.readouterr().out
    assert _runs(tmp_path, "bench_a") == 1


def test_a_target_missed_twice_is_listed_and_fails(run_all, tmp_path, capsys):
    _bench(tmp_path, "bench_a", [True])
    _bench(tmp_path, "bench_slow", [False])
    assert run_all.main([], tmp_path) == 1
    out = capsys.readouterr().out
    assert "1 target(s) missed" in out
    assert "bench_slow: speed (ms): measured 12.5, threshold ≤ 10" in out
    assert "met their targets" not in out
    assert _runs(tmp_path, "bench_slow") == 2  # re-run once before it was called missed


def test_a_noisy_target_that_passes_on_the_second_run_is_not_missed(run_all, tmp_path, capsys):
    _bench(tmp_path, "bench_noisy", [False, True])
    assert run_all.main([], tmp_path) == 0
    out = capsys.readouterr().out
    assert "running it again" in out and "ok on the second run" in out
    assert _runs(tmp_path, "bench_noisy") == 2


def test_a_bench_that_exits_non_zero_over_a_missed_target_is_re_run(run_all, tmp_path):
    _bench(tmp_path, "bench_strict", [False, True], exit_code=0)
    _bench(tmp_path, "bench_exits", [False], exit_code=1)
    assert run_all.main([], tmp_path) == 1
    assert _runs(tmp_path, "bench_exits") == 2


def test_a_crash_fails_the_run_without_a_re_run_and_the_others_still_run(run_all, tmp_path, capsys):
    _bench(tmp_path, "bench_a_crash", [], exit_code=3)
    _bench(tmp_path, "bench_b", [True])
    assert run_all.main([], tmp_path) == 1
    assert "bench_a_crash crashed (exit 3)" in capsys.readouterr().out
    assert _runs(tmp_path, "bench_a_crash") == 1
    assert _runs(tmp_path, "bench_b") == 1


def test_a_results_file_older_than_the_run_says_nothing(run_all, tmp_path):
    _bench(tmp_path, "bench_silent", [])
    (tmp_path / "results").mkdir()
    stale = tmp_path / "results" / "bench_silent.json"
    stale.write_text(json.dumps({"targets": [{"target": "t", "pass": False}]}))
    os.utime(stale, (1_000_000, 1_000_000))
    assert run_all.main([], tmp_path) == 0


def test_arguments_are_passed_on_and_no_bench_is_an_error(run_all, tmp_path, capsys):
    (tmp_path / "bench_args.py").write_text(
        "import sys, pathlib\n"
        "pathlib.Path(__file__).with_suffix('.args').write_text(' '.join(sys.argv[1:]))\n"
    )
    assert run_all.main(["--quick"], tmp_path) == 0
    assert (tmp_path / "bench_args.args").read_text() == "--quick"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run_all.main([], empty) == 1
    assert "no bench_*.py found" in capsys.readouterr().err
