"""A narrative told from a run's commit log alone (a stored run, a recording, a snapshot).

The live :class:`~trackway.recorders.Narrative` hears events as a run goes; a stored run has
only its log. :func:`narrative_from_log` rebuilds those events from the commits — stage
starts from each commit's stage path and kind, reads from ``reads`` with the value the key
held just before the commit (in the commit's frame), decisions, pauses, resumes and breaks
from ``detail``, user events from ``events``, subflow boundaries from the stage paths — and
feeds them to the same recorder, so the wording is one implementation.

What the log cannot say is left out rather than guessed: a shared subflow is named by its
mount id (the mounted chart's id is recorded only for isolated subflows), cancelled stages
that never committed are not told, and reads of keys made by the engine itself are told with
their commit as the live narrative does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trackway.engine import (
    MISSING,
    Commit,
    DecisionEvent,
    EmitEvent,
    ErrorEvent,
    PauseEvent,
    ReadEvent,
    ResumeEvent,
    RunEndEvent,
    RunStartEvent,
    Snapshot,
    StageEndEvent,
    StagePath,
    StageStartEvent,
    SubflowEvent,
    write_value,
)

from ._narrative import UNTOLD, Detail, Narrative

__all__ = ["narrative_from_log"]

_STAGE_KINDS = frozenset({"stage", "decider", "selector", "resume"})


class _Frames:
    """The value each key held in each frame, folded forward commit by commit."""

    def __init__(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot
        self._own: dict[str, dict[str, Any]] = {}
        self._isolated: set[str] = set()

    def value(self, frame: str, key: str, before: int) -> Any:
        """``key`` in ``frame`` just before commit ``before + 1``: the frame's own writes,
        then (for a parallel branch) the enclosing frames, then the run's state. A branch
        may hold keys the engine seeded without a commit (a for-each's item): a key found
        nowhere in a for-each branch is untold, never claimed absent."""
        seeded = frame.rsplit("/", 1)[-1].isdigit()  # a for-each's branch: /<item index>
        while frame:
            own = self._own.get(frame)
            if own is not None and key in own:
                return own[key]
            if frame in self._isolated:
                return MISSING
            frame = self._enclosing(frame)
        value = self._snapshot.value_at(key, before, MISSING)
        return UNTOLD if value is MISSING and seeded else value

    def _enclosing(self, frame: str) -> str:
        best = ""
        for known in self._own:
            if len(known) > len(best) and frame.startswith(known + "/"):
                best = known
        return best

    def apply(self, commit: Commit) -> None:
        if not commit.frame:
            return  # the run's own state is read from the snapshot's index
        if commit.kind == "subflow-input":
            self._isolated.add(commit.frame)
        own = self._own.setdefault(commit.frame, {})
        for w in commit.writes:
            kind, key, raw = w[0], w[1], write_value(w)
            if kind == "set":
                own[key] = raw
            elif kind == "delete":
                own.pop(key, None)
            elif kind == "append":
                old = self.value(commit.frame, key, commit.seq - 1)
                own[key] = [
                    *(old if isinstance(old, Sequence) and not isinstance(old, str) else ()),
                    *raw,
                ]
            else:  # merge
                old = self.value(commit.frame, key, commit.seq - 1)
                own[key] = {**(old if isinstance(old, Mapping) else {}), **raw}


def narrative_from_log(
    snapshot: Snapshot,
    *,
    values: bool = True,
    max_value_chars: int = 40,
    detail: Detail = "compact",
) -> Narrative:
    """The narrative of a run told from its commit log alone.

    Give it any snapshot — from a store (``store.load(run_id)``), a recording
    (``load_recording``) or a result — and read it as you would a live narrative:
    ``narrative_from_log(snap).text()``. For a run whose charts record what the live
    narrative hears (stages, decisions, forks, pauses, isolated subflows), the text is the
    same as the live narrative's; see the module notes for what a log cannot say. Agents
    and compositions are told one line per step, as live, once ``trackway.agent`` is
    imported (it registers their tellers); ``detail="full"`` tells every stage.
    """
    story = Narrative(values=values, max_value_chars=max_value_chars, detail=detail)
    run_id = snapshot.run_id
    story.on_run_start(RunStartEvent(run_id, snapshot.chart_id, 0, None))
    frames = _Frames(snapshot)
    mounts: list[str] = []  # the shared subflows the walk is inside, outermost first
    isolated: set[str] = set()  # isolated mounts seen so far
    for commit in snapshot.history():
        if commit.kind == "subflow-input":
            isolated.add(commit.stage_path)
        _enter_and_leave(story, commit, mounts, isolated)
        if commit.kind in _STAGE_KINDS:
            _tell_stage(story, commit, frames)
        elif commit.kind == "subflow-input":
            mount = commit.stage_path
            subflow = str((commit.detail or {}).get("subflow") or commit.stage_name)
            story.on_subflow_enter(SubflowEvent(run_id, mount, commit.seq, subflow, True))
            source = str((commit.detail or {}).get("reads_frame") or "")
            for key in commit.reads:
                value = frames.value(source, key, commit.seq - 1)
                story.on_read(ReadEvent(run_id, mount, commit.seq - 1, key, value))
            story.on_commit(commit)
        elif commit.kind == "subflow-output":
            story.on_commit(commit)
            mount = StagePath.parent_of(commit.stage_path)
            subflow = str((commit.detail or {}).get("subflow") or commit.stage_name)
            if commit.outcome == "ok":
                story.on_subflow_exit(SubflowEvent(run_id, mount, commit.seq, subflow, True))
        else:
            story.on_commit(commit)
        frames.apply(commit)
    for mount in reversed(mounts):
        story.on_subflow_exit(SubflowEvent(run_id, mount, len(snapshot), _last(mount), False))
    if snapshot.error is not None:
        failed = next((c for c in reversed(snapshot.history()) if c.outcome == "error"), None)
        path = None if failed is None else failed.stage_path
        story.on_error(ErrorEvent(run_id, path, len(snapshot), snapshot.error))
    story.on_run_end(
        RunEndEvent(run_id, len(snapshot), snapshot.status, snapshot.error, snapshot.break_reason)
    )
    return story


def _last(mount: str) -> str:
    return StagePath.parse(mount.rsplit("/", 1)[-1]).name


def _enter_and_leave(
    story: Narrative, commit: Commit, mounts: list[str], isolated: set[str]
) -> None:
    """Shared subflows have no commits of their own: their boundaries are where the stage
    paths start and stop running under ``<mount>/``. A segment is a shared mount when it has
    no execution index and is not a parallel branch's key (the segment after a fork's or a
    for-each's indexed segment; an isolated mount's indexed segment is not one of those)."""
    path = commit.stage_path
    if commit.kind == "subflow-input":
        path += "/input"  # its stage path is the isolated mount itself
    while mounts and not path.startswith(mounts[-1] + "/"):
        mount = mounts.pop()
        story.on_subflow_exit(SubflowEvent(commit.run_id, mount, commit.seq, _last(mount), False))
    parts = path.split("/")[:-1]
    for depth, segment in enumerate(parts):
        mount = "/".join(parts[: depth + 1])
        if mount in mounts or StagePath.parse(segment).index is not None:
            continue
        if depth and "#" in parts[depth - 1] and "/".join(parts[:depth]) not in isolated:
            continue  # a branch of a fork, a selector or a for-each
        if commit.kind == "subflow-output" and depth == len(parts) - 1:
            continue
        mounts.append(mount)
        story.on_subflow_enter(SubflowEvent(commit.run_id, mount, commit.seq, _last(mount), False))


def _tell_stage(story: Narrative, commit: Commit, frames: _Frames) -> None:
    run_id, path, seq = commit.run_id, commit.stage_path, commit.seq
    detail = commit.detail or {}
    if commit.kind == "resume":
        resume = detail.get("resume")
        value = None if resume is None else resume.get("value")
        story.on_resume(ResumeEvent(run_id, path, seq - 1, value))
    story.on_stage_start(
        StageStartEvent(run_id, path, seq - 1, commit.stage_id, commit.stage_name, commit.kind)
    )
    for key in commit.reads:
        value = frames.value(commit.frame, key, seq - 1)
        story.on_read(ReadEvent(run_id, path, seq - 1, key, value))
    for event in commit.events:
        story.on_emit(EmitEvent(run_id, path, seq - 1, event.name, event.payload))
    story.on_commit(commit)
    decision = detail.get("decision")
    if decision is not None:
        selected = decision.get("selected")
        chosen = [str(c) for c in selected] if selected else [str(decision.get("chosen"))]
        story.on_decision(DecisionEvent(run_id, path, seq, chosen, decision))
    if commit.outcome == "error" and commit.error is not None:
        story.on_error(ErrorEvent(run_id, path, seq, commit.error))
    if commit.outcome == "paused":
        story.on_pause(PauseEvent(run_id, path, seq, detail.get("pause")))
    story.on_stage_end(StageEndEvent(run_id, path, seq, commit.outcome, 0.0))
