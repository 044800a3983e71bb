"""The compiled build (docs/compiled.md): which modules run compiled, and what the engine
does with a compiled stage function.

``make test-compiled`` runs the engine and agent suites again on the build ``TRACKWAY_COMPILE=1``
makes, with ``TRACKWAY_EXPECT_COMPILED=1``; the plain suite runs the pure build."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from tests.packages import package_folders
from trackway import Executor, flow_chart
from trackway.engine import ChartBuildError, compiled_modules

ROOT = Path(__file__).resolve().parents[2]


def _setup_list() -> tuple[str, ...]:
    """setup.py's COMPILED paths, as module names."""
    tree = ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "COMPILED":
            paths = ast.literal_eval(node.value)
            return tuple(sorted(p.removesuffix(".py").replace("/", ".") for p in paths))
    raise AssertionError("setup.py has no COMPILED list")


def test_the_build_under_test_is_the_one_expected():
    expected = _setup_list() if os.environ.get("TRACKWAY_EXPECT_COMPILED") == "1" else ()
    assert compiled_modules() == expected


def test_every_module_named_for_compiling_exists():
    folders = package_folders(ROOT)
    for name in _setup_list():
        package, module = name.rsplit(".", 1)
        assert (folders[package] / f"{module}.py").is_file(), name


class _CompiledAsync:
    """What mypyc makes of an async closure: a callable object that carries a ``__code__``
    of no parameters (so ``inspect`` calls it a coroutine function), whose signature lies."""

    def __init__(self) -> None:
        self.__code__ = (lambda: None).__code__

    def __call__(self, scope: object) -> None:
        scope["x"] = 1  # type: ignore[index]


def test_a_compiled_callable_is_not_refused_for_the_signature_its_code_stand_in_shows():
    result = Executor(flow_chart("S", _CompiledAsync()).build()).run_sync()
    assert result.state == {"x": 1}


def test_a_plain_function_of_the_wrong_arity_is_still_refused():
    with pytest.raises(ChartBuildError, match="cannot be called with 1 positional argument"):
        flow_chart("S", lambda: None).build()


def test_a_state_store_with_its_versions_survives_pickling():
    """A branch's store travels back from a Ray worker pickled; a compiled class is rebuilt
    through ``__init__`` with no arguments unless it says otherwise (``_History``)."""
    import pickle

    from trackway.engine.core._state import StateStore

    store = StateStore()
    store.seed("a", 1)
    store.apply(1, [("set", "a", b"2", 2), ("set", "b", b"3", 3)])
    back = pickle.loads(pickle.dumps(store))
    assert back.current() == {"a": 2, "b": 3}
    assert back.at(0) == {"a": 1} and back.value_at("a", 0) == 1


def test_a_compiled_function_pickles_by_its_module_and_name():
    import pickle

    from trackway.engine.run import _compiled, _stage

    assert pickle.loads(pickle.dumps(_stage.run_stage)) is _stage.run_stage
    assert (
        _compiled.compiled_function("trackway.engine.run._stage", "run_stage") is _stage.run_stage
    )


def test_a_function_no_compiled_module_holds_is_refused_by_name():
    import pickle

    from trackway.engine.run import _compiled

    with pytest.raises(pickle.PicklingError, match="not a module attribute of trackway"):
        _compiled._by_name(lambda: None)


def test_a_trackway_compile_value_it_does_not_know_is_refused_with_the_values_it_takes():
    import subprocess
    import sys

    env = {**os.environ, "TRACKWAY_COMPILE": "maybe"}
    done = subprocess.run(
        [sys.executable, "setup.py", "--name"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "TRACKWAY_COMPILE='maybe': set it to 1" in done.stderr
