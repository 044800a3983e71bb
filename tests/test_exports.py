"""The public surface is deliberate: every package lists exactly what it exports."""

from __future__ import annotations

import ast
import importlib
import inspect
import pathlib
import pickle
import re
import types
import warnings

import pytest

import trackway

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


LAYERS = ("trackway.engine", "trackway.tools", "trackway.agent")
ROOT = pathlib.Path(__file__).resolve().parent.parent
FIRST_HOUR_PAGES = ["README.md", "docs/getting-started.md", "docs/index.md", "docs/concepts.md"]

# Top-level names the first-hour pages do not happen to use, kept there on purpose: the other
# providers and the decorator form of define_tool, the other stores, and the errors most
# code catches (every error a run or a model call raises is one of these four).
ALSO_AT_THE_TOP = {
    "anthropic",
    "openai",
    "tool",
    "MemoryStore",
    "PostgresStore",
    "TrackwayError",
    "RunError",
    "StageError",
    "ProviderError",
}


def _names_used_from_the_top(source: str) -> set[str]:
    """``from trackway import X`` and ``trackway.X`` (``import trackway [as tw]``) in
    ``source``."""
    tree = ast.parse(source)
    used: set[str] = set()
    aliases: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "trackway" and node.level == 0:
            used |= {alias.name for alias in node.names}
        if isinstance(node, ast.Import):
            aliases |= {a.asname or a.name for a in node.names if a.name == "trackway"}
    for node in ast.walk(tree):
        named = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
        if named and node.value.id in aliases:
            used.add(node.attr)
    return used


def _first_hour_names() -> set[str]:
    """The names the README, getting started, the home page, the concepts page and the
    examples take from the top level, in their Python blocks and ``from trackway import``
    mentions."""
    used: set[str] = set()
    for page in FIRST_HOUR_PAGES:
        text = (ROOT / page).read_text(encoding="utf-8")
        for block in re.findall(r"```python[^\n]*\n(.*?)```", text, re.S):
            used |= _names_used_from_the_top(block)
        for mention in re.findall(r"`(from trackway import [^`]*)`", text):
            used |= _names_used_from_the_top(mention)
    for example in sorted((ROOT / "examples").glob("*.py")):
        used |= _names_used_from_the_top(example.read_text(encoding="utf-8"))
    return used - {"engine", "agent", "tools", "recorders", "testing"}


def _names_of_0_1_0() -> list[str]:
    text = (ROOT / "tests" / "top_level_names_0_1_0.txt").read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def test_the_top_level_is_the_first_hour_names():
    used = _first_hour_names()
    assert len(used) > 30, "the scan of the first-hour pages found almost nothing"
    assert set(trackway.__all__) - {"__version__"} == used | ALSO_AT_THE_TOP


def test_the_reference_lists_the_top_level_names_under_their_subpackage():
    text = (ROOT / "docs" / "reference" / "index.md").read_text(encoding="utf-8")
    section = text.split("## The top level\n", 1)[1].split("\n## ", 1)[0]
    listed: dict[str, str] = {}
    for paragraph in section.split("\n\n"):
        found = re.match(r"From `(trackway\.\w+)`:(.*)", paragraph.strip(), re.S)
        if found:
            listed |= dict.fromkeys(re.findall(r"`(\w+)`", found[2]), found[1])
    assert set(listed) == set(trackway.__all__) - {"__version__"}
    for name, layer in listed.items():
        assert name in importlib.import_module(layer).__all__, (name, layer)


def test_a_top_level_name_is_its_layers_object_and_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in set(trackway.__all__) - {"__version__"}:
            layer = next(m for m in map(importlib.import_module, LAYERS) if name in m.__all__)
            assert getattr(trackway, name) is getattr(layer, name), name
            exec(f"from trackway import {name}", {})


@pytest.mark.parametrize("name", sorted(set(_names_of_0_1_0()) - set(trackway.__all__)))
def test_every_other_name_of_0_1_0_still_imports_from_the_top_with_a_warning(name):
    with pytest.warns(DeprecationWarning) as caught:
        value = getattr(trackway, name)
    (warning,) = caught
    message = str(warning.message)
    assert message.startswith(f"trackway.{name} is deprecated at the top level")
    assert "0.2.0" in message
    # the place it names is real: that module exports the very same object
    place = re.fullmatch(r".*; import it from ([\w.]+) \(from \1 import (\w+)\)", message)
    assert place is not None and place[2] == name, message
    module = importlib.import_module(place[1])
    assert name in module.__all__ and getattr(module, name) is value


def test_the_warning_points_at_the_line_that_used_the_old_place():
    here = inspect.currentframe()
    assert here is not None
    with pytest.warns(DeprecationWarning, match="from trackway.engine import CheckpointError") as a:
        line_a = here.f_lineno + 1
        from trackway import CheckpointError  # noqa: F401
    with pytest.warns(DeprecationWarning, match="from trackway.engine import Checkpoint\\)") as b:
        line_b = here.f_lineno + 1
        trackway.Checkpoint  # noqa: B018
    assert (a[0].filename, a[0].lineno) == (__file__, line_a)
    assert (b[0].filename, b[0].lineno) == (__file__, line_b)


def test_a_moved_name_pickles_without_the_top_level():
    import trackway.engine

    error = trackway.engine.CheckpointError("gone")
    assert type(error).__module__ == "trackway.engine"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert type(pickle.loads(pickle.dumps(error))) is trackway.engine.CheckpointError


def test_dir_lists_the_top_level_names_and_not_the_deprecated_ones():
    listed = set(dir(trackway))
    assert set(trackway.__all__) <= listed
    assert not listed & (set(_names_of_0_1_0()) - set(trackway.__all__))


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="module 'trackway' has no attribute 'Agnet'"):
        trackway.Agnet  # noqa: B018
    assert not hasattr(trackway, "_LAYERS_") and "Agent" in dir(trackway)


def test_engine_does_not_import_the_layers_above_it():
    root = pathlib.Path(importlib.import_module("trackway.engine").__file__).parent
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith("trackway"), f"{path.name}: {node.module}"
            if isinstance(node, ast.Import):
                assert all(not a.name.startswith("trackway") for a in node.names), path.name
