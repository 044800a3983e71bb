"""The composition a replay runs as, read from its recording: its members, and what its rules
decided.

A composition's members and rules (predicates, a merge function, ``until``) are code, which
the record does not hold; what they decided, it does. So, as gates and windows are, each is
rebuilt from the decisions the recording kept: a member from its own part of the log (an
agent from what it committed, a nested composition the same way, recursively), a
conditional's pick, a loop's rounds and a parallel's merged answer from the commits that
recorded them, handed out in the order they were made.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from trackway.engine import Commit, Snapshot, thaw

from ..messages._errors import ReplayDivergence
from ..messages._members import base, is_mount, member_of
from ..providers._mock import MockProvider
from ..runtime._agent import Agent
from ._replay_setup import agent_from_recording

__all__ = ["is_composition", "member_snapshot", "runner_from_recording"]

_MAX_ROUNDS = re.compile(r"max_rounds \((\d+)\) reached")


def is_composition(snap: Snapshot) -> bool:
    """Whether ``snap`` is (a part of) a composition's run: its own first stage is ``_seed``."""
    return any(c.frame == "" and c.stage_id == "_seed" for c in snap.history())


def runner_from_recording(snap: Snapshot) -> Agent:
    """The agent or composition a recording was made by, as far as a replay needs it."""
    if is_composition(snap):
        return composition_from_recording(snap)
    return agent_from_recording(snap)


def member_snapshot(snap: Snapshot, name: str) -> Snapshot:
    """One composition member's part of the log, as if it had run alone: the commits of its
    own frame (every round of a loop) with that frame as the run's, and what it contains
    kept below it (so a nested composition can be taken apart the same way). Its chart id
    is the mounted chart's, as its mount recorded it."""
    commits: list[Commit] = []
    chart_id = name
    for c in snap.history():
        parts = c.frame.split("/") if c.frame else []
        i = next((n for n, part in enumerate(parts) if is_mount(part)), None)
        if i is None or base(parts[i]) != name:
            continue
        prefix = "/".join(parts[: i + 1])
        path = c.stage_path[len(prefix) + 1 :] if c.stage_path.startswith(prefix + "/") else ""
        if not path and c.kind == "subflow-input" and not commits:
            chart_id = str((c.detail or {}).get("subflow") or name)
        commits.append(
            c._replace(
                seq=len(commits) + 1,  # numbered as if the member had run alone
                frame="/".join(parts[i + 1 :]),
                stage_path=path or c.stage_id,
            )
        )
    return Snapshot.from_commits(  # a member that never ran (a branch not taken): empty
        run_id=snap.run_id, chart_id=chart_id, status=snap.status, initial={}, commits=commits
    )


def composition_from_recording(snap: Snapshot) -> Agent:
    """The composition ``snap`` recorded: its kind and name from its chart id, each member
    that ran rebuilt from its part of the log, and its rules answering as recorded."""
    from ..compose._composition import Conditional, Loop, Parallel, Sequence

    kind, _, name = snap.chart_id.partition("-")
    members = _members(snap)
    if kind == "sequence":
        sequence = Sequence.create(name=name)
        for member in members:
            sequence.step(member, _runner(snap, member))
        return sequence.build()
    if kind == "parallel":
        parallel = Parallel.create(name=name)
        for member in members:
            if member != "judge" or _in_branch(snap, member):
                parallel.branch(member, _runner(snap, member))
        if "judge" in members and not _in_branch(snap, "judge"):
            return parallel.merge(_runner(snap, "judge")).build()
        return parallel.merge(_recorded_merge(snap)).build()
    if kind == "conditional":
        return _conditional(Conditional.create(name=name), snap, members)
    if kind == "loop":
        return _loop(snap, name, Loop)
    from ._replay_patterns import PATTERN_KINDS, pattern_from_recording

    if kind in PATTERN_KINDS:
        return pattern_from_recording(snap, kind, name)
    raise ReplayDivergence(
        f"this recording's composition ({snap.chart_id!r}) is not a Sequence, Parallel, "
        "Conditional, Loop, swarm, map_reduce or tree_of_thoughts: replay it with the runner "
        "that made it, replay(record, runner)",
        stage_path="",
        key=None,
    )


def _members(snap: Snapshot) -> list[str]:
    """The composition's own members that ran, in the order they were first mounted."""
    names: dict[str, None] = {}
    for c in snap.history():
        if c.kind == "subflow-input":
            member = member_of(c.stage_path + "/")
            if member and "." not in member:
                names.setdefault(member, None)
    return list(names)


def _in_branch(snap: Snapshot, member: str) -> bool:
    """Whether ``member`` was mounted inside the parallel's branches (not as its judge)."""
    return any(
        c.kind == "subflow-input"
        and member_of(c.stage_path + "/") == member
        and c.stage_path.startswith("_members")
        for c in snap.history()
    )


def _runner(snap: Snapshot, member: str) -> Agent:
    return runner_from_recording(member_snapshot(snap, member))


def _recorded(snap: Snapshot, stage_id: str) -> list[Commit]:
    """The composition's own commits of one stage, in the order they ran."""
    return [c for c in snap.history() if c.frame == "" and c.stage_id == stage_id]


def _decisions(snap: Snapshot, stage_id: str) -> list[dict[str, Any]]:
    out = []
    for c in _recorded(snap, stage_id):
        decision = thaw((c.detail or {}).get("decision"))
        out.append(decision if isinstance(decision, dict) else {})
    return out


class _InOrder:
    """Recorded decisions handed out in the order they were made; asking for more than the
    recording holds is a divergence, named."""

    def __init__(self, items: list[Any], what: str, stage: str) -> None:
        self._items = list(items)
        self._what = what
        self._stage = stage

    def next(self) -> Any:
        if not self._items:
            raise ReplayDivergence(
                f"the replay asked for {self._what} more often than the recording did",
                stage_path=self._stage,
                key=None,
            )
        return self._items.pop(0)


def _recorded_merge(snap: Snapshot) -> Callable[[Mapping[str, str]], str]:
    """The parallel's answer as each ``_gather`` wrote it (a listing, or a merge function's)."""
    written = []
    for c in _recorded(snap, "_gather"):
        value = next((thaw(op.value) for op in c.ops if op.key == "current"), None)
        written.append(value)
    answers = _InOrder(written, "the merged answer", "_gather")
    return lambda given: str(answers.next())


def _stub() -> Agent:
    """A member the recording never ran (a case not picked): never run by the replay."""
    from ..compose._composition import LLMCall

    built: Agent = LLMCall.create(provider=MockProvider(replies=[]), model="unrecorded").build()
    return built


def _conditional(builder: Any, snap: Snapshot, members: list[str]) -> Agent:
    """Cases at their recorded positions (unpicked ones stand in, never true), each pick
    answered as recorded: the first predicate asked in a pick takes the recorded choice."""
    decisions = _decisions(snap, "_pick")
    picks = _InOrder([d.get("chosen") for d in decisions], "a conditional's pick", "_pick")
    current: list[Any] = [None]
    cases: dict[int, str] = {}
    otherwise = None
    for d in decisions:
        case, chosen = d.get("case"), str(d.get("chosen"))
        if isinstance(case, int):
            cases[case] = chosen
        else:
            otherwise = chosen
    taken = set(members)

    def unused(stem: str) -> str:
        n = 1
        while f"{stem}{n}" in taken:
            n += 1
        taken.add(f"{stem}{n}")
        return f"{stem}{n}"

    def holds(index: int, name: str | None) -> Callable[[str, Mapping[str, Any]], bool]:
        def predicate(message: str, state: Mapping[str, Any]) -> bool:
            if index == 0:  # asked first in every pick: take the recorded choice
                current[0] = picks.next()
            return name is not None and current[0] == name

        return predicate

    for index in range(max(cases, default=-1) + 1):
        name = cases.get(index)
        member = unused("unrecorded") if name is None else name
        runner = _stub() if name is None else _runner(snap, name)
        builder.when(holds(index, name), member, runner)
    if not cases:  # the otherwise was always picked: one case that never holds
        builder.when(holds(0, None), unused("unrecorded"), _stub())
    if otherwise is None:
        name = unused("unrecorded")
        built: Agent = builder.otherwise(name, _stub()).build()
        return built
    built = builder.otherwise(otherwise, _runner(snap, otherwise)).build()
    return built


def _loop(snap: Snapshot, name: str, loop: Any) -> Agent:
    """The body from its rounds, ``until`` answering as each round's decision recorded, and
    as many rounds allowed as the recording says (or ran)."""
    decisions = _decisions(snap, "_until")
    held = _InOrder(
        [d.get("why") == "until held" for d in decisions], "a loop's decision", "_until"
    )
    rounds = max((int(d.get("round") or 0) for d in decisions), default=0) + 1
    for d in decisions:
        capped = _MAX_ROUNDS.fullmatch(str(d.get("why") or ""))
        if capped is not None:
            rounds = int(capped.group(1))
    body = _runner(snap, "body")
    built: Agent = (
        loop.create(body, name=name)
        .until(lambda answer, round: held.next())
        .max_rounds(rounds)
        .build()
    )
    return built
