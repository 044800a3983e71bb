"""The optional compiled build: ``TRACKWAY_COMPILE=1 pip install .`` compiles the agent's hot
path with mypyc; without the variable the build is pure Python, as it always was.

Everything else about the package (its metadata, its packages and their folders) lives in
``pyproject.toml``. This file only adds the extension modules. mypyc names a module by where
its file sits, and the package maps top-level folders (``engine/``, ``agent/`` ...) into
``trackway.*``; so the sources are first copied into ``build/mypyc-src/trackway/...``, where a
file's path is its module's name. The compiled modules sit beside their ``.py`` sources in
the wheel, and Python imports the compiled one. ``docs/compiled.md`` says more.
"""

from __future__ import annotations

import os
import shutil
import sys
import tomllib
from pathlib import Path
from typing import Any

from setuptools import setup

ROOT = Path(__file__).resolve().parent
STAGING = ROOT / "build" / "mypyc-src"

# Each package (dotted) and its folder, as pyproject.toml maps them: a subpackage sits in
# its parent's folder (trackway.engine.core in engine/core).
with open(ROOT / "pyproject.toml", "rb") as _project:
    _SETUPTOOLS: dict[str, Any] = tomllib.load(_project)["tool"]["setuptools"]
PACKAGE_DIRS: dict[str, str] = _SETUPTOOLS["package-dir"]
PACKAGES: list[str] = _SETUPTOOLS["packages"]


def _folder(package: str) -> Path:
    """The folder that holds ``package``'s modules."""
    parts = package.split(".")
    for cut in range(len(parts), 0, -1):
        mapped = PACKAGE_DIRS.get(".".join(parts[:cut]))
        if mapped is not None:
            return ROOT.joinpath(mapped, *parts[cut:])
    raise SystemExit(f"pyproject.toml maps no folder for {package}")


# The modules a tool-calling turn spends its time in (benches/bench_instructions.py counts
# them). Each must keep to what mypyc compiles faithfully: docs/compiled.md lists the rules.
COMPILED = (
    "trackway/engine/run/_scope.py",
    "trackway/engine/core/_state.py",
    "trackway/engine/run/_stage.py",
    "trackway/engine/run/_walker.py",
    "trackway/engine/run/_context.py",
    "trackway/engine/core/_values.py",
    "trackway/agent/loop/_dispatch.py",
    "trackway/agent/loop/_tool_run.py",
    "trackway/agent/context/_request.py",
    "trackway/agent/messages/_history_messages.py",
    "trackway/agent/loop/_served.py",
    "trackway/agent/loop/_nudge.py",
    "trackway/agent/loop/_model_call.py",
    "trackway/agent/context/_cost.py",
    "trackway/agent/messages/_tool_ids.py",
    "trackway/agent/skills/_law.py",
    "trackway/agent/context/_state_view.py",
    "trackway/agent/offer/_serve_skills.py",
    "trackway/agent/offer/_tool_choice.py",
    "trackway/agent/offer/_offered.py",
)

MYPY_REQUIREMENT = "mypy>=2.4,<3"


def _wanted() -> bool:
    value = os.environ.get("TRACKWAY_COMPILE", "").strip().lower()
    if value in ("", "0", "false", "no"):
        return False
    if value in ("1", "true", "yes"):
        return True
    sys.exit(f"TRACKWAY_COMPILE={value!r}: set it to 1 to compile the hot path, or unset it")


def _stage_sources() -> None:
    """Copy every package module into ``build/mypyc-src`` at its module path."""
    shutil.rmtree(STAGING, ignore_errors=True)
    for package in PACKAGES:
        folder = _folder(package)
        target = STAGING.joinpath(*package.split("."))
        target.mkdir(parents=True, exist_ok=True)
        for source in sorted(folder.glob("*.py")):
            shutil.copy2(source, target / source.name)
        typed = folder / "py.typed"
        if typed.exists():
            shutil.copy2(typed, target / "py.typed")


_BUILDS = {"build", "build_ext", "bdist_wheel", "editable_wheel", "develop", "install"}


def _compiled_extensions() -> tuple[list[Any], list[str]]:
    """The extension modules and the build's extra requirements.

    The build backend runs this file several times: to ask what the build needs (mypy is not
    there yet, so only the requirement is named), to write the metadata (nothing to compile)
    and to build (mypy is there, and mypyc translates the modules to C)."""
    if not _wanted():
        return [], []
    if _BUILDS.isdisjoint(sys.argv[1:]):
        return [], [MYPY_REQUIREMENT]
    try:
        from mypyc.build import mypycify
    except ImportError:
        return [], [MYPY_REQUIREMENT]
    _stage_sources()
    here = Path.cwd()
    os.chdir(STAGING)  # mypy names each module from its path under the current folder
    try:
        extensions = mypycify(
            ["--config-file", str(ROOT / "pyproject.toml"), *COMPILED],
            opt_level="3",
            target_dir=str(ROOT / "build" / "mypyc"),
        )
    finally:
        os.chdir(here)
    for extension in extensions:
        extension.sources = [
            source if os.path.isabs(source) else str(STAGING / source)
            for source in extension.sources
        ]
    return extensions, [MYPY_REQUIREMENT]


def _clear_stale_builds() -> None:
    """setuptools reuses ``build/lib*``: a wheel would take the compiled modules of an
    earlier build with it (a pure build after a compiled one, or a module since dropped from
    ``COMPILED``), and Python imports those before the sources."""
    for pattern in ("lib*", "bdist*", "temp*"):
        for stale in (ROOT / "build").glob(pattern):
            shutil.rmtree(stale, ignore_errors=True)


if not _BUILDS.isdisjoint(sys.argv[1:]):
    _clear_stale_builds()
_extensions, _requirements = _compiled_extensions()
setup(ext_modules=_extensions, setup_requires=_requirements)
