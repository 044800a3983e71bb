"""The canonical notes file is pinned both ways: it equals what the constants generate, and
every published constant is in it with the same value."""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path
from typing import Any

import orjson
import pytest

from trackway.tools.results import _declared, _limits
from trackway.tools.results._canonical_notes import (
    CANONICAL_NOTES_FILE,
    _package_file,
    canonical_notes,
    main,
    render,
    write,
)
from trackway.tools.results._period import PERIOD_WIRE

_PUBLISHED_SUFFIXES = ("_NOTE", "_CLAUSE", "_MARKER", "_HEADING", "_LABEL", "_WIRE")


def _packaged() -> bytes:
    packaged = files("trackway").joinpath(CANONICAL_NOTES_FILE)
    assert packaged.is_file(), (
        f"{CANONICAL_NOTES_FILE} is not in the installed package: list it under "
        "[tool.setuptools.package-data] and reinstall"
    )
    return packaged.read_bytes()


def _flat(notes: dict[str, Any]) -> dict[str, Any]:
    return {name: value for group in notes.values() for name, value in group.items()}


def test_the_packaged_file_is_what_the_constants_generate() -> None:
    # A stale file fails here: regenerate with `python -m trackway.tools.results._canonical_notes`.
    assert _packaged() == render()
    assert json.loads(_packaged()) == canonical_notes()


def test_every_value_equals_its_constant() -> None:
    notes = json.loads(_packaged())
    assert set(notes) == {"notes", "markers", "headings", "wire"}
    for name, value in notes["notes"].items():
        assert value == getattr(_declared, name)
    for name, value in notes["markers"].items():
        assert value == getattr(_declared, name)
    for name, value in notes["headings"].items():
        assert value == getattr(_limits, name)
    assert notes["wire"] == {"PERIOD_WIRE": PERIOD_WIRE, "IN_PROGRESS_WIRE": "in_progress"}
    assert notes["markers"] == {"ABSENCE_MARKER": "af_absent", "COVERAGE_MARKER": "af_coverage"}


def test_every_published_constant_is_in_the_file() -> None:
    flat = _flat(json.loads(_packaged()))
    names = [
        (module, name)
        for module in (_declared, _limits)
        for name in module.__all__
        if name.endswith(_PUBLISHED_SUFFIXES)
    ]
    assert len(names) >= 14
    for module, name in names:
        assert name in flat, name
        assert flat[name] == getattr(module, name), name
    for name in ("ABSENCE_NOTE", "COVERAGE_NOTE", "SEMANTICS_NOTE", "IN_PROGRESS_CLAUSE"):
        assert isinstance(flat[name], str) and flat[name].strip()


def test_the_file_holds_no_version() -> None:
    text = _packaged().decode()
    assert "version" not in text.lower()
    assert "0.1.0" not in text


def test_write_renders_sorted_indented_with_a_trailing_newline(tmp_path: Path) -> None:
    target = tmp_path / "notes.json"
    write(target)
    data = target.read_bytes()
    assert data == render()
    assert data.endswith(b"}\n") and not data.endswith(b"\n\n")
    assert (
        data
        == orjson.dumps(canonical_notes(), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
        + b"\n"
    )
    assert list(json.loads(data)) == sorted(json.loads(data))


def test_the_module_writes_beside_the_package() -> None:
    target = _package_file()
    assert target.name == CANONICAL_NOTES_FILE
    assert target.parent == (Path(str(files("trackway"))) / "__init__.py").resolve().parent
    assert not target.parent.is_symlink()


def test_main_writes_the_given_path(tmp_path: Path) -> None:
    target = tmp_path / CANONICAL_NOTES_FILE
    assert main(target) == target
    assert target.read_bytes() == _packaged()


def test_a_package_outside_a_source_tree_is_not_regenerated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import trackway.tools.results._canonical_notes as module

    monkeypatch.setattr(module, "files", lambda _name: object())
    with pytest.raises(SystemExit, match="source tree"):
        module._package_file()
