"""Where each package of the distribution keeps its modules, read from ``pyproject.toml``.

The source folders are not named like the packages (``engine/`` holds ``trackway.engine``), so
tests that walk the sources by package name ask here.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def package_folders(root: Path = ROOT) -> dict[str, Path]:
    """Each package ``[tool.setuptools] packages`` lists, and the folder that holds its
    modules: a subpackage sits in its parent's folder (trackway.engine.core in engine/core)."""
    setuptools = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapped: dict[str, str] = setuptools["package-dir"]
    folders = {}
    for package in setuptools["packages"]:
        parts = package.split(".")
        for cut in range(len(parts), 0, -1):
            base = mapped.get(".".join(parts[:cut]))
            if base is not None:
                folders[package] = root.joinpath(base, *parts[cut:])
                break
    return folders
