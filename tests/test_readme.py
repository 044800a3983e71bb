"""The README's example is run as written, and the quick start's commands exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_example_runs_and_prints_what_it_claims(capsys):
    text = (ROOT / "README.md").read_text()
    block = re.search(r"## A chart in 20 lines\n\n```python\n(.*?)```", text, re.S)
    assert block is not None
    code = block.group(1)
    assert len(code.strip().splitlines()) <= 22
    exec(compile(code, "README.md", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "rejected"
    assert "'chosen': 'reject'" in lines[1]
    assert lines[2] == "high"


def test_quick_start_is_make_demo_and_make_test():
    text = (ROOT / "README.md").read_text()
    start = text.split("## Quick start", 1)[1].split("##", 1)[0]
    assert "make demo" in start and "make test" in start
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^demo:", makefile, re.M) and re.search(r"^test:", makefile, re.M)
    assert "make test" in (ROOT / ".ci" / "run").read_text()
