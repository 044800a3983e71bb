"""The narrative recorder: a run told in plain English, one line per stage.

Every entry is built from the events as they arrive (nothing is read back from the snapshot):
reads and emits are told live, writes from the stage's commit (so failed retry attempts are
not told), decisions from ``on_decision``. ``text()`` groups the entries into lines: a stage,
subflow or merge entry starts a line and the entries with its stage path join it.

A chart a registered :class:`~trackway.recorders.Teller` claims (an agent, a composition) is
told by that teller instead, from each stage's commit alone, one ``step`` entry per line;
``detail="full"`` tells every chart stage by stage.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from trackway.engine import (
    Commit,
    CommitDetail,
    ConfigurationError,
    DecisionEvent,
    EmitEvent,
    ErrorEvent,
    ErrorInfo,
    PauseEvent,
    ReadEvent,
    Recorder,
    ResumeEvent,
    RunEndEvent,
    RunStartEvent,
    StageEndEvent,
    StagePath,
    StageStartEvent,
    SubflowEvent,
    UnknownRunError,
    write_value,
)

from ._narrative_run import Frame, Run
from ._narrative_text import HEADERS, EntryType, NarrativeEntry, render, wrap
from ._teller import Telling, teller_for
from ._wording import decision_text, is_absent, merge_text, summarize

__all__ = [
    "Detail",
    "EntryType",
    "Narrative",
    "NarrativeEntry",
    "narrative",
]

Detail = Literal["compact", "full"]
_DETAILS = ("compact", "full")
_STAGE_KINDS = frozenset({"stage", "decider", "selector", "resume"})

UNTOLD: Any = object()
"""A read whose value the teller cannot know (a narrative told from a log): told by key."""

_depth = StagePath.depth_of
_prefix = StagePath.prefix_of  # the strand a stage path runs in
_parent = StagePath.parent_of


class Narrative(Recorder):
    """Tells each run in plain English; see :func:`narrative`."""

    name = "narrative"

    def __init__(
        self, *, values: bool = True, max_value_chars: int = 40, detail: Detail = "compact"
    ) -> None:
        if detail not in _DETAILS:
            raise ConfigurationError(
                f"narrative(detail={detail!r}): use 'compact' (agents and compositions told "
                "one line per step) or 'full' (every stage, read by read)"
            )
        self.values = values
        self.max_value_chars = max_value_chars
        self.detail: Detail = detail
        self._runs: dict[str, Run] = {}

    # -- reading ---------------------------------------------------------------------------

    @property
    def run_ids(self) -> list[str]:
        """The runs told so far, the most recently started last."""
        return list(self._runs)

    def entries(self, run_id: str | None = None) -> list[NarrativeEntry]:
        """The entries of one run (default: the last run started), in the order they came."""
        run = self._run_for(run_id)
        return [] if run is None else list(run.entries)

    def lines(self, run_id: str | None = None) -> list[str]:
        """One line per stage, subflow boundary and merge, indented two spaces per depth."""
        return [render(head, parts) for head, parts in self._groups(run_id)]

    def line_paths(self, run_id: str | None = None) -> list[str]:
        """The stage path each line of :meth:`lines` tells (to link a line to its commit)."""
        return [head.stage_path for head, _ in self._groups(run_id)]

    def _groups(self, run_id: str | None) -> list[tuple[NarrativeEntry, list[NarrativeEntry]]]:
        run = self._run_for(run_id)
        if run is None:
            return []
        groups: list[tuple[NarrativeEntry, list[NarrativeEntry]]] = []
        header_at: dict[str, int] = {}
        for entry in run.entries:
            at = None if entry.type in HEADERS else header_at.get(entry.stage_path)
            if at is None:
                if entry.type in HEADERS:
                    header_at[entry.stage_path] = len(groups)
                groups.append((entry, []))
            else:
                groups[at][1].append(entry)
        return groups

    def text(self, run_id: str | None = None, *, width: int | None = None) -> str:
        """The narrative of one run (default: the last run started) as one string. With
        ``width`` (a terminal's columns) each line wraps at the facts' separators, its
        continuation indented under the text it continues."""
        lines = self.lines(run_id)
        if width is None:
            return "\n".join(lines)
        return "\n".join(wrapped for line in lines for wrapped in wrap(line, width))

    def clear(self) -> None:
        """Forget every run told so far."""
        self._runs.clear()

    def _run_for(self, run_id: str | None) -> Run | None:
        if run_id is None:
            return self._runs[next(reversed(self._runs))] if self._runs else None
        try:
            return self._runs[run_id]
        except KeyError:
            known = ", ".join(self._runs) or "none yet"
            raise UnknownRunError(f"no narrative for run {run_id!r}; runs told: {known}") from None

    # -- hooks -----------------------------------------------------------------------------

    def _run(self, run_id: str) -> Run:
        run = self._runs.get(run_id)
        if run is None:
            run = self._runs[run_id] = Run()
        return run

    def _add(self, run: Run, entry: NarrativeEntry) -> None:
        run.entries.append(entry)

    def _value(self, value: Any) -> str:
        return summarize(value, self.max_value_chars)

    def _frame(self, chart_id: str) -> Frame:
        return Frame(chart_id, teller_for(chart_id) if self.detail == "compact" else None)

    @staticmethod
    def _frame_around(run: Run, path: str) -> Frame | None:
        """The frame of the nearest isolated mount (or the run) strictly around ``path``."""
        frames = run.frames
        while path:
            path = _parent(path)
            frame = frames.get(path)
            if frame is not None:
                return frame
        return None

    def _tell(self, run: Run, commit: Commit, frame: Frame, depth: int) -> None:
        """A claimed stage's commit, told by its chart's teller: one step entry per line."""
        teller = frame.teller
        assert teller is not None
        path = commit.stage_path
        try:
            lines = list(
                teller.tell(commit, Telling(frame.chart_id, self.values, self.max_value_chars))
            )
        except Exception as exc:  # an unexpected record: said, with what the stage wrote
            keys = ", ".join(commit.keys_written) or "nothing"
            lines = [
                f"{commit.stage_name} — wrote {keys} (not told in short: {type(exc).__name__}: "
                f"{exc}; narrative(detail='full') tells it in full)"
            ]
        for text in lines:
            self._add(run, NarrativeEntry("step", depth, path, text))
        if commit.outcome != "ok" and commit.error is not None:
            run.errors.setdefault(path, set()).add(commit.error)
            error = commit.error
            text = (
                f"{commit.stage_name} was cancelled"
                if commit.outcome == "cancelled"
                else f"{commit.stage_name} failed with {error.type}: {error.message}"
            )
            self._add(run, NarrativeEntry("step", depth, path, text))

    def on_run_start(self, event: RunStartEvent) -> None:
        run = self._runs.pop(event.run_id, None) or Run()
        run.reset_flight()
        run.frames[""] = self._frame(event.chart_id)
        self._runs[event.run_id] = run  # (re)inserted last: the most recent run

    def on_stage_start(self, event: StageStartEvent) -> None:
        run = self._run(event.run_id)
        path = event.stage_path
        frame = self._frame_around(run, path)
        if frame is not None and frame.teller is not None and event.stage_id in frame.teller.stages:
            run.open[path] = event.stage_name  # told from its commit
            run.resumes.pop(path, None)
            return
        run.step += 1
        step = run.step
        run.open[path] = None
        pending = run.choices.pop(_prefix(path), None)
        if pending is not None and event.kind == "stage":
            index, key, evidence = pending
            old = run.entries[index]
            text = decision_text([key], evidence, {key: event.stage_name})
            run.entries[index] = old._replace(text=text)
        depth = _depth(path)
        self._add(
            run, NarrativeEntry("stage", depth, path, f"Stage {step}: {event.stage_name}", step)
        )
        resumed = run.resumes.pop(path, None)
        if resumed is not None:
            self._add(run, NarrativeEntry("resume", depth, path, resumed))

    def on_read(self, event: ReadEvent) -> None:
        run = self._run(event.run_id)
        path = event.stage_path
        if path not in run.open and path not in run.mounts:
            return  # engine-made reads (items=, output= mappings) are told with their commit
        if run.open.get(path) is not None:
            return  # a claimed stage: its teller tells it from its commit
        told = run.reads.setdefault(path, set())
        if event.key in told:
            return
        told.add(event.key)
        if event.value is UNTOLD:
            text = f"read {event.key}"
        elif is_absent(event.value):
            text = f"read {event.key} (absent)"
        elif self.values:
            text = f"read {event.key} = {self._value(event.value)}"
        else:
            text = f"read {event.key}"
        self._add(run, NarrativeEntry("read", _depth(path), path, text, key=event.key))

    def on_emit(self, event: EmitEvent) -> None:
        run = self._run(event.run_id)
        if run.open.get(event.stage_path) is not None:
            return
        text = f"emitted {event.name}"
        if event.payload is not None and self.values:
            text += f" {self._value(event.payload)}"
        self._add(run, NarrativeEntry("emit", _depth(event.stage_path), event.stage_path, text))

    def on_commit(self, commit: Commit) -> None:
        run = self._run(commit.run_id)
        path = commit.stage_path
        kind = commit.kind
        detail: CommitDetail = commit.detail or {}
        if self._claimed(run, commit):
            return
        if kind in _STAGE_KINDS:
            self._writes(run, commit, path, _depth(path))
            if "break" in detail:
                reason = detail["break"]
                text = "ended the flow early" + (f": {reason}" if reason else "")
                self._add(run, NarrativeEntry("break", _depth(path), path, text))
        elif kind == "merge":
            merge = StagePath.parse(path)  # a selector's merge sits at "<selector>/merge"
            depth = merge.depth - (1 if merge.name == "merge" and merge.index is None else 0)
            self._add(run, NarrativeEntry("merge", depth, path, merge_text(commit, detail)))
            self._writes(run, commit, path, depth)
            self._commit_error(run, commit, depth)
        elif kind == "forked-from":  # Executor.fork_from: where the run came from, and its changes
            origin = detail.get("forked_from") or {"run_id": "?", "k": 0}
            text = f"Forked from run {origin['run_id']} after commit {origin['k']}"
            self._add(run, NarrativeEntry("fork", 0, path, text))
            self._writes(run, commit, path, 0, verb="set")
        elif kind == "subflow-input":
            self._writes(run, commit, path, _depth(path), verb="input")
            self._commit_error(run, commit, _depth(path))
        else:  # subflow-output: told when the subflow is left
            mount = StagePath.parent_of(path)
            if commit.outcome == "ok":
                entries = [e._replace(stage_path=mount) for e in self._ops(commit, "output")]
                run.outputs.setdefault(mount, []).extend(entries)
            else:
                text = f"Leaving subflow {detail.get('subflow') or commit.stage_name}"
                self._add(run, NarrativeEntry("subflow", _depth(mount), path, text))
                self._commit_error(run, commit, _depth(mount))

    def _claimed(self, run: Run, commit: Commit) -> bool:
        """Whether a teller tells ``commit`` (and if so, tell it)."""
        path = commit.stage_path
        kind = commit.kind
        if kind in _STAGE_KINDS or kind == "merge":
            # from the path, not from the stages in flight: a branch's commit may come late
            frame = self._frame_around(run, path)
            if frame is None or frame.teller is None or commit.stage_id not in frame.teller.stages:
                return False
            depth = _depth(path)
            if kind == "merge":
                merge = StagePath.parse(path)
                depth = merge.depth - (1 if merge.name == "merge" and merge.index is None else 0)
        elif kind in ("subflow-input", "subflow-output"):
            mount = path if kind == "subflow-input" else _parent(path)
            frame = self._frame_around(run, mount)  # the chart that mounts it
            if frame is None or frame.teller is None:
                return False
            depth = _depth(mount)
        else:
            return False
        self._tell(run, commit, frame, depth)
        return True

    def _ops(self, commit: Commit, verb: str | None = None) -> list[NarrativeEntry]:
        path = commit.stage_path
        depth = _depth(path)
        out = []
        for w in commit.writes:
            kind, key, raw = w[0], w[1], write_value(w)
            if kind == "set":
                text = f"{verb or 'wrote'} {key}"
                if self.values:
                    text += f" = {self._value(raw)}"
            elif kind == "append":
                n = len(raw)
                if n == 1 and self.values:
                    text = f"appended {self._value(raw[0])} to {key}"
                else:
                    text = f"appended {n} item{'' if n == 1 else 's'} to {key}"
            elif kind == "merge":
                text = (
                    f"merged {self._value(raw)} into {key}" if self.values else f"merged into {key}"
                )
            else:
                text = f"deleted {key}"
            out.append(NarrativeEntry("write", depth, path, text, key=key))
        return out

    def _writes(
        self, run: Run, commit: Commit, path: str, depth: int, verb: str | None = None
    ) -> None:
        for entry in self._ops(commit, verb):
            self._add(run, entry._replace(depth=depth))

    def _commit_error(self, run: Run, commit: Commit, depth: int) -> None:
        if commit.outcome == "ok" or commit.error is None:
            return
        path = commit.stage_path
        run.errors.setdefault(path, set()).add(commit.error)
        text = f"failed with {commit.error.type}: {commit.error.message}"
        self._add(run, NarrativeEntry("error", depth, path, text))

    def on_decision(self, event: DecisionEvent) -> None:
        run = self._run(event.run_id)
        path = event.stage_path
        if run.open.get(path) is not None:
            return  # the teller reads the decision from the commit's detail
        text = decision_text(event.chosen, event.evidence)
        index = len(run.entries)
        self._add(run, NarrativeEntry("decision", _depth(path), path, text))
        evidence = event.evidence if isinstance(event.evidence, Mapping) else {}
        if "selected" not in evidence and len(event.chosen) == 1:
            run.choices[_prefix(path)] = (index, event.chosen[0], event.evidence)

    def on_error(self, event: ErrorEvent) -> None:
        run = self._run(event.run_id)
        path = event.stage_path
        info = event.error
        if path is not None and run.open.get(path) is not None:
            return  # told with the stage's commit
        if path is not None and path in run.open:
            run.errors.setdefault(path, set()).add(info)
            text = f"failed with {info.type}: {info.message}"
            self._add(run, NarrativeEntry("error", _depth(path), path, text))
            return
        told = run.errors.get(path or "", set())
        if info in told or (told and info.type == "StageError"):
            return  # the run's error is the stage's, already told on its line
        self._add(
            run, NarrativeEntry("error", 0, "", f"The run failed: {info.type}: {info.message}")
        )

    def on_pause(self, event: PauseEvent) -> None:
        run = self._run(event.run_id)
        if run.open.get(event.stage_path) is not None:
            return  # the teller tells the pause from the commit
        text = "paused"
        if event.payload is not None:
            text += f" waiting for {self._value(event.payload)}" if self.values else ""
        self._add(run, NarrativeEntry("pause", _depth(event.stage_path), event.stage_path, text))

    def on_resume(self, event: ResumeEvent) -> None:
        run = self._run(event.run_id)
        text = "resumed"
        if event.value is not None and self.values:
            text += f" with {self._value(event.value)}"
        run.resumes[event.stage_path] = text

    def on_stage_end(self, event: StageEndEvent) -> None:
        run = self._run(event.run_id)
        path = event.stage_path
        claimed = run.open.pop(path, None)
        run.reads.pop(path, None)
        if claimed is not None:
            if event.outcome == "cancelled" and not run.errors.get(path):  # never committed
                run.errors.setdefault(path, set()).add(ErrorInfo("Cancelled", "cancelled"))
                text = f"{claimed} was cancelled"
                self._add(run, NarrativeEntry("step", _depth(path), path, text))
        elif event.outcome == "cancelled":
            run.errors.setdefault(path, set()).add(ErrorInfo("Cancelled", "cancelled"))
            self._add(run, NarrativeEntry("error", _depth(path), path, "was cancelled"))

    def on_subflow_enter(self, event: SubflowEvent) -> None:
        run = self._run(event.run_id)
        mount = event.stage_path
        run.choices.pop(_prefix(mount), None)  # a decider's branch that is a chart
        around = self._frame_around(run, mount)
        if event.isolated:  # a state of its own: its chart says how its stages are told
            run.frames[mount] = self._frame(event.subflow_id)
        if around is not None and around.teller is not None:
            return  # a claimed chart's boundary: its teller tells the boundary's commits
        if event.isolated:
            run.mounts.add(mount)
        text = f"Entering subflow {event.subflow_id}"
        self._add(run, NarrativeEntry("subflow", _depth(mount), mount, text))

    def on_subflow_exit(self, event: SubflowEvent) -> None:
        run = self._run(event.run_id)
        mount = event.stage_path
        run.mounts.discard(mount)
        run.reads.pop(mount, None)
        around = self._frame_around(run, mount)
        if around is not None and around.teller is not None:
            return
        text = f"Leaving subflow {event.subflow_id}"
        self._add(run, NarrativeEntry("subflow", _depth(mount), mount, text))
        for entry in run.outputs.pop(mount, []):
            self._add(run, entry._replace(depth=_depth(mount)))

    def on_run_end(self, event: RunEndEvent) -> None:
        run = self._run(event.run_id)
        run.reset_flight()


def narrative(
    *, values: bool = True, max_value_chars: int = 40, detail: Detail = "compact"
) -> Narrative:
    """A recorder that tells each run in plain English.

    ``narrative().text()`` gives lines such as ``Stage 3: Route — read risk_tier = "high";
    chose Reject because rule 'High risk' matched``. Entries are kept per run
    (``text(run_id)``; by default the last run started). ``values=False`` leaves values out
    (keys only); strings longer than ``max_value_chars`` are cut.

    Agents and compositions are told one line per step (a model call, a tool call, a pause,
    the answer) by the tellers ``trackway.agent`` registers; ``detail="full"`` tells them
    stage by stage like any chart, every read and write.
    """
    return Narrative(values=values, max_value_chars=max_value_chars, detail=detail)
