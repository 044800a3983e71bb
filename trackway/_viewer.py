"""``trackway view``: one HTML file showing a recording — the chart, the commit timeline, the
state at any commit (a diff against the one before), the narrative, and every model call with
its served request, hash and receipt.

The file needs no network: the script and styles are inline, and the data is one JSON
document in a ``<script type="application/json">`` element (every ``<`` in it written as
``\\u003c``, so no recorded value can close the element). The page renders values with
``textContent`` only: a recorded value is never markup.
"""

from __future__ import annotations

import re
from html import escape
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from trackway.engine import Snapshot, TrackwayError, thaw
from trackway.recorders import narrative_from_log, read_recording

from ._cli_out import EXIT_USAGE, CommandFailed, safe
from ._viewer_chart import (
    ChartDrawing,
    chart_from_log,
    chart_from_mermaid,
    draw,
    drawing_doc,
    node_of,
)

if TYPE_CHECKING:
    from ._cli_out import Out

__all__ = [
    "VIEWER_FORMAT",
    "build_view",
    "refuse_store",
    "render_page",
    "write_page",
    "write_viewer",
]

VIEWER_FORMAT = "trackway.viewer/1"


def _asset(name: str) -> str:
    return resources.files("trackway").joinpath(name).read_text(encoding="utf-8")


def _header(path: Path, run_id: str) -> dict[str, Any] | None:
    """The recorded chart structure of ``run_id`` in a JSON Lines recording, if any."""
    try:
        with path.open("rb") as fh:
            first = fh.readline()
        if not first.lstrip().startswith(b"{") or b'"on_' not in first:
            return None
        for line in read_recording(path):
            if line.get("type") == "on_run_start" and line.get("run_id") == run_id:
                chart = line.get("chart")
                if isinstance(chart, dict):
                    return chart
    except (OSError, TrackwayError):
        return None
    return None


def _calls(snap: Snapshot, out: Out | None) -> list[dict[str, Any]]:
    """Every model call: the request served (rebuilt from the log), its hash, its receipt."""
    from trackway.agent import receipts, served_at
    from trackway.agent.record._record import _llm_commits

    made = receipts(snap)
    commits = _llm_commits(snap)
    steps = list(range(1, len(made) + 1))
    rows: list[dict[str, Any]] = []
    for k in out.progress(steps, f"rebuilding {len(made)} requests") if out else steps:
        receipt = made[k - 1]
        try:
            request = served_at(snap, k)
            served: Any = request.model_dump(mode="json", exclude_none=True)
            digest: str | None = request.hash
            problem = None
        except (TrackwayError, ValueError) as exc:  # a redacted record, say
            served, digest, problem = None, None, str(exc)
        rows.append(
            {
                "k": k,
                "seq": commits[k - 1].seq,
                "member": receipt.get("member", ""),
                "request": served,
                "hash": digest,
                "problem": problem,
                "receipt": receipt,
                "match": digest is not None and digest == receipt.get("request_hash"),
            }
        )
    return rows


def build_view(
    snap: Snapshot,
    *,
    chart: dict[str, Any] | None = None,
    source: str = "",
    out: Out | None = None,
    drawing: ChartDrawing | None = None,
) -> tuple[dict[str, Any], str]:
    """The page's data and its chart SVG for one run: ``drawing`` when given (a structure a
    store recorded), else the Mermaid of ``chart`` (a recording's header), else the log."""
    from trackway.agent.messages._members import member_of

    commits = snap.history()
    if drawing is None and chart is not None and isinstance(chart.get("mermaid"), str):
        drawing = chart_from_mermaid(chart["mermaid"])
    if drawing is None:
        drawing = chart_from_log(commits)
    known = {n.id for n in drawing.nodes}
    calls = _calls(snap, out)
    # Composition members are the mounts that called a model (a plain chart's forks are not).
    called = {str(c["member"]) for c in calls if c["member"]}
    ran: dict[str, int] = {}
    rows = []
    for c in commits:
        node = node_of(c, known)
        if node is not None:
            ran[node] = ran.get(node, 0) + 1
        doc = c.to_dict()
        del doc["run_id"]
        doc["node"] = node
        member = member_of(c.stage_path) if called else ""
        doc["member"] = (
            member if any(m == member or m.startswith(member + ".") for m in called) else ""
        )
        rows.append(doc)
    story = narrative_from_log(snap, max_value_chars=60)
    error = snap.error
    data = {
        "format": VIEWER_FORMAT,
        "source": source,
        "run": {
            "run_id": snap.run_id,
            "chart_id": snap.chart_id,
            "chart_name": (chart or {}).get("name") or snap.chart_id,
            "status": snap.status,
            "error": None if error is None else [error.type, error.message],
            "break_reason": snap.break_reason,
        },
        "chart": drawing_doc(drawing),
        "initial": thaw(snap.initial_state),
        "commits": rows,
        "narrative": [
            {"text": text, "path": path}
            for text, path in zip(story.lines(), story.line_paths(), strict=True)
        ],
        "calls": calls,
    }
    return data, draw(drawing, ran)


def render_page(data: dict[str, Any], svg: str) -> str:
    """The whole HTML page: styles, the chart, the data and the script, all inline."""
    payload = orjson.dumps(data, default=thaw).decode()
    # No recorded value may end the script element or open a comment: "<" as \u003c is the
    # same JSON string.
    payload = payload.replace("<", "\\u003c")
    title = f"trackway trace — {data['run']['chart_name']} — {data['run']['run_id']}"
    parts = {
        "title": escape(title),
        "css": _asset("_viewer.css"),
        "svg": svg,
        "data": payload,
        "js": _asset("_viewer.js"),
    }
    # One pass over the template: what is put in is never scanned for placeholders again.
    return _PLACEHOLDER.sub(lambda m: parts[m[1]], _asset("_viewer.html"))


_PLACEHOLDER = re.compile(r"\{\{(title|css|svg|data|js)\}\}")


def write_viewer(
    recording: Path, output: Path, *, run_id: str | None = None, out: Out | None = None
) -> Path:
    """Write the viewer of ``recording`` (one run; ``run_id`` picks it when the file holds
    several) to ``output``, through a temporary file so a failure leaves nothing half-written."""
    from trackway.agent import load_recording

    if not recording.exists():
        raise CommandFailed(
            f"no recording at {recording}; write one with save_recording(agent, path) or "
            "stream one with jsonl(path, chart=chart). A run in a store: trackway view RUN "
            "--store DB -o FILE"
        )
    if not output.parent.is_dir():
        raise CommandFailed(f"-o {output}: the folder {output.parent} does not exist")
    refuse_store(recording, output)
    try:
        snap = load_recording(recording, run_id)
        data, svg = build_view(
            snap, chart=_header(recording, snap.run_id), source=recording.name, out=out
        )
    except TrackwayError as exc:
        raise CommandFailed(safe(exc)) from None
    return write_page(output, data, svg)


def write_page(output: Path, data: dict[str, Any], svg: str) -> Path:
    """The page at ``output``, through a temporary file so a failure leaves nothing
    half-written."""
    part = output.with_name(output.name + ".part")
    part.write_text(render_page(data, svg), encoding="utf-8")
    part.replace(output)
    return output


_SQLITE_MAGIC = b"SQLite format 3\x00"


def refuse_store(recording: Path, output: Path) -> None:
    """A run store given where a recording belongs is refused with the command that reads
    it (``--store``), instead of failing to parse it as JSON."""
    try:
        with recording.open("rb") as fh:
            head = fh.read(len(_SQLITE_MAGIC))
    except OSError:
        return  # load_recording says what is wrong with it
    if head == _SQLITE_MAGIC:
        raise CommandFailed(
            f"{recording} is a SQLite run store, not a recording: view one of its runs with "
            f"trackway view RUN --store {recording} -o {output} "
            f"(trackway runs --store {recording} lists them)",
            EXIT_USAGE,
        )
