"""``trackway view`` (a recording, or a run of a store) and ``trackway ui`` (the live viewer
of a store): the command line's side of them."""

from __future__ import annotations

from pathlib import Path

from ._cli_out import EXIT_USAGE, CommandFailed, Out

__all__ = ["ui_command", "view_command"]


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


_LOOPBACK = {"127.0.0.1", "::1", "localhost"}


def ui_command(
    out: Out, where: str, *, host: str, port: int, specs: tuple[str, ...], poll: float
) -> int:
    """``trackway ui``: serve the live viewer of the store at ``where`` until interrupted."""
    import socket

    try:
        import uvicorn

        from trackway.serve.ui import ui_app
    except ImportError as exc:
        raise CommandFailed(
            f"trackway ui needs the serve extra ({exc.name} is missing): "
            "pip install 'trackway[serve]'",
            EXIT_USAGE,
        ) from None
    from trackway.engine import TrackwayError

    from ._cli_resume import load_chart
    from ._cli_store import seal_from_env

    if not where.startswith(("postgresql://", "postgres://")) and not Path(where).is_file():
        raise CommandFailed(
            f"no run store at {where}; run `trackway demo` first, or pass --store with a "
            "SQLite file or a postgresql:// URL"
        )
    charts = [load_chart(spec) for spec in specs]
    try:
        app = ui_app(where, charts=charts, poll=poll, seal=seal_from_env())
    except TypeError as exc:
        raise CommandFailed(f"--chart: {exc}", EXIT_USAGE) from None
    except TrackwayError as exc:
        raise CommandFailed(str(exc)) from None
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise CommandFailed(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    from ._viewer_store import store_label

    out.line(f"trackway ui: {store_label(where)} at http://{shown}:{bound}/ (Ctrl-C stops)")
    if host not in _LOOPBACK:
        out.error(
            f"warning: listening on {host}, beyond this machine. The ui has no login: anyone "
            "who reaches it reads every run in the store and can answer paused runs."
        )
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])
    return 0
