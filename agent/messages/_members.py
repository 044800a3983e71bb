"""Naming composition members from a stage path: the mount ids on it, dotted.

A component ``id#n`` mounts something; a composition's own structure has ids starting with
``_`` and a branch key has no ``#``: neither is part of a member's name. So
``_members#1/pro/pro#1/call-llm#3`` is member ``pro``, and ``outer#1/debate#2/...`` inside
it ``outer.debate``.
"""

from __future__ import annotations

__all__ = ["base", "is_mount", "member_of"]


def base(component: str) -> str:
    """A path component without its ``#n`` counter."""
    return component.split("#", 1)[0]


def is_mount(part: str) -> bool:
    """Whether a path component mounts a member (see the module docstring)."""
    return "#" in part and not part.startswith("_")


def member_of(stage_path: str) -> str:
    """The member a stage belongs to (``""`` for the run's own stages)."""
    return ".".join(base(part) for part in stage_path.split("/")[:-1] if is_mount(part))
