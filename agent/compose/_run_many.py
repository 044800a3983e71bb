"""``run_many``: a chart or an agent over a data set — every input run, failures collected.

Evaluating an agent over a data set, or a chart over a batch of records, is many runs that
share one target. ``run_many`` runs them at most ``concurrency`` at a time on one event loop
(one ``Agent`` serves concurrent runs; a chart gets an ``Executor`` shared by its runs),
keeps one :class:`ItemResult` per input in input order, never lets one failure stop the
others, and can write each run's recording to a folder. Progress is reported through a
callback after each input ends. With ``runner=ray_runner()`` each input runs as a Ray task
instead (the target is shipped to the workers, each run's snapshot comes back, and its
recording is written here).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

import anyio

from trackway.engine import (
    ConfigurationError,
    Executor,
    FlowChart,
    RayBranchError,
    RayRunner,
    RunResult,
    Snapshot,
)
from trackway.engine.core._sync import run_sync
from trackway.engine.scale._ray_runner import map_on_ray
from trackway.recorders import write_recording

from ..messages._paused import Paused
from ..runtime._agent import Agent

__all__ = ["ItemResult", "RunManyReport", "run_many", "run_many_sync"]


@dataclass(frozen=True)
class ItemResult:
    """One input's run: ``status`` is the run's (``done``, ``paused``, ``failed``, ...);
    ``output`` the agent's answer or the chart's final state; ``error`` ``"Type: message"``
    when it failed; ``recording`` the file written for it, when asked for."""

    index: int
    input: Any
    status: str
    output: Any
    run_id: str | None
    error: str | None
    recording: Path | None


class RunManyReport(NamedTuple):
    """Every input's :class:`ItemResult`, in input order."""

    items: tuple[ItemResult, ...]

    @property
    def failures(self) -> tuple[ItemResult, ...]:
        """The inputs whose run failed (the others may be done, paused or broken)."""
        return tuple(item for item in self.items if item.status == "failed")

    @property
    def counts(self) -> dict[str, int]:
        """How many runs ended in each status."""
        out: dict[str, int] = {}
        for item in self.items:
            out[item.status] = out.get(item.status, 0) + 1
        return out


Progress = Callable[[int, int, ItemResult], None]


async def run_many(
    target: FlowChart | Executor | Agent,
    inputs: Iterable[Any],
    *,
    concurrency: int = 8,
    recordings: str | os.PathLike[str] | None = None,
    on_progress: Progress | None = None,
    runner: RayRunner | None = None,
) -> RunManyReport:
    """Run ``target`` once per input, at most ``concurrency`` at a time.

    ``target`` is a chart (or an :class:`Executor`, to choose its store and recorders; an
    input is the run's initial state, a mapping) or an :class:`Agent` (an input is what
    ``agent.run`` takes: a message, or ``{"message": ..., "identity": ...}``). A run that
    fails is collected as a failed item; nothing is raised for it. ``recordings``: a folder
    to write ``<index>.jsonl`` into, one recording per run. ``on_progress(done, total,
    item)`` is called as each input ends.

    ``runner=ray_runner()`` runs each input as a Ray task (at most ``concurrency`` at a
    time): the target must pickle and have no store (a worker cannot share this process's
    store; ``recordings=`` keeps every run's log here). The report is the same.
    """
    items = list(inputs)
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigurationError(f"run_many: concurrency must be an int >= 1, got {concurrency!r}")
    folder = None if recordings is None else Path(recordings)
    if folder is not None and not folder.is_dir():
        raise ConfigurationError(
            f"run_many: recordings={str(folder)!r} is not a folder; create it first"
        )
    if not isinstance(target, FlowChart | Executor | Agent):
        raise ConfigurationError(
            f"run_many: the target is a FlowChart, an Executor or an Agent, got {target!r}"
        )
    if runner is not None and not isinstance(runner, RayRunner):
        raise ConfigurationError(f"run_many: runner= takes ray_runner() or None, got {runner!r}")
    executor = Executor(target) if isinstance(target, FlowChart) else target
    results: list[ItemResult | None] = [None] * len(items)
    gate = anyio.Semaphore(concurrency)
    done = 0

    def finish(index: int, item: ItemResult) -> None:
        nonlocal done
        results[index] = item
        done += 1
        if on_progress is not None:
            on_progress(done, len(items), item)

    async def one(index: int) -> None:
        async with gate:
            item = await _run_one(executor, index, items[index], folder)
        finish(index, item)

    def landed(index: int, came: Any) -> None:
        if isinstance(came, RayBranchError):  # the task was lost: this input failed
            given = items[index]
            error = f"{type(came).__name__}: {came}"
            finish(index, ItemResult(index, given, "failed", None, None, error, None))
            return
        item, snapshot = came
        chart = executor.spec() if isinstance(executor, Agent) else executor.chart
        path = None if snapshot is None else _record(snapshot, folder, index, chart)
        finish(index, replace(item, recording=path))

    if runner is not None:
        _check_shippable(executor)
        inputs_at = list(enumerate(items))
        await map_on_ray(runner, _remote_item, executor, inputs_at, concurrency, landed, "run_many")
    else:
        async with anyio.create_task_group() as group:
            for index in range(len(items)):
                group.start_soon(one, index)
    return RunManyReport(tuple(item for item in results if item is not None))


def _check_shippable(target: Executor | Agent) -> None:
    store = target.store if isinstance(target, Executor) else target._runtime.store
    if store is not None:
        raise ConfigurationError(
            f"run_many(runner=ray_runner()) runs each input on a Ray worker, which cannot "
            f"write to this process's {type(store).__name__}: give run_many the chart (or an "
            "agent built without store=) and recordings=folder to keep every run's log, or "
            "run without runner="
        )


async def _remote_item(
    target: Executor | Agent, at: tuple[int, Any]
) -> tuple[ItemResult, Snapshot | None]:
    """In a Ray worker: one input's run; its snapshot travels back to be recorded there."""
    item, snapshot, _ = await _outcome(target, *at)
    return item, snapshot


def run_many_sync(
    target: FlowChart | Executor | Agent,
    inputs: Iterable[Any],
    *,
    concurrency: int = 8,
    recordings: str | os.PathLike[str] | None = None,
    on_progress: Progress | None = None,
    runner: RayRunner | None = None,
) -> RunManyReport:
    """``run_many`` for callers without an event loop."""

    async def go() -> RunManyReport:
        return await run_many(
            target,
            inputs,
            concurrency=concurrency,
            recordings=recordings,
            on_progress=on_progress,
            runner=runner,
        )

    return run_sync(go, name="run_many_sync", twin="await run_many(...)")


async def _run_one(
    target: Executor | Agent, index: int, given: Any, folder: Path | None
) -> ItemResult:
    item, snapshot, chart = await _outcome(target, index, given)
    path = None if snapshot is None else _record(snapshot, folder, index, chart)
    return replace(item, recording=path)


async def _outcome(
    target: Executor | Agent, index: int, given: Any
) -> tuple[ItemResult, Snapshot | None, FlowChart]:
    """One input's item (no recording yet), the snapshot to record and its chart."""
    if isinstance(target, Agent):
        return await _agent_item(target, index, given)
    if given is not None and not isinstance(given, Mapping):
        return ItemResult(
            index, given, "failed", None, None, "ConfigurationError: a chart's input is a "
            f"mapping of state keys, got {type(given).__name__}", None,
        ), None, target.chart  # fmt: skip
    result: RunResult = await target.run(given, raise_on_error=False)
    error = None if result.error is None else f"{type(result.error).__name__}: {result.error}"
    output = dict(result.state) if result.status != "failed" else None
    item = ItemResult(index, given, result.status, output, result.run_id, error, None)
    return item, result.snapshot, target.chart


async def _agent_item(
    agent: Agent, index: int, given: Any
) -> tuple[ItemResult, Snapshot | None, FlowChart]:
    try:
        result = await agent.run_result(given)
    except Exception as exc:  # a failed turn is an item, not the end of the batch
        snapshot = getattr(exc, "snapshot", None)
        kept = snapshot if isinstance(snapshot, Snapshot) else None
        run_id = None if kept is None else kept.run_id
        error = f"{type(exc).__name__}: {exc}"
        return ItemResult(index, given, "failed", None, run_id, error, None), kept, agent.spec()
    status = "paused" if isinstance(result.paused, Paused) else result.snapshot.status
    item = ItemResult(index, given, status, result.output, result.run_id, None, None)
    return item, result.snapshot, agent.spec()


def _record(snapshot: Snapshot, folder: Path | None, index: int, chart: FlowChart) -> Path | None:
    """The run's recording in the one format, with the chart's structure (for the viewer)."""
    if folder is None:
        return None
    return write_recording(snapshot, folder / f"{index}.jsonl", chart=chart)
