"""The public surface is deliberate: every package lists exactly what it exports."""

from __future__ import annotations

import importlib
import types

import pytest

PACKAGES = [
    "trackway",
    "trackway.engine",
    "trackway.recorders",
    "trackway.tools",
    "trackway.agent",
    "trackway.testing",
]


def _isort_key(name: str) -> tuple[int, str]:
    # ruff's RUF022 order: CONSTANTS, then Classes, then functions
    return (0 if name.isupper() else 1 if name[:1].isupper() else 2, name)


@pytest.mark.parametrize("name", PACKAGES)
def test_all_is_sorted_and_matches_the_public_names(name):
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert exported == sorted(exported, key=_isort_key), f"{name}.__all__ is not sorted"
    # dir() and getattr(), not vars(): the facade resolves its names on first use (PEP 562)
    public = {
        attr
        for attr in dir(module)
        if not attr.startswith("_") and not isinstance(getattr(module, attr), types.ModuleType)
    }
    assert public == set(exported) - {"__version__"}


def test_the_facade_exports_exactly_the_layers_names():
    import trackway

    layers = ("trackway.engine", "trackway.tools", "trackway.agent")
    names = {name for layer in layers for name in importlib.import_module(layer).__all__}
    assert set(trackway.__all__) - {"__version__"} == names


def test_an_unknown_name_is_an_attribute_error():
    import trackway

    with pytest.raises(AttributeError, match="no attribute 'Agnet'"):
        trackway.Agnet  # noqa: B018
    assert not hasattr(trackway, "_LAYERS_") and "Agent" in dir(trackway)


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
