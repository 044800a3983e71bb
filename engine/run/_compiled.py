"""Which build is running: the modules this interpreter imported compiled, if any."""

from __future__ import annotations

import copyreg
import importlib
import importlib.machinery
import importlib.util
import os
import pickle
import types
from typing import Any

__all__ = ["compiled_modules"]

_PACKAGES = ("trackway.engine", "trackway.recorders", "trackway.tools", "trackway.agent")


def compiled_modules() -> tuple[str, ...]:
    """The trackway modules that run compiled here, sorted (``()`` on the pure-Python build).

    ``TRACKWAY_COMPILE=1 pip install .`` compiles the hot path with mypyc (docs/compiled.md):
    each compiled module sits beside its source, and Python imports the compiled one. A
    bench or a bug report says which build it ran by this."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    found: list[str] = []
    for package in _PACKAGES:
        spec = importlib.util.find_spec(package)
        for folder in (spec and spec.submodule_search_locations) or ():
            # the layers' subpackages too (trackway.engine.run, ...): each folder with an
            # __init__.py below the layer's
            for here, subfolders, entries in os.walk(folder):
                subfolders[:] = sorted(
                    d for d in subfolders if os.path.isfile(os.path.join(here, d, "__init__.py"))
                )
                inside = os.path.relpath(here, folder)
                name = package if inside == "." else f"{package}.{inside.replace(os.sep, '.')}"
                for entry in entries:
                    for suffix in suffixes:
                        if entry.endswith(suffix):
                            found.append(f"{name}.{entry[: -len(suffix)]}")
                            break
    return tuple(sorted(found))


def compiled_function(module: str, qualname: str) -> Any:
    """The function ``qualname`` of ``module``: how a compiled function is unpickled."""
    found: Any = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


_NAMES: dict[int, tuple[str, str]] = {}
"""Each compiled module-level function (by id: they live as long as their module) with its
module and name, which the function object itself does not carry."""


def _by_name(fn: Any) -> tuple[Any, tuple[str, str]]:
    where = _NAMES.get(id(fn))
    if where is None:
        for module in compiled_modules():
            for name, value in vars(importlib.import_module(module)).items():
                if type(value) is type(fn):
                    _NAMES[id(value)] = (module, name)
        where = _NAMES.get(id(fn))
    if where is None:
        raise pickle.PicklingError(
            f"cannot pickle {fn!r}: a compiled function that is not a module attribute of "
            "trackway; pass a function defined at module level instead"
        )
    return compiled_function, where


def _pickle_compiled_functions_by_name() -> None:
    """Let a compiled function pickle as a Python one does, by its module and name.

    mypyc's function objects refuse to pickle, and a chart sent to a Ray worker carries the
    stage functions that call them (cloudpickle reads the dispatch table registered here)."""
    from . import _stage

    kind = type(_stage.run_stage)
    if kind is not types.FunctionType:
        copyreg.pickle(kind, _by_name)


_pickle_compiled_functions_by_name()
