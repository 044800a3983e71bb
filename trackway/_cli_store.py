"""``trackway runs``, ``show`` and ``prune``: a look into a run store, and its upkeep.

``runs`` and ``show`` open a SQLite store read-only and never change it. A store is a
SQLite file path or a ``postgresql://`` URL.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from trackway.engine import (
    Checkpoint,
    PostgresStore,
    RunStore,
    Seal,
    Snapshot,
    SqliteStore,
    TrackwayError,
    UnknownRunError,
)
from trackway.recorders import narrative_from_log

from ._cli_out import EXIT_USAGE, CommandFailed, Out, safe, when

__all__ = ["DEFAULT_DB", "list_runs", "prune_runs", "show_run"]

DEFAULT_DB = Path("trackway-demo") / "runs.db"

_Store = SqliteStore | PostgresStore


@contextmanager
def open_store(where: str, *, read_only: bool = True) -> Iterator[_Store]:
    """The store at ``where`` (a SQLite path or a ``postgresql://`` URL), closed after."""
    store: _Store
    try:
        seal = seal_from_env()
        if where.startswith(("postgresql://", "postgres://")):
            store = PostgresStore(where, seal=seal)
        else:
            path = Path(where)
            if not path.exists():
                raise CommandFailed(
                    f"no run store at {where}; run `trackway demo` first, or pass --store "
                    "with a SQLite file or a postgresql:// URL"
                )
            store = SqliteStore(path, read_only=read_only, seal=seal)
    except TrackwayError as exc:
        raise CommandFailed(str(exc)) from None
    try:
        yield store
    except TrackwayError as exc:
        raise CommandFailed(str(exc)) from None
    finally:
        store.close()


SEAL_KEY_ENV = "TRACKWAY_SEAL_KEY"


def seal_from_env() -> Seal | None:
    """The store's seal, from ``TRACKWAY_SEAL_KEY`` (never from a command-line argument,
    which other users of the machine can read in the process list)."""
    key = os.environ.get(SEAL_KEY_ENV)
    if not key:
        return None
    try:
        return Seal(key)
    except TrackwayError as exc:
        raise CommandFailed(f"{SEAL_KEY_ENV}: {exc}") from None


def _duration(started: float, ended: float | None) -> str:
    if ended is None:
        return "-"
    seconds = max(0.0, ended - started)
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    return f"{seconds / 60:.1f} min"


def list_runs(
    out: Out,
    where: str,
    *,
    chart: str | None,
    status: str | None,
    limit: int | None,
    as_json: bool,
) -> int:
    """The runs of a store, oldest first (``limit`` keeps the newest)."""
    with open_store(where) as store:
        runs = sorted(store.list_runs(), key=lambda r: r.started_at)
    runs = [
        r
        for r in runs
        if (chart is None or r.chart_id == chart) and (status is None or r.status == status)
    ]
    if limit is not None:
        runs = runs[-limit:] if limit else []
    if as_json:
        out.json([r._asdict() for r in runs])
        return 0
    if not runs:
        filters = [f"chart {chart!r}" if chart else "", f"status {status!r}" if status else ""]
        which = " and ".join(f for f in filters if f)
        out.line(f"no runs in {where}" + (f" with {which}" if which else ""))
        return 0
    out.table(
        [
            ("run id", "left"),
            ("chart", "left"),
            ("status", "left"),
            ("commits", "right"),
            ("started (UTC)", "left"),
            ("duration", "right"),
        ],
        (
            [
                r.run_id,
                r.chart_id,
                r.status,
                r.commit_count,
                when(r.started_at),
                _duration(r.started_at, r.ended_at),
            ]
            for r in runs
        ),
    )
    return 0


def _trail(out: Out, snap: Snapshot) -> None:
    commits = snap.history()
    # the columns are as wide as their widest cell, so long (nested) stage paths stay aligned
    paths = [safe(c.stage_path) for c in commits]
    path_width = max(map(len, paths), default=0)
    outcome_width = max((len(safe(c.outcome)) for c in commits), default=0)
    seq_width = max(3, len(str(commits[-1].seq)) if commits else 0)
    under = " " * (seq_width + 6)  # a decision's lines, indented under the stage path
    for c, path in zip(commits, paths, strict=True):
        writes = ", ".join(f"{op.kind} {safe(op.key)}" for op in c.ops) or "no writes"
        frame = f" [in {safe(c.frame)}]" if c.frame else ""
        out.line(
            f"  {c.seq:>{seq_width}}. {path:<{path_width}} "
            f"{safe(c.outcome):<{outcome_width}} read {[safe(r) for r in c.reads]}; "
            f"{writes}{frame}"
        )
        decision = (c.detail or {}).get("decision")
        if decision:
            for rule in decision.get("rules", []):
                mark = "matched" if rule.get("matched") else "no match"
                out.line(f"{under}rule {safe(repr(rule.get('label')))}: {mark}")
            chosen = decision.get("chosen", decision.get("selected"))
            out.line(f"{under}chose {safe(repr(chosen))}")


def show_run(
    out: Out, run_id: str, where: str, *, as_json: bool, width: int, detail: str = "compact"
) -> int:
    """One stored run: its narrative told from the log, then its commits."""
    import trackway.agent  # noqa: F401 - registers how agent runs are told

    with open_store(where) as store:
        snap = store.load(run_id)
        pause = _waiting(store, snap)
    story = narrative_from_log(
        snap, max_value_chars=width, detail="full" if detail == "full" else "compact"
    )
    if as_json:
        out.json(
            {
                "run": _run_doc(snap),
                "pause": None
                if pause is None
                else {
                    "checkpoint_id": pause.checkpoint_id,
                    "paused_at": pause.paused_at,
                    "payload": pause.payload,
                },
                "narrative": story.lines(),
                "commits": [c.to_dict() for c in snap.history()],
            }
        )
        return 0
    out.line(
        f"Run {safe(snap.run_id)} (chart {safe(snap.chart_id)}): {safe(snap.status)}, "
        f"{len(snap)} commits",
        style="bold",
    )
    if snap.error is not None:
        out.line(f"error: {snap.error.type}: {snap.error.message}", style="red")
    if pause is not None:
        from ._cli_resume import pause_lines

        for line in pause_lines(pause.payload, pause.paused_at, pause.checkpoint_id):
            out.line(line, style="yellow")
        out.line(
            f"resume it: trackway resume {safe(snap.run_id)} --value JSON --chart module:attr "
            f"--store {safe(where)}"
        )
    out.line()
    # on a terminal the lines wrap at its width, continuations indented; piped, one per line
    columns = out.console.width if out.console.is_terminal else None
    out.line(story.text(width=columns))
    out.line()
    out.line("Commits:", style="bold")
    _trail(out, snap)
    return 0


def _waiting(store: RunStore, snap: Snapshot) -> Checkpoint | None:
    """The checkpoint a paused run waits on (``<run id>@<commits>``), if the store keeps it."""
    if snap.status != "paused":
        return None
    try:
        return store.load_checkpoint(f"{snap.run_id}@{len(snap)}")
    except UnknownRunError:
        return None


def _run_doc(snap: Snapshot) -> dict[str, Any]:
    error = snap.error
    return {
        "run_id": snap.run_id,
        "chart_id": snap.chart_id,
        "status": snap.status,
        "commits": len(snap),
        "error": None if error is None else {"type": error.type, "message": error.message},
        "break_reason": snap.break_reason,
    }


def prune_runs(
    out: Out,
    where: str,
    *,
    older_than_days: float | None,
    keep_latest: int | None,
    status: str | None,
    dry_run: bool,
) -> int:
    """Delete the runs chosen by age, count or status, a batch at a time with progress."""
    if older_than_days is None and keep_latest is None and status is None:
        raise CommandFailed(
            "prune needs at least one of --older-than DAYS, --keep-latest N, --status S; "
            "nothing was deleted",
            EXIT_USAGE,
        )
    import time

    with open_store(where, read_only=dry_run) as store:
        runs = store.list_runs()
        chosen = {r.run_id for r in runs}
        if older_than_days is not None:
            cutoff = time.time() - older_than_days * 86_400
            chosen &= {r.run_id for r in runs if (r.ended_at or r.started_at) < cutoff}
        if keep_latest is not None:
            newest = sorted(runs, key=lambda r: r.started_at, reverse=True)
            chosen &= {r.run_id for r in newest[keep_latest:]}
        if status is not None:
            chosen &= {r.run_id for r in runs if r.status == status}
        doomed = sorted(chosen)
        if dry_run:
            out.line(f"would delete {len(doomed)} of {len(runs)} runs from {where}")
            for run_id in doomed:
                out.line(f"  {run_id}")
            return 0
        batches = [doomed[i : i + 100] for i in range(0, len(doomed), 100)]
        deleted = 0
        for batch in out.progress(batches, f"pruning {len(doomed)} runs"):
            deleted += store.prune(run_ids=batch)
    out.line(f"deleted {deleted} of {len(runs)} runs from {where}")
    return 0
