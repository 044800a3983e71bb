"""Public names shown under the module users import them from, not their private one."""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["publish"]


def publish(
    names: Iterable[str], namespace: Mapping[str, Any], module: str, *, within: str = ""
) -> None:
    """Show the classes and functions among ``names`` (looked up in ``namespace``) as
    ``module``'s in reprs and tracebacks (``trackway.StageError``, not a private path); with
    ``within``, only those defined under that package."""
    for name in names:
        obj = namespace[name]
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        if getattr(obj, "__module__", "").startswith(within):
            obj.__module__ = module
