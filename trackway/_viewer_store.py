"""``trackway view RUN --store DB``: the one-file viewer of a run kept in a store.

A store keeps a run's log, not its chart: the chart is code. What it does record of the
chart's structure is in the checkpoint of each pause (``Checkpoint.structure``: the nodes
with their kinds and the edges with their kinds and labels), so a run that ever paused is
drawn from that, its nodes named by the stage names its commits recorded. ``--chart
module:attr`` draws it from the chart's own code instead (refused unless its id is the run's
chart id, and, when a checkpoint recorded one, its fingerprint is the same). Otherwise the
chart is drawn from the log, and the page says so. Nothing is guessed.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from trackway.engine import Checkpoint, FlowChart, RunStore, Snapshot, UnknownRunError

from ._cli_out import EXIT_USAGE, CommandFailed, safe
from ._cli_store import open_store
from ._viewer import build_view, write_page
from ._viewer_chart import ChartDrawing, chart_from_mermaid, chart_from_structure

if TYPE_CHECKING:
    from ._cli_out import Out

__all__ = [
    "chart_of_spec",
    "recorded_checkpoint",
    "store_drawing",
    "store_label",
    "view_doc",
    "write_store_viewer",
]


def store_label(where: str) -> str:
    """A store named for a page or a message: a SQLite file by its name, a PostgreSQL URL by
    host and database, never its user or password."""
    if where.startswith(("postgresql://", "postgres://")):
        parts = urlsplit(where)
        host = parts.hostname or "localhost"
        return f"postgresql://{host}{':' + str(parts.port) if parts.port else ''}{parts.path}"
    return Path(where).name


def recorded_checkpoint(store: RunStore, snap: Snapshot) -> Checkpoint | None:
    """The newest checkpoint the store keeps of the run (one per pause, ``<run id>@<seq>``
    of the commit that paused), for the structure it recorded."""
    for commit in reversed(snap.history()):
        if commit.outcome != "paused":
            continue
        try:
            return store.load_checkpoint(f"{snap.run_id}@{commit.seq}")
        except UnknownRunError:
            continue
    return None


def _names(snap: Snapshot) -> dict[str, str]:
    """Node id to the stage name its commits recorded (top-level stages and fork branches)."""
    names: dict[str, str] = {}
    for c in snap.history():
        segments = [s.split("#", 1)[0].split(":", 1)[0] for s in c.stage_path.split("/")]
        if len(segments) == 1:
            names.setdefault(segments[0], c.stage_name)
        elif len(segments) == 2 and c.frame:  # a fork's branch: "<fork>/<key>"
            names.setdefault("/".join(segments), segments[1])
    return names


def chart_of_spec(target: object, spec: str) -> FlowChart:
    """The chart ``--chart`` names: a ``FlowChart``, or anything with ``spec()`` returning
    one (an ``Agent``, a composition)."""
    if isinstance(target, FlowChart):
        return target
    made = getattr(target, "spec", None)
    chart = made() if callable(made) else None
    if isinstance(chart, FlowChart):
        return chart
    raise CommandFailed(
        f"--chart {spec!r} is a {type(target).__name__}, not a FlowChart (call .build() on the "
        "builder) or an Agent",
        EXIT_USAGE,
    )


def store_drawing(
    store: RunStore, snap: Snapshot, chart: FlowChart | None = None
) -> ChartDrawing | None:
    """The recorded drawing of a stored run (``None``: draw it from the log): ``chart``'s
    own (checked against the run), else the structure of its newest checkpoint."""
    checkpoint = recorded_checkpoint(store, snap)
    if chart is not None:
        if chart.id != snap.chart_id:
            raise CommandFailed(
                f"--chart is chart {chart.id!r}, but run {snap.run_id} ran chart "
                f"{snap.chart_id!r}: name the chart it ran",
                EXIT_USAGE,
            )
        if checkpoint is not None and checkpoint.fingerprint != chart.fingerprint:
            raise CommandFailed(
                f"--chart {chart.id!r} changed since run {snap.run_id} paused (its fingerprint "
                "differs from the one its checkpoint recorded): drop --chart to draw the "
                "structure the store recorded",
                EXIT_USAGE,
            )
        drawn = chart_from_mermaid(chart.to_mermaid())
        return None if drawn is None else drawn._replace(source="chart")
    if checkpoint is None:
        return None
    return chart_from_structure(checkpoint.structure, _names(snap))


def view_doc(
    store: RunStore, run_id: str, where: str, chart: FlowChart | None = None
) -> tuple[dict[str, Any], str]:
    """The viewer's data and chart SVG of a stored run (:class:`UnknownRunError` if the
    store has no such run)."""
    snap = store.load(run_id)
    drawing = store_drawing(store, snap, chart)
    return build_view(snap, drawing=drawing, source=f"{store_label(where)}")


def write_store_viewer(
    where: str,
    run_id: str,
    output: Path,
    *,
    spec: str | None = None,
    out: Out | None = None,
) -> Path:
    """Write the viewer of run ``run_id`` of the store at ``where`` to ``output``."""
    import trackway.agent  # noqa: F401 - registers how agent runs are told

    if not output.parent.is_dir():
        raise CommandFailed(f"-o {output}: the folder {output.parent} does not exist")
    chart = None
    if spec is not None:
        from ._cli_resume import load_chart

        chart = chart_of_spec(load_chart(spec), spec)
    with open_store(where) as store:
        try:
            data, svg = view_doc(store, run_id, where, chart)
        except UnknownRunError:
            raise CommandFailed(
                f"no run {safe(run_id)} in {store_label(where)}; trackway runs --store "
                f"{store_label(where)} lists its runs"
            ) from None
    if out is not None and data["chart"]["source"] == "log":
        out.line(
            "the store recorded no chart structure for this run (it never paused): the "
            "chart is drawn from its log; --chart module:attr draws it from the chart"
        )
    return write_page(output, data, svg)
