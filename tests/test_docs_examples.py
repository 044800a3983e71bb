"""Every ```python block in docs/**/*.md runs, each in a fresh namespace, and prints what the
```text block after it says (when one follows with only prose between).

A block is skipped only when its first line is the comment ``# doctest: skip``, or starts
``# needs PostgreSQL`` and no server is named (``TRACKWAY_TEST_PG_DSN``).
Test ids are ``<path under docs>:<line of the opening fence>``.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
SKIP = "# doctest: skip"
NEEDS_PG = "# needs PostgreSQL"
"""A block whose first line starts so runs where ``TRACKWAY_TEST_PG_DSN`` names a server (as in
CI) and is skipped elsewhere, like the other PostgreSQL tests."""
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>```+|~~~+)[ \t]*(?P<info>[^`\s]*)")


def _blocks(path: Path) -> list[tuple[int, str, str | None]]:
    """The ```python blocks of one Markdown file as ``(fence_line, source, output)``:
    ``output`` is the ```text block that comes next when the prose between them is empty or
    says the snippet prints it ("It prints:"), else ``None`` (a text block may also show a
    message or a law, which nothing prints)."""
    out: list[tuple[int, str, str | None]] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    pending: int | None = None  # index in out of the last python block, while prose follows
    said = ""  # the prose since the last block
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None:
            if lines[i].startswith("#"):
                pending = None  # a new section: what follows is not that snippet's output
            said += lines[i] + " "
            i += 1
            continue
        fence, indent, start = m["fence"], len(m["indent"]), i
        body: list[str] = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
            i += 1
        i += 1  # the closing fence
        info = m["info"].lower()
        if info in ("python", "py"):
            out.append((start + 1, "\n".join(body) + "\n", None))
            pending = len(out) - 1
        elif info == "text" and pending is not None and (not said.strip() or "print" in said):
            line, source, _ = out[pending]
            out[pending] = (line, source, "\n".join(body))
            pending = None
        else:
            pending = None
        said = ""
    return out


def _collect() -> list[pytest.ParameterSet]:
    params = []
    for path in sorted(DOCS.rglob("*.md")):
        rel = path.relative_to(DOCS).as_posix()
        for line, source, output in _blocks(path):
            first = source.lstrip("\n").split("\n", 1)[0].strip()
            marks = [pytest.mark.skip(reason="marked '# doctest: skip'")] if first == SKIP else []
            if first.startswith(NEEDS_PG) and not os.environ.get("TRACKWAY_TEST_PG_DSN"):
                marks = [pytest.mark.skip(reason="needs TRACKWAY_TEST_PG_DSN (.ci/postgres.sh)")]
            params.append(pytest.param(rel, line, source, output, id=f"{rel}:{line}", marks=marks))
    return params


_PARAMS = _collect()


def test_docs_have_examples() -> None:
    assert _PARAMS, f"no ```python blocks found under {DOCS}"


@pytest.mark.parametrize(("rel", "line", "source", "output"), _PARAMS)
def test_docs_example(rel: str, line: int, source: str, output: str | None) -> None:
    # Pad with blank lines so tracebacks show the line numbers of the Markdown file.
    code = compile("\n" * line + source, f"docs/{rel}", "exec")
    namespace: dict[str, object] = {"__name__": f"docs_example_{line}"}
    # Only stdout is taken: stderr stays the real stream a child process can inherit.
    with contextlib.redirect_stdout(io.StringIO()) as stdout:
        exec(code, namespace)
    if output is None:
        return
    printed = stdout.getvalue()
    assert _matches(output, printed), (
        f"docs/{rel}:{line}: the ```text block after this snippet says it prints\n{output}\n"
        f"but it printed\n{printed}"
    )


def _matches(expected: str, printed: str) -> bool:
    """The page's text block against what ran: line by line, trailing spaces ignored, and
    ``...`` in the page standing for any text (run ids, timings) as in doctest."""
    want = [line.rstrip() for line in expected.strip("\n").splitlines()]
    got = [line.rstrip() for line in printed.strip("\n").splitlines()]
    pattern = "\n".join(re.escape(line).replace(re.escape("..."), ".*?") for line in want)
    return re.fullmatch(pattern, "\n".join(got), re.S) is not None


def test_a_text_block_after_a_snippet_is_its_output_and_can_disagree(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```python\nprint('a')\n```\n\nIt prints:\n\n```text\na\n```\n\n"
        "```python\nx = 1\n```\n\nThe rule it follows:\n\n```text\nnot printed\n```\n\n"
        "```python\nprint(2)\n```\n\n## Next\n\n```text\nunrelated\n```\n",
        encoding="utf-8",
    )
    blocks = _blocks(page)
    assert [output for _, _, output in blocks] == ["a", None, None]
    assert _matches("run ... took ... ms", "run run-1 took 0.3 ms\n")
    assert not _matches("a\nb", "a\nc\n")
    assert not _matches("a", "a\nand more\n")
