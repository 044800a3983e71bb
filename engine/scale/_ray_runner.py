"""Fan-out on Ray: the runner (``ray_runner()``) and how work travels to Ray and back.

With ``runner=ray_runner()`` the branches of a fork or a ``parallel_for_each`` run as Ray
tasks (``_ray_branches``), and so do the inputs of ``run_many``. This module holds what they
share: the runner's options, starting Ray, shipping work (cloudpickle, with trackway's
module-level ContextVars by reference), waiting for results off the event loop, at most
``limit`` tasks in flight, and cancelling what is still out when the caller stops.

Ray is imported only when work is sent (``import trackway`` and building a chart never
import it). Waiting on Ray happens in a worker thread, so the event loop (asyncio or trio)
keeps running.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from ..core._errors import ConfigurationError, RunError

if TYPE_CHECKING:
    from ..chart._chart import Branch
    from ..run._context import Strand
    from ..run._merge import BranchResult

__all__ = [
    "RayBranchError",
    "RayRunner",
    "awake",
    "drive",
    "import_ray",
    "in_worker",
    "lost_task",
    "map_on_ray",
    "pickled",
    "put",
    "ray_runner",
    "ready",
    "remote_task",
    "travel",
    "unshippable",
]


class RayBranchError(RunError):
    """A branch (or a ``run_many`` input) sent to Ray could not run there as it would here:
    it could not be shipped to a worker, its worker could not load it or was lost, or it
    paused (a Ray branch cannot wait for an answer). The message names it and the fix."""


@dataclass(frozen=True)
class RayRunner:
    """Where a fork's or a ``parallel_for_each``'s branches run: one Ray task per branch
    (a :class:`~trackway.engine.BranchRunner`).

    Made by :func:`ray_runner`; pass it as ``runner=``. ``num_cpus`` and ``max_retries``
    and ``options`` go to Ray's ``.options(...)`` for every task.
    """

    num_cpus: float = 1.0
    max_retries: int = 3
    options: Mapping[str, Any] = field(default_factory=dict)

    async def run_branches(
        self,
        strand: Strand,
        pairs: Sequence[tuple[str, Branch]],
        base_path: str,
        seeds: Sequence[Mapping[str, Any]] | None,
        limit: int | None,
        chooser: str | None,
    ) -> list[BranchResult]:
        """The :class:`~trackway.engine.BranchRunner` method: each branch a Ray task
        (``_ray_branches.run_on_ray``)."""
        from ._ray_branches import run_on_ray  # deferred: it imports this module

        return await run_on_ray(self, strand, pairs, base_path, seeds, limit, chooser)

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in self.options.items())
        return f"ray_runner(num_cpus={self.num_cpus}, max_retries={self.max_retries}{extra})"


def ray_runner(
    *, num_cpus: float = 1, max_retries: int = 3, options: Mapping[str, Any] | None = None
) -> RayRunner:
    """Run each branch of a fork or ``parallel_for_each`` (or each input of ``run_many``)
    as a Ray task: ``.parallel_for_each(..., runner=ray_runner())``.

    The branches' commits merge in declaration order exactly as on one machine. ``num_cpus``
    is what each task reserves; ``max_retries`` how often Ray runs a task again whose worker
    died (the branch runs again from its start; only the run that returned is committed);
    ``options`` any other argument of Ray's ``.options()`` (``resources``, ``runtime_env``,
    ``scheduling_strategy``, ...). Call ``ray.init(...)`` first to choose the cluster;
    otherwise the first fan-out starts a local one. Needs ``pip install 'trackway[ray]'``.
    """
    if importlib.util.find_spec("ray") is None:
        raise ConfigurationError(
            "ray_runner() needs Ray, which is not installed: pip install 'trackway[ray]'"
        )
    if isinstance(num_cpus, bool) or not isinstance(num_cpus, int | float) or num_cpus < 0:
        raise ConfigurationError(f"ray_runner: num_cpus must be a number >= 0, got {num_cpus!r}")
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
        raise ConfigurationError(
            f"ray_runner: max_retries must be an int >= 0, got {max_retries!r}"
        )
    given = dict(options or {})
    clash = sorted({"num_cpus", "max_retries"} & set(given))
    if clash:
        raise ConfigurationError(
            f"ray_runner: pass {', '.join(clash)} as ray_runner({clash[0]}=...), not in options="
        )
    return RayRunner(float(num_cpus), max_retries, given)


def pickled(value: object) -> bytes:
    """``value`` as Ray sends it (cloudpickle), or the error that says it cannot go."""
    from ray import cloudpickle

    dumps: Callable[[object], bytes] = cloudpickle.dumps
    return dumps(value)


_LOOP: asyncio.Runner | None = None


def in_worker(fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
    """In a Ray worker: ``await fn(*args)`` on the worker's event loop, kept from one task
    to the next (a new loop per task would cost more than a trivial branch does)."""
    global _LOOP
    travel(import_ray())
    if _LOOP is None:
        _LOOP = asyncio.Runner()
    try:
        return _LOOP.run(awake(fn, *args))
    except BaseException:  # cancelled by Ray: the next task starts on a fresh loop
        _LOOP.close()
        _LOOP = None
        raise


async def awake(fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
    """``await fn(*args)`` with the loop woken every 0.1 s: ``ray.cancel`` raises
    KeyboardInterrupt in the task's thread, which Python delivers only while it runs code,
    never while the loop sleeps in ``select`` waiting for a timer far away."""

    async def beat() -> None:
        while True:  # noqa: ASYNC110 - a heartbeat, not a wait for something to happen
            await anyio.sleep(0.1)

    async with anyio.create_task_group() as group:
        group.start_soon(beat)
        result = await fn(*args)
        group.cancel_scope.cancel()
    return result


_LINGER = 0.02
_GRACE = 0.5
"""Seconds the tasks after a failed one get to end before those still running are
cancelled (see :func:`_cancel`)."""
_REMOTES: dict[Callable[..., Any], Any] = {}
_TRAVELS = False
_VAR_HOMES: dict[int, tuple[str, str]] = {}


def import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:  # pragma: no cover - ray_runner() checked it is installed
        raise ConfigurationError(
            "runner=ray_runner() needs Ray: pip install 'trackway[ray]'"
        ) from exc
    return ray


def _context_var_home(var: ContextVar[Any]) -> tuple[str, str]:
    """Where a module-level ContextVar of trackway lives, so it pickles by reference (stage
    functions of an agent's chart refer to some; a ContextVar itself cannot be pickled)."""
    home = _VAR_HOMES.get(id(var))
    if home is None:
        for name, module in list(sys.modules.items()):
            if module is None or not (name == "trackway" or name.startswith("trackway.")):
                continue
            for attr, value in list(vars(module).items()):
                if value is var:
                    home = _VAR_HOMES[id(var)] = (name, attr)
                    break
            if home is not None:
                break
    if home is None:
        raise TypeError(
            f"cannot send the ContextVar {var.name!r} to a Ray worker: only module-level "
            "context variables of trackway travel (by reference)"
        )
    return home


def _context_var_at(home: tuple[str, str]) -> ContextVar[Any]:
    import importlib

    var: ContextVar[Any] = getattr(importlib.import_module(home[0]), home[1])
    return var


async def ready(ray: Any) -> None:
    if not ray.is_initialized():  # starting a local cluster takes seconds: off the loop
        await anyio.to_thread.run_sync(lambda: ray.init(include_dashboard=False))
    travel(ray)


def travel(ray: Any) -> None:
    """Once per process (the driver and each worker, whose results travel back): module-level
    ContextVars of trackway pickle by reference."""
    global _TRAVELS
    if not _TRAVELS:
        ray.util.register_serializer(
            ContextVar, serializer=_context_var_home, deserializer=_context_var_at
        )
        _TRAVELS = True


def remote_task(ray: Any, fn: Callable[..., Any], runner: RayRunner) -> Any:
    task = _REMOTES.get(fn)
    if task is None:
        task = _REMOTES[fn] = ray.remote(fn)
    return task.options(num_cpus=runner.num_cpus, max_retries=runner.max_retries, **runner.options)


def _collect(
    ray: Any, pending: list[Any], linger: float
) -> list[tuple[Any, Any, BaseException | None]]:
    """In a worker thread: wait (at most a second) for a task to end, then up to ``linger``
    seconds more for others (one ``ray.wait`` costs about 1 ms per 1,000 tasks it watches,
    so results are taken in batches); fetch the finished ones."""
    ready, rest = ray.wait(pending, num_returns=1, timeout=1.0)
    if ready and rest:
        more, _ = ray.wait(rest, num_returns=len(rest), timeout=linger)
        ready = [*ready, *more]
    out: list[tuple[Any, Any, BaseException | None]] = []
    for ref in ready:
        try:
            out.append((ref, ray.get(ref), None))
        except Exception as exc:  # the worker died, or could not load what it was sent
            out.append((ref, None, exc))
    return out


async def drive(
    ray: Any,
    count: int,
    limit: int | None,
    submit: Callable[[int], Any],
    done: Callable[[int, Any, BaseException | None], bool],
) -> None:
    """Run ``count`` tasks, at most ``limit`` at a time. ``done(i, value, lost)`` hears each
    end and returns True to stop: tasks after ``i`` are cancelled and never started, and the
    drive ends once every task before ``i`` has ended."""
    refs: dict[Any, int] = {}
    started = 0
    stop: int | None = None
    ended = [False] * count
    cap = limit or count
    try:
        while True:
            while started < count and len(refs) < cap and (stop is None or started < stop):
                refs[submit(started)] = started
                started += 1
            if not refs:
                return
            # nothing left to start: gather what ends within 20 ms (a failure waits no longer)
            linger = _LINGER if started == count else 0.0
            batch = await anyio.to_thread.run_sync(
                _collect, ray, list(refs), linger, abandon_on_cancel=True
            )
            for ref, value, lost in batch:
                i = refs.pop(ref, None)
                if i is None:  # after a failure earlier in this batch: it no longer counts
                    continue
                ended[i] = True
                if done(i, value, lost) and (stop is None or i < stop):
                    stop = i
                    later = [other for other, j in refs.items() if j > i]
                    for other in later:
                        del refs[other]
                    if later:  # most are about to end: let them, then cancel the rest
                        await anyio.to_thread.run_sync(
                            _cancel, ray, later, _GRACE, abandon_on_cancel=True
                        )
            if stop is not None and all(ended[:stop]):
                return
    finally:
        _cancel(ray, list(refs))  # cancelled, failed or stopped: nothing left running


def _cancel(ray: Any, refs: list[Any], grace: float = 0.0) -> None:
    """Cancel the tasks of ``refs`` that have not ended within ``grace`` seconds. One that
    has is left alone: Ray's core worker can abort the whole driver when a cancel races the
    reply of a task that is completing ("Tried to complete task that was not pending"; seen
    in CI on a failing fork, whose later branches were ending as they were cancelled), so
    the window is kept to the tasks still running after the grace."""
    if not refs:
        return
    _ended, running = ray.wait(refs, num_returns=len(refs), timeout=grace)
    for ref in running:
        ray.cancel(ref)


def unshippable(
    what: str, parts: Sequence[tuple[str, object]], exc: BaseException
) -> RayBranchError:
    """The error for a fan-out whose payload cannot be pickled, naming the part that fails."""
    culprit = what
    for label, part in parts:
        try:
            pickled(part)
        except Exception:
            culprit = label
            break
    return RayBranchError(
        f"{culprit} cannot be sent to a Ray worker: {type(exc).__name__}: {exc}. A Ray "
        "branch's functions, and everything they capture, must pickle (cloudpickle): "
        "create clients, locks, connections and open files inside the function (or with "
        "scope.run_local) instead of capturing them, or run it without runner="
    )


def put(ray: Any, value: object, what: str, parts: Sequence[tuple[str, object]]) -> Any:
    try:
        return ray.put(value)
    except Exception as exc:
        raise unshippable(what, parts, exc) from exc


def lost_task(where: str, exc: BaseException) -> RayBranchError:
    cause = getattr(exc, "cause", None)  # a RayTaskError: what the task raised
    said = f"{type(exc).__name__}: {exc}" if cause is None else f"{type(cause).__name__}: {cause}"
    return RayBranchError(
        f"{where} did not come back from Ray: {said}. If a worker could "
        "not import a module, make your code importable there (ray.init(runtime_env="
        "{'py_modules': [...]} or {'working_dir': ...})); if a worker died, raise "
        "ray_runner(max_retries=...) or give the task more memory"
    )


async def map_on_ray(
    runner: RayRunner,
    fn: Callable[[Any, Any], Awaitable[Any]],
    shared: object,
    items: Sequence[Any],
    limit: int | None,
    on_result: Callable[[int, Any], None],
    what: str,
) -> None:
    """Run ``fn(shared, item)`` for every item in Ray tasks, at most ``limit`` at a time;
    ``on_result(index, result)`` hears each one as it ends (in this process, on the loop).

    ``fn`` must be a module-level async function (it runs on an event loop of the
    worker's own). A task whose worker was lost is reported as a :class:`RayBranchError`
    result; nothing stops the others.
    """
    ray = import_ray()
    await ready(ray)
    shared_ref = put(ray, shared, what, [])
    remote = remote_task(ray, _remote_call, runner)

    def submit(i: int) -> Any:
        try:
            return remote.remote(fn, shared_ref, items[i])
        except Exception as exc:
            raise unshippable(f"input {i} of {what}", [], exc) from exc

    def done(i: int, value: Any, lost: BaseException | None) -> bool:
        on_result(i, lost_task(f"input {i} of {what}", lost) if lost is not None else value)
        return False

    await drive(ray, len(items), limit, submit, done)


def _remote_call(fn: Callable[[Any, Any], Awaitable[Any]], shared: Any, item: Any) -> Any:
    return in_worker(fn, shared, item)
