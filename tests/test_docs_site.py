"""The documentation site builds with ``mkdocs build --strict`` (what ``make docs`` runs).

Strict turns every warning into a failed build: a link or anchor between pages that points
nowhere, a page left out of the nav, a docstring mkdocstrings cannot render. The API reference
is generated from the docstrings (docs/reference/, mkdocstrings reading the editable
install's link tree, see mkdocs.yml).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=config.parent,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1", "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=110,
    )


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_site_builds_strict_with_the_api_reference(tmp_path: Path) -> None:
    site = tmp_path / "site"
    build = _build(ROOT / "mkdocs.yml", site)
    output = build.stdout + build.stderr
    assert build.returncode == 0, output
    assert not re.search(r"^WARNING\b", output, re.MULTILINE), output

    reference = site / "reference"
    expected = {
        "engine": ["Executor", "flow_chart", "RunResult", "StageError"],
        "agent": ["Agent", "served_at", "replay", "LLMRequest"],
        "tools": ["define_tool", "ToolContext", "mcp_client"],
        "recorders": ["narrative", "metrics", "jsonl"],
    }
    for namespace, names in expected.items():
        html = (reference / namespace / "index.html").read_text(encoding="utf-8")
        for name in names:
            # Documented under its public path.
            assert f'id="trackway.{namespace}.{name}"' in html, (namespace, name)
        # Private modules are never the documented path.
        assert not re.search(rf'id="trackway\.{namespace}\._', html), namespace
        # Docstrings render as Markdown, Sphinx roles included (docs_hooks/griffe_rst.py).
        assert ":class:" not in _text(html), namespace
    # Methods a class gathers from its mixins are on its page (sync twins, streams, hooks).
    for namespace, member in (
        ("engine", "Executor.resume_sync"),
        ("agent", "Agent.run_sync"),
        ("agent", "Agent.stream"),
        ("agent", "Agent.snapshot"),
    ):
        html = (reference / namespace / "index.html").read_text(encoding="utf-8")
        assert f'id="trackway.{namespace}.{member}"' in html, member
    engine = _text((reference / "engine" / "index.html").read_text(encoding="utf-8"))
    assert re.search(r"Executor\s*\(\s*chart\s*:\s*FlowChart", engine), "no signature"
    assert "Runs one chart." in engine

    # Links to repository files outside docs/ lead to generated pages showing their source.
    for page in site.rglob("*.html"):
        for href in re.findall(r'href="([^"#]*source/[^"#]*)"', page.read_text("utf-8")):
            assert (page.parent / href / "index.html").is_file(), (page, href)


def _docs_copy(tmp_path: Path) -> Path:
    """The repository as seen by mkdocs, with a private copy of docs/ to break."""
    copy = tmp_path / "repo"
    copy.mkdir()
    for entry in ROOT.iterdir():
        if entry.name in ("docs", "site", ".git", ".venv"):
            continue
        (copy / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    shutil.copytree(ROOT / "docs", copy / "docs")
    return copy


def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    copy = _docs_copy(tmp_path)
    page = copy / "docs" / "guide" / "state.md"
    page.write_text(
        page.read_text(encoding="utf-8")
        + "\nSee [a page that is not there](no-such-page.md),"
        + " [a missing heading](charts.md#no-such-heading),"
        + " [a missing example](../../examples/no_such_example.py)"
        + " and [an example that is there](../../examples/loan.py).\n",
        encoding="utf-8",
    )

    build = _build(copy / "mkdocs.yml", tmp_path / "site")

    output = build.stdout + build.stderr
    assert build.returncode != 0, output
    # These three, and nothing else, fail it: the copy is otherwise the real docs, and the
    # link to examples/loan.py resolves (docs_hooks/repo_links.py).
    assert "Aborted with 3 warnings in strict mode" in output, output
    assert "contains a link 'no-such-page.md'" in output
    assert "does not contain an anchor '#no-such-heading'" in output
    assert "contains a link '../../examples/no_such_example.py'" in output
