"""Every ```python block in docs/**/*.md runs, each in a fresh namespace.

A block is skipped only when its first line is the comment ``# doctest: skip``.
Test ids are ``<path under docs>:<line of the opening fence>``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
SKIP = "# doctest: skip"
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>```+|~~~+)[ \t]*(?P<info>[^`\s]*)")


def _blocks(path: Path) -> list[tuple[int, str]]:
    """The ```python blocks of one Markdown file as ``(fence_line, source)``."""
    out: list[tuple[int, str]] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        fence, indent, start = m["fence"], len(m["indent"]), i
        body: list[str] = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
            i += 1
        i += 1  # the closing fence
        if m["info"].lower() in ("python", "py"):
            out.append((start + 1, "\n".join(body) + "\n"))
    return out


def _collect() -> list[pytest.ParameterSet]:
    params = []
    for path in sorted(DOCS.rglob("*.md")):
        rel = path.relative_to(DOCS).as_posix()
        for line, source in _blocks(path):
            first = source.lstrip("\n").split("\n", 1)[0].strip()
            marks = [pytest.mark.skip(reason="marked '# doctest: skip'")] if first == SKIP else []
            params.append(pytest.param(rel, line, source, id=f"{rel}:{line}", marks=marks))
    return params


_PARAMS = _collect()


def test_docs_have_examples() -> None:
    assert _PARAMS, f"no ```python blocks found under {DOCS}"


@pytest.mark.parametrize(("rel", "line", "source"), _PARAMS)
def test_docs_example(rel: str, line: int, source: str) -> None:
    # Pad with blank lines so tracebacks show the line numbers of the Markdown file.
    code = compile("\n" * line + source, f"docs/{rel}", "exec")
    namespace: dict[str, object] = {"__name__": f"docs_example_{line}"}
    exec(code, namespace)
