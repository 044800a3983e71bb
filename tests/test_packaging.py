"""First contact: the license the metadata names, and what `make demo` and `make test` install.

The Makefile is checked with ``make -n`` (print, do not run) against a venv path that does
not exist, which is what a fresh clone looks like to make.
"""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from importlib.metadata import entry_points
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_the_license_file_is_the_apache_2_text_the_metadata_names():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert meta["license"] == "Apache-2.0"
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License\n                           Version 2.0, January 2004" in text
    for part in ("TERMS AND CONDITIONS FOR USE", "END OF TERMS AND CONDITIONS", "APPENDIX"):
        assert part in text
    assert len(text) > 11_000  # the whole text, not a summary


def _dry_run(target: str, venv: Path, *touched: str) -> list[str]:
    venv.mkdir(exist_ok=True)
    (venv / "bin").mkdir(exist_ok=True)
    (venv / "bin" / "python").touch()
    for stamp in touched:
        (venv / stamp).touch()
    out = subprocess.run(
        ["make", "-n", f"VENV={venv}", target],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return [line for line in out.stdout.splitlines() if "pip install" in line]


needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


@needs_make
def test_make_demo_on_a_fresh_clone_installs_the_package_alone_with_progress(tmp_path):
    (install,) = _dry_run("demo", tmp_path / "venv")
    assert "install -e . " in install and "[" not in install
    assert " -q" not in install  # pip's progress shows


@needs_make
def test_make_test_installs_the_dev_docs_ray_and_skos_extras_after_make_demo(tmp_path):
    (install,) = _dry_run("test", tmp_path / "venv", ".installed-base")
    # the Ray fan-out tests and the SKOS import/export tests run under make test
    assert "'.[dev,docs,ray,skos]'" in install


@needs_make
def test_make_demo_after_make_test_installs_nothing(tmp_path):
    assert _dry_run("demo", tmp_path / "venv", ".installed", ".installed-base") == []


def test_the_pytest_plugin_is_registered_under_the_name_trackway():
    (plugin,) = [e for e in entry_points(group="pytest11") if e.name == "trackway"]
    assert plugin.value == "trackway_pytest_plugin"


def test_loading_the_pytest_plugin_imports_nothing_of_trackway():
    # pytest loads entry-point plugins before coverage starts: the plugin must not import
    # the package it would then leave unmeasured
    import subprocess
    import sys

    code = (
        "import sys, trackway_pytest_plugin; "
        "print(sorted(m for m in sys.modules if m.startswith('trackway')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['trackway_pytest_plugin']"
