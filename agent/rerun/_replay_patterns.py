"""The patterns (``swarm``, ``map_reduce``, ``tree_of_thoughts``) a replay runs as, read from
their recordings.

As for the other compositions, each member that ran is rebuilt from its own part of the log
and each slot that never ran stands in (never run by the replay); the settings are read back
from what the pattern wrote (a swarm's members, entry and hop cap and a tree's ``k``, ``beam``
and ``depth`` at ``_start``; a map-reduce's ``max_items`` at ``_split``), and its functions
answer as recorded: a ``split`` gives the items written, an ``evaluate`` the scores in the
``tree`` rows, a ``reduce`` the answer ``_gather`` wrote.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trackway.engine import Snapshot, thaw

from ..messages._errors import ReplayDivergence
from ..runtime._agent import Agent
from ._replay_composition import _InOrder, _members, _recorded, _runner, _stub

__all__ = ["PATTERN_KINDS", "pattern_from_recording"]

PATTERN_KINDS = ("swarm", "mapreduce", "tot")
"""The chart-id kinds of the patterns (``swarm-<name>``, ``mapreduce-<name>``, ``tot-<name>``)."""


def pattern_from_recording(snap: Snapshot, kind: str, name: str) -> Agent:
    """The pattern ``snap`` recorded (``kind`` one of :data:`PATTERN_KINDS`)."""
    if kind == "swarm":
        return _swarm(snap, name)
    if kind == "mapreduce":
        return _map_reduce(snap, name)
    return _tree(snap, name)


def _written(snap: Snapshot, stage_id: str, key: str) -> list[Any]:
    """What the composition's own ``stage_id`` wrote to ``key``, each time it ran."""
    return [
        thaw(op.value)
        for c in _recorded(snap, stage_id)
        for op in c.ops
        if op.key == key and op.kind in ("set", "append")
    ]


def _setting(snap: Snapshot, key: str, pattern: str, stage: str = "_start") -> Mapping[str, Any]:
    found = _written(snap, stage, key)
    if not found or not isinstance(found[0], Mapping):
        raise ReplayDivergence(
            f"this {pattern} recording holds no {key!r} settings at {stage!r}; replay it with "
            "the runner that made it, replay(record, runner)",
            stage_path=stage,
            key=key,
        )
    settings: Mapping[str, Any] = found[0]
    return settings


def _slot(snap: Snapshot, ran: list[str], member: str) -> Agent:
    return _runner(snap, member) if member in ran else _stub()


def _swarm(snap: Snapshot, name: str) -> Agent:
    from ..compose._swarm import build_swarm

    settings = _setting(snap, "swarm", "swarm")
    ran = _members(snap)
    members = {str(m): _slot(snap, ran, str(m)) for m in settings["members"]}
    return build_swarm(
        members,
        entry=str(settings["entry"]),
        max_hops=int(settings["max_hops"]),
        handoffs=settings.get("handoffs"),
        tool=str(settings["tool"]),
        name=name,
    )


def _map_reduce(snap: Snapshot, name: str) -> Agent:
    from ..compose._map_reduce import _build

    written = _written(snap, "_split", "map_reduce")
    # a run that never split (its split member paused) replays up to there: one slot will do
    cap = int(written[0]["max_items"]) if written else 1
    ran = _members(snap)
    mappers = [_slot(snap, ran, f"map_{i}") for i in range(cap)]
    split: Any
    if "split" in ran:
        split = _runner(snap, "split")
    else:
        items = _InOrder(_written(snap, "_split", "items"), "the split items", "_split")
        split = lambda message: items.next()  # noqa: E731
    reduce: Any
    if "reduce" in ran:
        reduce = _runner(snap, "reduce")
    else:
        reduced = _InOrder(_written(snap, "_gather", "current"), "the reduced answer", "_gather")
        reduce = lambda answers: str(reduced.next())  # noqa: E731
    return _build(name, mappers, split, reduce, 1, {})


def _tree(snap: Snapshot, name: str) -> Agent:
    from ..compose._tree import _build

    settings = _setting(snap, "tot", "tree_of_thoughts")
    k, beam, depth = int(settings["k"]), int(settings["beam"]), int(settings["depth"])
    ran = _members(snap)
    cap = k * beam
    proposers = [_slot(snap, ran, f"propose_{i}") for i in range(cap)]
    if settings["evaluate"] == "member":
        judges = [_slot(snap, ran, f"evaluate_{i}") for i in range(cap)]
        return _build(name, proposers, judges[0], judges, k, beam, depth, 1, {})
    rows = [row for extended in _written(snap, "_beam", "tree") for row in extended]
    scores = _InOrder([row.get("score") for row in rows], "a thought's score", "_beam")
    return _build(name, proposers, lambda problem, path: scores.next(), None, k, beam, depth, 1, {})
