"""``import trackway`` stays cheap: the facade loads a layer on first use of one of its names.

Each check runs in a fresh interpreter (this one has imported everything long ago) and
asserts which modules are loaded afterwards, not how long it took: the timing is
benches/bench_import.py's job.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("networkx", "httpx2", "jsonschema", "pydantic")


def _loaded_after(code: str, watch: tuple[str, ...]) -> set[str]:
    report = f"print(json.dumps([m for m in {list(watch)!r} if m in sys.modules]))"
    probe = f"{code}\nimport json, sys\n{report}"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_import_trackway_loads_no_layer_and_no_heavy_library():
    layers = ("trackway.engine", "trackway.tools", "trackway.agent", "trackway.recorders")
    assert _loaded_after("import trackway", HEAVY + layers) == set()


def test_a_flowchart_name_does_not_load_the_agent_layer_or_its_http_client():
    loaded = _loaded_after(
        "from trackway import Executor, flow_chart", ("trackway.agent", "httpx2", "networkx")
    )
    assert loaded == set()


def test_a_deprecated_engine_name_does_not_load_the_agent_layer_either():
    code = "import warnings; warnings.simplefilter('ignore'); import trackway; trackway.Checkpoint"
    assert _loaded_after(code, ("trackway.engine", "trackway.agent")) == {"trackway.engine"}


def test_an_agent_name_loads_the_layers_it_needs():
    loaded = _loaded_after("from trackway import Agent", ("trackway.engine", "trackway.agent"))
    assert loaded == {"trackway.engine", "trackway.agent"}


@pytest.mark.parametrize(
    "code",
    [
        "import trackway.engine; name = trackway.engine.StageError",
        "from trackway.engine import StageError as name",
        "import trackway; name = trackway.StageError",
    ],
)
def test_public_names_show_the_facade_however_their_layer_was_imported(code):
    probe = f"{code}\nprint(repr(name))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "<class 'trackway.StageError'>"


@pytest.mark.parametrize(
    "code",
    [
        "import trackway.engine; name = trackway.engine.CheckpointError",
        "from trackway.engine import CheckpointError as name",
        "import trackway; from trackway import StageError; import trackway.engine as e; "
        "name = e.CheckpointError",
    ],
)
def test_names_off_the_top_level_show_their_subpackage_however_it_was_imported(code):
    probe = f"{code}\nprint(repr(name))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "<class 'trackway.engine.CheckpointError'>"


def test_star_import_and_dir_see_every_public_name():
    import trackway

    namespace: dict[str, object] = {}
    exec("from trackway import *", namespace)
    assert set(trackway.__all__) <= set(namespace)
    assert set(trackway.__all__) <= set(dir(trackway))
