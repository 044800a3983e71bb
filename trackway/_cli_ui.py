"""``trackway view`` (a recording, or a run of a store) and ``trackway ui`` (the live viewer
of a store): the command line's side of them."""

from __future__ import annotations

from pathlib import Path

from ._cli_out import EXIT_USAGE, CommandFailed, Out

__all__ = ["view_command"]


def view_command(
    out: Out,
    source: str,
    output: Path,
    *,
    run_id: str | None,
    store: str | None,
    spec: str | None,
) -> int:
    """``view RECORDING -o FILE`` or ``view RUN --store DB -o FILE``."""
    if store is None:
        if spec is not None:
            raise CommandFailed(
                "--chart draws a stored run's chart: it goes with --store (a recording keeps "
                "its chart's structure in its header)",
                EXIT_USAGE,
            )
        if source.startswith(("postgresql://", "postgres://")):
            raise CommandFailed(
                "that is a run store, not a recording: view one of its runs with "
                "trackway view RUN --store URL -o FILE",
                EXIT_USAGE,
            )
        from ._viewer import write_viewer

        written = write_viewer(Path(source), output, run_id=run_id, out=out)
    else:
        if run_id is not None:
            raise CommandFailed(
                "with --store, the run is the argument (trackway view RUN --store DB -o FILE); "
                "--run picks a run of a recording",
                EXIT_USAGE,
            )
        from ._viewer_store import write_store_viewer

        written = write_store_viewer(store, source, output, spec=spec, out=out)
    out.line(f"wrote {written} ({written.stat().st_size:,} bytes); open it in a browser")
    return 0
