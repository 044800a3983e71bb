"""Recordings: every event and commit of a run as JSON lines, and the snapshot rebuilt from them.

One line per hook call, ``{"type": "<hook name>", ...the event's fields}``; a commit line is
``{"type": "on_commit", **commit.to_dict()}``. Op values are written as the bytes the commit
already holds (never serialized again). Lines are appended, so one file may hold many runs
(and a run's resume, under the same run id).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import orjson

from trackway.engine import (
    Commit,
    CommitDetail,
    CommitDoc,
    ConfigurationError,
    DecisionEvent,
    DocumentError,
    EmitEvent,
    ErrorEvent,
    ErrorInfo,
    FlowChart,
    PauseEvent,
    ReadEvent,
    Recorder,
    ResumeEvent,
    RunEndEvent,
    RunStartEvent,
    Snapshot,
    StageEndEvent,
    StageStartEvent,
    SubflowEvent,
    WriteEvent,
    check_document,
    thaw,
)

from ._wording import is_absent

__all__ = [
    "READABLE_FORMATS",
    "RECORDING_FORMAT",
    "JsonlRecorder",
    "jsonl",
    "load_recording",
    "read_recording",
    "write_recording",
]

RECORDING_FORMAT = "trackway.recording/2"
READABLE_FORMATS = ("trackway.recording/1", RECORDING_FORMAT)
"""Versions this one reads: /2 adds the chart's structure to the header when it is known."""


def _error(info: ErrorInfo | None) -> list[str] | None:
    return None if info is None else [info.type, info.message]


class JsonlRecorder(Recorder):
    """Appends each run's events and commits to a JSON-lines file; see :func:`jsonl`."""

    name = "jsonl"

    def __init__(
        self, path: str | Path, *, read_values: bool = True, chart: FlowChart | None = None
    ) -> None:
        self.path = Path(path)
        self.chart = chart
        if not self.path.parent.is_dir():
            raise ConfigurationError(
                f"jsonl({str(path)!r}): the folder {str(self.path.parent)!r} does not exist"
            )
        self.read_values = read_values
        self._file: IO[bytes] | None = None
        self._active: set[str] = set()
        self._breaks: dict[str, str] = {}
        self._lock = threading.Lock()

    # -- writing ---------------------------------------------------------------------------

    def _write(self, line: dict[str, Any]) -> None:
        data = orjson.dumps(line, default=thaw) + b"\n"
        with self._lock:
            if self._file is None:
                self._file = self.path.open("ab")
            self._file.write(data)

    def _event(self, hook: str, event: Any) -> None:
        line: dict[str, Any] = {"type": hook}
        line.update(event._asdict())
        self._write(line)

    def on_run_start(self, event: RunStartEvent) -> None:
        self._active.add(event.run_id)
        self._breaks.pop(event.run_id, None)
        self._write(
            {
                "type": "on_run_start",
                "format": RECORDING_FORMAT,
                "run_id": event.run_id,
                "chart_id": event.chart_id,
                "seq": event.seq,
                "input": event.input,
                **(
                    {"chart": chart_header(self.chart)}
                    if self.chart is not None and self.chart.id == event.chart_id
                    else {}
                ),
            }
        )

    def on_stage_start(self, event: StageStartEvent) -> None:
        self._event("on_stage_start", event)

    def on_read(self, event: ReadEvent) -> None:
        line: dict[str, Any] = {
            "type": "on_read",
            "run_id": event.run_id,
            "stage_path": event.stage_path,
            "seq": event.seq,
            "key": event.key,
        }
        if is_absent(event.value):
            line["absent"] = True
        elif self.read_values:
            line["value"] = event.value
        self._write(line)

    def on_write(self, event: WriteEvent) -> None:
        self._write(
            {
                "type": "on_write",
                "run_id": event.run_id,
                "stage_path": event.stage_path,
                "seq": event.seq,
                "op": event.op.to_dict(),
            }
        )

    def on_emit(self, event: EmitEvent) -> None:
        self._event("on_emit", event)

    def on_commit(self, commit: Commit) -> None:
        detail: CommitDetail = commit.detail or {}
        if "break" in detail:
            self._breaks[commit.run_id] = detail["break"]
        self._write({"type": "on_commit", **commit.to_dict()})

    def on_decision(self, event: DecisionEvent) -> None:
        self._event("on_decision", event)

    def on_error(self, event: ErrorEvent) -> None:
        self._write(
            {
                "type": "on_error",
                "run_id": event.run_id,
                "stage_path": event.stage_path,
                "seq": event.seq,
                "error": _error(event.error),
            }
        )

    def on_stage_end(self, event: StageEndEvent) -> None:
        self._event("on_stage_end", event)

    def on_subflow_enter(self, event: SubflowEvent) -> None:
        self._event("on_subflow_enter", event)

    def on_subflow_exit(self, event: SubflowEvent) -> None:
        self._event("on_subflow_exit", event)

    def on_pause(self, event: PauseEvent) -> None:
        self._event("on_pause", event)

    def on_resume(self, event: ResumeEvent) -> None:
        self._event("on_resume", event)

    def on_run_end(self, event: RunEndEvent) -> None:
        broke = self._breaks.pop(event.run_id, None)
        self._write(
            {
                "type": "on_run_end",
                "run_id": event.run_id,
                "seq": event.seq,
                "status": event.status,
                "error": _error(event.error),
                "break_reason": broke if event.status == "broken" else None,
            }
        )
        with self._lock:
            self._active.discard(event.run_id)
            if self._file is not None:
                self._file.flush()
                if not self._active:
                    self._file.close()
                    self._file = None


def jsonl(
    path: str | Path, *, read_values: bool = True, chart: FlowChart | None = None
) -> JsonlRecorder:
    """A recorder that appends every event and commit of each run to ``path`` (JSON lines).

    The file is flushed when each run ends. ``load_recording(path)`` rebuilds a run's
    snapshot from it. With ``read_values=False`` read lines carry the key but not the value
    (a recording then grows with what the run writes, not with what it reads). Give the
    ``chart`` it records and each run's header carries its structure (what ``trackway view``
    draws).
    """
    return JsonlRecorder(path, read_values=read_values, chart=chart)


def chart_header(chart: Any) -> dict[str, Any]:
    """A chart's structure as a recording header holds it: id, name, fingerprint, Mermaid."""
    return {
        "id": chart.id,
        "name": chart.name,
        "fingerprint": chart.fingerprint,
        "mermaid": chart.to_mermaid(),
    }


def _refuse(path: str | Path, message: str, field: str | None = None) -> DocumentError:
    return DocumentError(f"{path}: {message}", document="recording", field=field, source=str(path))


def read_recording(path: str | Path) -> Iterator[dict[str, Any]]:
    """Yield the lines of a recording, parsed, in file order.

    A file that cannot be read, or a line that is not a recording line, raises
    :class:`DocumentError` naming the file and the line.
    """
    for _, line in _numbered_lines(path):
        yield line


def _numbered_lines(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """:func:`read_recording`, each line with its number in the file (for messages)."""
    try:
        fh = Path(path).open("rb")  # noqa: SIM115 - the with below closes it; only the open is guarded
    except OSError as exc:
        raise _refuse(path, f"cannot read the recording: {exc.strerror or exc}") from None
    with fh:  # line by line: a recording may be larger than memory
        for number, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                line = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                why = (
                    f"line {number} is nested deeper than the 1024 levels JSON is read to, so "
                    "it holds a value nested deeper than trackway writes: it was changed"
                    if "depth limit exceeded" in str(exc)
                    else f"line {number} is not JSON ({exc})"
                )
                raise _refuse(path, why, f"line {number}") from None
            if not isinstance(line, dict) or "type" not in line:
                raise _refuse(
                    path, f"line {number} is not a recording line (no 'type')", f"line {number}"
                )
            yield number, line


def _commit(path: str | Path, number: int, line: dict[str, Any]) -> Commit:
    """A commit line, checked like every persisted commit (a bad one names the line)."""
    doc = {k: v for k, v in line.items() if k != "type"}
    where = f"line {number}"
    try:
        checked = check_document(CommitDoc, doc, document="recording")
    except DocumentError as exc:
        raise _refuse(
            path, f"the commit line of seq {line.get('seq')!r} ({where}): {exc}", where
        ) from None
    try:
        return Commit.from_dict(checked)
    except DocumentError as exc:  # a value the log cannot keep
        raise _refuse(path, f"{where}: {exc}", where) from None


def load_recording(path: str | Path, run_id: str | None = None) -> Snapshot:
    """Rebuild a run's snapshot from a recording (default: the last run started in it).

    The initial state comes from the run's first ``on_run_start`` line, the commits from its
    ``on_commit`` lines and the status, error and break reason from its last ``on_run_end``
    (a run with none, e.g. cut short by a crash, gets status ``"incomplete"``).
    """
    if run_id is None:
        for line in read_recording(path):
            if line["type"] == "on_run_start":
                run_id = line["run_id"]
        if run_id is None:
            raise _refuse(path, "the recording holds no run")
    start: dict[str, Any] | None = None
    end: dict[str, Any] | None = None
    commits: dict[int, Commit] = {}
    numbers: dict[int, int] = {}  # the line of each commit (and of the start, as 0)
    for number, line in _numbered_lines(path):
        if line.get("run_id") != run_id:
            continue
        kind = line["type"]
        if kind == "on_run_start":
            if line.get("format") not in READABLE_FORMATS:
                raise _refuse(
                    path,
                    f"run {run_id!r} was recorded as {line.get('format')!r}; this "
                    f"version reads {', '.join(map(repr, READABLE_FORMATS))}",
                    "format",
                )
            if start is None or line["seq"] < start["seq"]:
                start, numbers[0] = line, number
        elif kind == "on_commit":
            commit = _commit(path, number, line)
            numbers.setdefault(commit.seq, number)
            if commits.setdefault(commit.seq, commit) != commit:
                raise _refuse(path, f"run {run_id!r} has two different commits {commit.seq}")
        elif kind == "on_run_end":
            end = line
    if start is None:
        raise _refuse(path, f"no run {run_id!r} in the recording")
    if start["seq"] != 0:
        raise _refuse(
            path,
            f"the recording of run {run_id!r} begins at a resume (after commit "
            f"{start['seq']}), so its initial state is not in it",
        )
    ordered = [commits[k] for k in sorted(commits)]
    if [c.seq for c in ordered] != list(range(1, len(ordered) + 1)):
        missing = sorted(set(range(1, max(commits) + 1)) - set(commits))
        raise _refuse(path, f"the recording of run {run_id!r} lacks commits {missing}")
    status, error, broke = "incomplete", None, None
    if end is not None:
        status = end["status"]
        err = end.get("error")
        error = None if err is None else ErrorInfo(err[0], err[1])
        broke = end.get("break_reason")
        if status == "broken" and broke is None:
            broke = next(
                (d["break"] for c in reversed(ordered) if "break" in (d := c.detail or {})),
                None,
            )
    try:
        return Snapshot.from_commits(
            run_id=run_id,
            chart_id=start["chart_id"],
            status=status,
            initial=start["input"],
            commits=ordered,
            break_reason=broke,
            error=error,
        )
    except DocumentError as exc:  # an input it cannot keep, a write no run makes
        at = _line_of(exc.field, numbers)
        where = None if at is None else f"line {at}"
        raise _refuse(path, str(exc) if where is None else f"{where}: {exc}", where) from None


def _line_of(field: str | None, numbers: dict[int, int]) -> int | None:
    """The line a snapshot's field came from: ``initial_state.*`` the run's start,
    ``commits.<i>`` commit ``i + 1``."""
    if field is None:
        return None
    if field.startswith("initial_state"):
        return numbers.get(0)
    head, _, rest = field.partition(".")
    index = rest.partition(".")[0]
    return numbers.get(int(index) + 1) if head == "commits" and index.isdigit() else None


def write_recording(snapshot: Snapshot, path: str | Path, *, chart: Any = None) -> Path:
    """Write a finished run to ``path`` in the recording format, after the fact: the header
    (with ``chart``'s structure when given: id, name, fingerprint, Mermaid), its commits with
    their emits, and the end. Written to a temporary file first, then moved into place."""
    out = Path(path)
    header: dict[str, Any] = {
        "type": "on_run_start",
        "format": RECORDING_FORMAT,
        "run_id": snapshot.run_id,
        "chart_id": snapshot.chart_id,
        "seq": 0,
        "input": snapshot.initial_state,
    }
    if chart is not None:
        header["chart"] = chart_header(chart)
    error = snapshot.error
    end = {
        "type": "on_run_end",
        "run_id": snapshot.run_id,
        "seq": len(snapshot.history()),
        "status": snapshot.status,
        "error": None if error is None else [error.type, error.message],
        "break_reason": snapshot.break_reason,
    }
    lines = [header, *({"type": "on_commit", **c.to_dict()} for c in snapshot.history()), end]
    tmp = out.with_name(out.name + ".part")
    tmp.write_bytes(b"".join(orjson.dumps(line, default=thaw) + b"\n" for line in lines))
    tmp.replace(out)
    return out
