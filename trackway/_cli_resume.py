"""``trackway resume``: answer a paused run from the command line.

A chart is code, not data: the store keeps a run's log and checkpoint, never its stage
functions. So the command imports the chart the way a process that resumes would build it,
from ``--chart module:attr`` (a ``FlowChart`` or an ``Agent``; the current directory is on
the import path), and resumes the run with it in the store. It prints how the run stands
afterwards and, if it paused again, what it waits for now.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import orjson

from trackway.engine import Executor, FlowChart, RunResult, TrackwayError

from ._cli_out import EXIT_USAGE, CommandFailed, Out, safe
from ._cli_store import open_store

__all__ = ["load_chart", "parse_value", "pause_lines", "resume_run"]


def parse_value(text: str) -> Any:
    """The resume value from ``--value`` (JSON); a ValueError names what is wrong."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise ValueError(
            f"{text!r} is not JSON ({exc}); quote a string as JSON too, e.g. --value '\"yes\"'"
        ) from None


def load_chart(spec: str) -> object:
    """The object ``module:attr`` names (``attr`` may be dotted), imported with the current
    directory on the import path; a usage error (exit 2) names what could not be found."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise CommandFailed(
            f"--chart {spec!r}: give it as module:attr, e.g. --chart approvals.charts:chart",
            EXIT_USAGE,
        )
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        target: object = importlib.import_module(module_name)
    except Exception as exc:  # an import runs user code: any failure is reported, named
        raise CommandFailed(
            f"--chart {spec!r}: cannot import module {module_name!r}: {type(exc).__name__}: {exc}",
            EXIT_USAGE,
        ) from None
    for part in attr.split("."):
        if not hasattr(target, part):
            raise CommandFailed(
                f"--chart {spec!r}: {module_name!r} has no attribute {attr!r}", EXIT_USAGE
            )
        target = getattr(target, part)
    return target


def pause_lines(payload: Any, paused_at: str, checkpoint_id: str) -> list[str]:
    """How a paused run is shown: where it paused, with which checkpoint, waiting for what."""
    shown = orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode()
    return [
        f"paused at {safe(paused_at)} (checkpoint {safe(checkpoint_id)}), waiting for:",
        *(f"  {safe(line)}" for line in shown.splitlines()),
    ]


def resume_run(
    out: Out, run_id: str, where: str, spec: str, value: Any, *, store_given: bool
) -> int:
    """Resume ``run_id`` with ``value`` on the chart (or agent) ``spec`` names."""
    target = load_chart(spec)
    if isinstance(target, FlowChart):
        with open_store(where, read_only=False) as store:
            result = Executor(target, store=store).resume_sync(run_id, value, raise_on_error=False)
        return _report(out, result)
    from trackway.agent import Agent

    if isinstance(target, Agent):
        if store_given:
            raise CommandFailed(
                f"--chart {spec!r} is an Agent, which resumes in the store it was built with "
                "(Agent.create(..., store=...)): drop --store",
                EXIT_USAGE,
            )
        return _resume_agent(out, target, run_id, value)
    raise CommandFailed(
        f"--chart {spec!r} is a {type(target).__name__}, not a FlowChart (call .build() on the "
        "builder) or an Agent",
        EXIT_USAGE,
    )


def _report(out: Out, result: RunResult) -> int:
    out.line(
        f"Run {safe(result.run_id)}: {result.status}, {len(result.snapshot)} commits",
        style="bold",
    )
    cp = result.checkpoint
    if cp is not None:
        for line in pause_lines(cp.payload, cp.paused_at, cp.checkpoint_id):
            out.line(line)
    if result.error is not None:
        out.line(f"error: {type(result.error).__name__}: {safe(result.error)}", style="red")
        return 1
    return 0


def _resume_agent(out: Out, agent: Any, run_id: str, value: Any) -> int:
    from trackway.agent import is_paused

    try:
        outcome = agent.resume_sync(run_id, value)
    except TrackwayError as exc:
        raise CommandFailed(f"{type(exc).__name__}: {exc}") from None
    snap = agent.snapshot()
    out.line(f"Run {safe(snap.run_id)}: {snap.status}, {len(snap)} commits", style="bold")
    if is_paused(outcome):
        cp = outcome.checkpoint
        for line in pause_lines(cp.payload, cp.paused_at, cp.checkpoint_id):
            out.line(line)
    else:
        out.line(f"answer: {safe(outcome, one_line=False)}")
    return 0
