"""The ``trackway`` command line: an offline demo, a look into run stores and recordings,
resuming a paused run, a self-contained HTML trace viewer, and workers that drive queued
runs from PostgreSQL.

Exit codes: 0 done; 1 a store, run or recording could not be read (the message names the
file and what is wrong); 2 a usage error (a bad option, a call number the recording does not
have, a ``--value`` that is not JSON); 3 a rebuilt request does not match its receipt
(``replay``). Every line printed has its control characters escaped (an ESC character
prints as the four characters ``\\x1b``): a stored value can never drive the terminal.
The ``runs`` and ``show`` commands open a SQLite store read-only and never change it.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from ._cli_out import EXIT_UNREADABLE, CommandFailed, Out
from ._cli_store import DEFAULT_DB

__all__ = ["main"]

_STORE_HELP = f"a SQLite file or a postgresql:// URL (default: {DEFAULT_DB})"


def _plain(text: str | None) -> str | None:
    """A docstring as ``--help`` shows it: click prints text as it is, so the reST literal
    marks (the double backquotes) are dropped."""
    return None if text is None else re.sub(r"``(.+?)``", r"\1", text, flags=re.S)


def _store_option(fn: click.decorators.FC) -> click.decorators.FC:
    return click.option(
        "--store", "--db", "store", default=str(DEFAULT_DB), show_default=False, help=_STORE_HELP
    )(fn)


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, help=_plain(__doc__))
@click.option(
    "--color/--no-color",
    default=None,
    help="force colour on or off (default: on for a terminal, off for a pipe or NO_COLOR)",
)
@click.pass_context
def cli(ctx: click.Context, color: bool | None) -> None:
    ctx.obj = Out(color)


@cli.command()
@_store_option
@click.pass_obj
def demo(out: Out, store: str) -> int:
    """Run an offline chart and an agent on the embedded SQLite store; print what happened."""
    from ._cli_demo import run_demo

    return run_demo(out, Path(store))


@cli.command()
@_store_option
@click.option("--chart", help="only the runs of this chart id")
@click.option("--status", help="only the runs with this status (done, paused, failed, ...)")
@click.option("--limit", type=click.IntRange(min=0), help="only the newest N runs")
@click.option("--json", "as_json", is_flag=True, help="print JSON instead of a table")
@click.pass_obj
def runs(
    out: Out, store: str, chart: str | None, status: str | None, limit: int | None, as_json: bool
) -> int:
    """List the runs in a store: id, chart, status, commits, start, duration."""
    from ._cli_store import list_runs

    return list_runs(out, store, chart=chart, status=status, limit=limit, as_json=as_json)


@cli.command()
@click.argument("run_id")
@_store_option
@click.option("--json", "as_json", is_flag=True, help="print the run, narrative and commits")
@click.option(
    "--width",
    type=click.IntRange(min=1),
    default=40,
    show_default=True,
    help="cut values longer than this many characters in the narrative",
)
@click.option(
    "--detail",
    type=click.Choice(["compact", "full"]),
    default="compact",
    show_default=True,
    help="compact: an agent told one line per step; full: every stage, read by read",
)
@click.pass_obj
def show(out: Out, run_id: str, store: str, as_json: bool, width: int, detail: str) -> int:
    """Tell a stored run from its log: the narrative, then its commits."""
    from ._cli_store import show_run

    return show_run(out, run_id, store, as_json=as_json, width=width, detail=detail)


def _json_value(ctx: click.Context, param: click.Parameter, text: str) -> object:
    from ._cli_resume import parse_value

    try:
        return parse_value(text)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


@cli.command()
@click.argument("run_id")
@click.option(
    "--value",
    default="null",
    callback=_json_value,
    help="the answer, as JSON (a string is quoted: '\"yes\"'); default null",
)
@click.option(
    "--chart",
    "spec",
    required=True,
    help="the chart to resume with, as module:attr (a FlowChart or an Agent)",
)
@_store_option
@click.pass_context
def resume(ctx: click.Context, run_id: str, value: object, spec: str, store: str) -> int:
    """Resume a paused run with an answer; print how it stands after, and what it waits for
    if it paused again."""
    from ._cli_resume import resume_run

    given = ctx.get_parameter_source("store") is not click.core.ParameterSource.DEFAULT
    return resume_run(ctx.obj, run_id, store, spec, value, store_given=given)


_gc_freeze_option = click.option(
    "--gc-freeze/--no-gc-freeze",
    default=True,
    show_default=True,
    help="keep the heap built at startup out of the garbage collector's full collections "
    "while serving (gc.freeze()): with 1,000 runs in flight, a fifth less collector time a run",
)
_gc_young_option = click.option(
    "--gc-young",
    type=click.IntRange(min=0),
    default=20_000,
    show_default=True,
    help="allocations between the garbage collector's young collections while serving "
    "(Python's default is 700; 0 keeps the process's own): with 5,000 runs in flight, about "
    "a third less CPU a run (trackway.engine.serving_gc)",
)


@cli.command()
@click.argument("spec")
@click.option("--store", help="where the runs are kept: a SQLite file or a postgresql:// URL")
@click.option("--host", default="127.0.0.1", show_default=True, help="the address to bind")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option("--auth", "auth_spec", help="the auth hook, as module:fn (request -> Identity)")
@click.option(
    "--dev-loopback",
    is_flag=True,
    help="no auth hook: every request from this machine is one local user (loopback only)",
)
@click.option("--a2a", is_flag=True, help="host the agent over A2A at /a2a/ too (a2a extra)")
@_gc_freeze_option
@_gc_young_option
@click.pass_obj
def serve(
    out: Out,
    spec: str,
    store: str | None,
    host: str,
    port: int,
    auth_spec: str | None,
    dev_loopback: bool,
    a2a: bool,
    gc_freeze: bool,
    gc_young: int,
) -> int:
    """Serve an agent (module:agent) over HTTP: the chat page and its JSON and SSE routes."""
    from ._cli_serve import serve_command

    return serve_command(
        out, spec, store, host, port, auth_spec, dev_loopback, a2a, gc_freeze=gc_freeze,
        gc_young=gc_young,
    )  # fmt: skip


@cli.command()
@_store_option
@click.option("--older-than", "older_than", type=float, help="runs that ended over DAYS ago")
@click.option("--keep-latest", type=click.IntRange(min=0), help="all but the newest N runs")
@click.option("--status", help="runs with this status")
@click.option("--dry-run", is_flag=True, help="list what would be deleted; delete nothing")
@click.pass_obj
def prune(
    out: Out,
    store: str,
    older_than: float | None,
    keep_latest: int | None,
    status: str | None,
    dry_run: bool,
) -> int:
    """Delete the runs that match every filter given (at least one is needed)."""
    from ._cli_store import prune_runs

    return prune_runs(
        out,
        store,
        older_than_days=older_than,
        keep_latest=keep_latest,
        status=status,
        dry_run=dry_run,
    )


@cli.command()
@click.argument("recording", type=click.Path(path_type=Path))
@click.option("--call", type=int, help="print model call K (1-based) rebuilt; default: check all")
@click.option(
    "--wire", is_flag=True, help="print the HTTP body the provider sends for call K (default 1)"
)
@click.pass_obj
def replay(out: Out, recording: Path, call: int | None, wire: bool) -> int:
    """Rebuild model requests from a recording and check each against its receipt."""
    from ._cli_replay import replay_calls

    return replay_calls(out, recording, 1 if wire and call is None else call, wire)


@cli.command()
@click.argument("source", metavar="RECORDING|RUN")
@click.option(
    "-o", "--output", type=click.Path(path_type=Path), required=True, help="the HTML file"
)
@click.option("--run", "run_id", help="which run, when the recording holds several")
@click.option(
    "--store",
    "--db",
    "store",
    help="view run RUN of this store (a SQLite file or a postgresql:// URL)",
)
@click.option(
    "--chart", "spec", help="with --store: draw the chart from module:attr (a FlowChart or Agent)"
)
@click.pass_obj
def view(
    out: Out, source: str, output: Path, run_id: str | None, store: str | None, spec: str | None
) -> int:
    """Write a self-contained HTML trace viewer of a recording, or (with --store) of a run
    kept in a store (opens with no network)."""
    from ._cli_ui import view_command

    return view_command(out, source, output, run_id=run_id, store=store, spec=spec)


@cli.command()
@_store_option
@click.option("--host", default="127.0.0.1", show_default=True, help="the address to bind")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True)
@click.option(
    "--chart",
    "specs",
    multiple=True,
    help="module:attr of a FlowChart or Agent whose paused runs an answer resumes here "
    "(repeatable)",
)
@click.option(
    "--poll",
    type=click.FloatRange(min=0.01),
    default=0.25,
    show_default=True,
    help="seconds between looks at a followed run",
)
@click.pass_obj
def ui(out: Out, store: str, host: str, port: int, specs: tuple[str, ...], poll: float) -> int:
    """Serve a live viewer of a store over HTTP: its runs with filters, each run's page
    updating while it runs, a paused run's question answerable from the page. A local
    developer tool: never expose it."""
    from ._cli_ui import ui_command

    return ui_command(out, store, host=host, port=port, specs=specs, poll=poll)


def _pg_option(fn: click.decorators.FC) -> click.decorators.FC:
    return click.option(
        "--store", "--db", "store", required=True, help="the postgresql:// URL of the run queue"
    )(fn)


@cli.command()
@_pg_option
@click.option(
    "--charts",
    "specs",
    multiple=True,
    required=True,
    help="module:attr of a FlowChart, an Agent, or a dict of names to either (repeatable)",
)
@click.option(
    "--lease",
    type=click.FloatRange(min=0.5),
    default=30.0,
    show_default=True,
    help="seconds a claim holds without renewal",
)
@click.option(
    "--max-runs",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="runs driven at once",
)
@click.option(
    "--poll",
    type=click.FloatRange(min=0.001),
    default=0.25,
    show_default=True,
    help="seconds between claims when idle (the fallback while listening)",
)
@click.option(
    "--listen/--no-listen",
    default=True,
    show_default=True,
    help="hear submitted and answered runs through LISTEN/NOTIFY and claim them at once",
)
@click.option(
    "--max-attempts",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="claims of one run before it is failed as unrecoverable",
)
@click.option(
    "--idle-exit",
    is_flag=True,
    help="exit once no run is runnable and no other worker holds a lease",
)
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="stderr log lines",
)
@_gc_freeze_option
@_gc_young_option
@click.pass_obj
def worker(
    out: Out,
    store: str,
    specs: tuple[str, ...],
    lease: float,
    max_runs: int,
    poll: float,
    listen: bool,
    max_attempts: int,
    idle_exit: bool,
    log_format: str,
    gc_freeze: bool,
    gc_young: int,
) -> int:
    """Claim submitted runs from a PostgreSQL store and drive them (SIGTERM: finish the
    stages in flight, let the runs go to another worker)."""
    from ._cli_worker import run_worker

    return run_worker(
        out,
        store,
        specs,
        lease=lease,
        max_runs=max_runs,
        idle_exit=idle_exit,
        poll=poll,
        listen=listen,
        max_attempts=max_attempts,
        log_format=log_format,
        gc_freeze=gc_freeze,
        gc_young=gc_young,
    )


@cli.command()
@_pg_option
@click.option("--all", "include_gone", is_flag=True, help="also stopped and silent workers")
@click.option("--json", "as_json", is_flag=True, help="print JSON instead of a table")
@click.pass_obj
def workers(out: Out, store: str, include_gone: bool, as_json: bool) -> int:
    """List the live workers on a store, the runs they hold, and the queue's counts."""
    from ._cli_worker import list_workers

    return list_workers(out, store, include_gone=include_gone, as_json=as_json)


@cli.command()
@click.argument("name")
@click.option(
    "--input",
    "value",
    default="null",
    callback=_json_value,
    help="the run's input as JSON (a dict for a chart, a message for an agent)",
)
@_pg_option
@click.pass_obj
def submit(out: Out, name: str, value: object, store: str) -> int:
    """Queue a run of the chart or agent workers registered as NAME; print its run id."""
    from ._cli_worker import submit_run

    return submit_run(out, store, name, value)


@cli.command()
@click.argument("checkpoint_id")
@click.option("--value", default="null", callback=_json_value, help="the answer, as JSON")
@_pg_option
@click.pass_obj
def answer(out: Out, checkpoint_id: str, value: object, store: str) -> int:
    """Answer the question a queued run paused on; a worker resumes it."""
    from ._cli_worker import answer_run

    return answer_run(out, store, checkpoint_id, value)


def main(argv: list[str] | None = None) -> int:
    """Run the command line on ``argv`` (default: the process's arguments); return the exit
    code instead of exiting, so it can be called from Python."""
    try:
        result = cli.main(args=argv, prog_name="trackway", standalone_mode=False)
    except CommandFailed as exc:
        Out().error(str(exc))
        return exc.code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Abort:
        Out().error("aborted")
        return EXIT_UNREADABLE
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
