"""The public surface is deliberate: every package lists exactly what it exports."""

from __future__ import annotations

import importlib
import types

import pytest

PACKAGES = ["trackway", "trackway.engine", "trackway.recorders", "trackway.tools", "trackway.agent"]


def _isort_key(name: str) -> tuple[int, str]:
    # ruff's RUF022 order: CONSTANTS, then Classes, then functions
    return (0 if name.isupper() else 1 if name[:1].isupper() else 2, name)


@pytest.mark.parametrize("name", PACKAGES)
def test_all_is_sorted_and_matches_the_public_names(name):
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert exported == sorted(exported, key=_isort_key), f"{name}.__all__ is not sorted"
    public = {
        attr
        for attr, value in vars(module).items()
        if not attr.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public == set(exported) - {"__version__"}


def test_facade_re_exports_the_layers_unchanged():
    import trackway
    import trackway.agent
    import trackway.engine
    import trackway.tools

    for layer in (trackway.engine, trackway.tools, trackway.agent):
        for attr in layer.__all__:
            assert getattr(trackway, attr) is getattr(layer, attr), attr


def test_engine_does_not_import_the_layers_above_it():
    import ast
    import pathlib

    root = pathlib.Path(importlib.import_module("trackway.engine").__file__).parent
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith("trackway"), f"{path.name}: {node.module}"
            if isinstance(node, ast.Import):
                assert all(not a.name.startswith("trackway") for a in node.names), path.name
