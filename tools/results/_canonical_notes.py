"""The canonical notes as data, so a tool in another language quotes the same sentences.

``python -m trackway.tools.results._canonical_notes`` regenerates ``trackway/canonical_notes.json``
from the constants themselves; the file holds no version, so it cannot go stale on a release.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Any

import orjson

from trackway.tools.results import _declared, _limits
from trackway.tools.results._period import PERIOD_WIRE

__all__ = ["CANONICAL_NOTES_FILE", "canonical_notes", "main", "render", "write"]

CANONICAL_NOTES_FILE = "canonical_notes.json"
"""The file's name inside the ``trackway`` package."""

_NOTES = ("ABSENCE_NOTE", "COVERAGE_NOTE", "SEMANTICS_NOTE", "IN_PROGRESS_CLAUSE")
_MARKERS = ("ABSENCE_MARKER", "COVERAGE_MARKER")
_HEADINGS = (
    "COVERAGE_BLOCK_HEADING",
    "CHECKED_LABEL",
    "NOT_CHECKED_LABEL",
    "CANNOT_COVER_LABEL",
    "IN_PROGRESS_SECTION_LABEL",
    "PERIOD_LABEL",
    "ASSUMED_LABEL",
)


def canonical_notes() -> dict[str, Any]:
    """Every note, marker, heading and wire key a foreign tool or reader must match byte for
    byte, grouped and keyed by the constant's name."""
    return {
        "notes": {name: getattr(_declared, name) for name in _NOTES},
        "markers": {name: getattr(_declared, name) for name in _MARKERS},
        "headings": {name: getattr(_limits, name) for name in _HEADINGS},
        "wire": {"PERIOD_WIRE": dict(PERIOD_WIRE), "IN_PROGRESS_WIRE": _declared.IN_PROGRESS_WIRE},
    }


def render() -> bytes:
    """The file's exact bytes: indented, keys sorted, one trailing newline."""
    return (
        orjson.dumps(canonical_notes(), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
    )


def write(path: str | Path) -> None:
    """Write the canonical notes to ``path``."""
    Path(path).write_bytes(render())


def _package_file() -> Path:
    """The file in the source folder of ``trackway``: an editable install's link tree is
    followed back to the source, so the regenerated file is the one that gets packaged."""
    root = files("trackway")
    if not isinstance(root, Path):
        raise SystemExit("trackway is not installed from a source tree; regenerate it there")
    return (root / "__init__.py").resolve().parent / CANONICAL_NOTES_FILE


def main(target: Path | None = None) -> Path:
    """Regenerate the file (by default ``trackway/canonical_notes.json``) and return its path."""
    path = _package_file() if target is None else target
    write(path)
    return path


if __name__ == "__main__":  # pragma: no cover - run as a script
    print(f"wrote {main()}")
