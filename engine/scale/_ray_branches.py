"""A fork's or a ``parallel_for_each``'s branches as Ray tasks (``runner=ray_runner()``).

Each branch runs in a Ray task, on a sub-executor of its own (the branch's frame over a copy
of the state it reads through to), and returns its commits. They come back into this process
and enter the log exactly where the branch's buffered commits would have: in declaration
order, numbered by the parent, merged by the node's policy. So the log, the state and
everything built from them (snapshots, ``served_at``) are those of the same run on one
machine; only timestamps differ.

The branch's recorder events (stage start and end, reads, writes, emits, decisions, errors,
subflows) are caught in the worker, for the hooks the run's recorders define, and come back
with the commits: they are heard by the run's recorders when the branch's task returns, in
declaration order, before the merge's ``on_commit`` (on one machine they are heard live).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from time import monotonic
from typing import TYPE_CHECKING, Any, NamedTuple

from ..chart._chart import Branch, FlowChart
from ..core._commit import Commit
from ..core._detail import Control
from ..core._paths import join
from ..core._state import StateStore
from ..core._typed import StateValidator
from ..observe._redact import Redactor
from ..run._context import Frame, RunContext, Strand
from ..run._merge import BranchResult
from ..run._recorder import HOOKS
from ..run._stage import Paused
from ._ray_runner import (
    RayBranchError,
    RayRunner,
    drive,
    import_ray,
    in_worker,
    lost_task,
    pickled,
    put,
    ready,
    remote_task,
    unshippable,
)

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["run_on_ray"]


@dataclass(frozen=True)
class _Shared:
    """What every branch of one fan-out needs (put in Ray's object store once)."""

    run_id: str
    base_path: str
    branches: tuple[Branch, ...]
    control: Control | None
    chooser: str | None
    model: type[BaseModel] | None
    max_iterations: int
    redactor: Redactor | None
    hooks: tuple[str, ...] = ()  # the recorder hooks the run's recorders define


class _Task(NamedTuple):
    position: int  # which of _Shared.branches
    key: str
    seed: Mapping[str, Any] | None
    time_left: float | None  # of the run's timeout=, when it has one


class _Raised(NamedTuple):
    """An exception as it can cross to another process: its class, args and attributes."""

    cls: type[BaseException]
    args: tuple[Any, ...]
    state: dict[str, Any]


class _Outcome(NamedTuple):
    commits: list[Commit]
    error: _Raised | None
    cause: _Raised | None
    paused_at: str | None
    heard: tuple[tuple[str, Any], ...] = ()  # (hook, event): what the branch's recorders heard


_BRANCH_HOOKS = tuple(h for h in HOOKS if h not in ("on_run_start", "on_run_end", "on_commit"))
"""The hooks a branch fires (its commits are told at the merge, in this process)."""


def _catcher(hooks: Sequence[str], heard: list[tuple[str, Any]]) -> object:
    """A recorder defining exactly ``hooks``, each keeping ``(hook, event)`` in ``heard``
    (a hook it did not define is one the worker never makes an event for)."""
    methods = {h: (lambda self, event, h=h: heard.append((h, event))) for h in hooks}
    return type("RayBranchCatcher", (), {"name": "ray-branch", **methods})()


def _shippable(heard: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """The events that pickle (an emitted value that does not is left out, never the
    branch's commits with it)."""
    try:
        pickled(heard)
        return heard
    except Exception:
        kept = []
        for item in heard:
            try:
                pickled(item)
            except Exception:
                continue
            kept.append(item)
        return kept


def _pack(exc: BaseException) -> _Raised:
    state = dict(getattr(exc, "__dict__", {}))
    for candidate in (
        _Raised(type(exc), exc.args, state),
        _Raised(type(exc), exc.args, {}),
        _Raised(RuntimeError, (f"{type(exc).__name__}: {exc}",), {}),
    ):
        try:
            pickled(candidate)
        except Exception:
            continue
        return candidate
    raise AssertionError("unreachable: a RuntimeError of a str always pickles")


def _unpack(raised: _Raised) -> BaseException:
    try:
        exc = raised.cls.__new__(raised.cls, *raised.args)
        exc.args = raised.args
        if raised.state:
            exc.__dict__.update(raised.state)
    except Exception:
        name = getattr(raised.cls, "__name__", "Exception")
        return RuntimeError(f"{name}: {', '.join(map(str, raised.args))}")
    return exc


_PLACEHOLDER: FlowChart | None = None
_VALIDATORS: dict[type[Any], StateValidator] = {}


def _remote_branch(shared: _Shared, parent: Mapping[str, Any], task: _Task) -> _Outcome:
    """In the Ray worker: run one branch on the worker's event loop."""
    outcome: _Outcome = in_worker(_branch_here, shared, parent, task)
    return outcome


async def _branch_here(shared: _Shared, parent: Mapping[str, Any], task: _Task) -> _Outcome:
    """One branch as ``run_parallel`` runs it, on a run context that holds what it reads:
    the parent's state, the branch's seed, the validator, the deadline, the redactor."""
    from ..run._parallel import _run_branch

    global _PLACEHOLDER
    if _PLACEHOLDER is None:  # the branch never reads its run's chart
        _PLACEHOLDER = FlowChart(id="ray-branch", name="ray branch", root="", nodes={})
    heard: list[tuple[str, Any]] = []
    catcher = [_catcher(shared.hooks, heard)] if shared.hooks else []
    run = RunContext(shared.run_id, _PLACEHOLDER, catcher, shared.max_iterations, shared.redactor)
    if task.time_left is not None:
        run.deadline = monotonic() + task.time_left
    for key, value in parent.items():
        run.root.seed(key, value)
    validator = None
    if shared.model is not None:
        validator = _VALIDATORS.get(shared.model)
        if validator is None:
            validator = _VALIDATORS[shared.model] = StateValidator(shared.model)
    outer = Strand(run, Frame(run, "", run.root, None), "", [0], validator)
    outer.control = shared.control
    store = StateStore(parent=run.root)
    for key, value in (task.seed or {}).items():
        store.seed(key, value)
    frame = Frame(run, join(f"{shared.base_path}/", task.key), store, [])
    branch = shared.branches[task.position]
    error = cause = None
    paused_at = None
    try:
        await _run_branch(
            outer, frame, task.key, branch, shared.base_path, [0], None, shared.chooser
        )
    except Paused as p:
        paused_at = p.path
    except Exception as exc:
        error = _pack(exc)
        cause = None if exc.__cause__ is None else _pack(exc.__cause__)
    assert frame.buffer is not None
    return _Outcome(frame.buffer, error, cause, paused_at, tuple(_shippable(heard)))


async def run_on_ray(
    runner: RayRunner,
    strand: Strand,
    pairs: Sequence[tuple[str, Branch]],
    base_path: str,
    seeds: Sequence[Mapping[str, Any]] | None,
    limit: int | None,
    chooser: str | None,
) -> list[BranchResult]:
    """``run_parallel`` with each branch a Ray task; the same results and the same log.

    Branches end in any order; their commits are adopted in declaration order. The first
    failing branch *in declaration order* decides: later branches are cancelled (or never
    start), earlier ones finish, and the log holds the commits of every branch up to and
    including the failed one — as when plain ``def`` branches run one after another here.
    """
    ray = import_ray()
    await ready(ray)
    run = strand.run
    branches: list[Branch] = []
    position: list[int] = []
    for _, branch in pairs:
        if not any(b is branch for b in branches):
            branches.append(branch)
        position.append(next(i for i, b in enumerate(branches) if b is branch))
    validator = strand.validator
    hooks = tuple(h for h in _BRANCH_HOOKS if run.recorders.defines(h))
    shared = _Shared(
        run.run_id, base_path, tuple(branches), strand.control, chooser,
        None if validator is None else validator.model, run.max_iterations, run.redactor,
        hooks,
    )  # fmt: skip
    parts = [(f"branch {b.key!r} at {base_path!r} ({_label(b)})", b) for b in branches]
    shared_ref = put(ray, shared, f"the fan-out at {base_path!r}", parts)
    parent = strand.frame.store.current()
    parent_ref = put(ray, parent, f"the state the branches at {base_path!r} read", [])
    remote = remote_task(ray, _remote_branch, runner)
    outcomes: list[_Outcome | None] = [None] * len(pairs)

    def submit(i: int) -> Any:
        left = None if run.deadline is None else max(0.0, run.deadline - monotonic())
        seed = None if seeds is None else seeds[i]
        task = _Task(position[i], pairs[i][0], seed, left)
        try:
            return remote.remote(shared_ref, parent_ref, task)
        except Exception as exc:
            key = pairs[i][0]
            raise unshippable(f"the seed of branch {key!r}", [], exc) from exc

    def done(i: int, value: Any, lost: BaseException | None) -> bool:
        if lost is not None:
            err = lost_task(f"branch {pairs[i][0]!r} at {base_path!r}", lost)
            value = _Outcome([], _pack(err), None, None)
        outcomes[i] = value
        return bool(value.error is not None or value.paused_at is not None)

    frames: list[Frame] = []
    for i, (key, _) in enumerate(pairs):
        store = StateStore(parent=strand.frame.store)
        for k, v in (seeds[i] if seeds is not None else {}).items():
            store.seed(k, v)
        frames.append(Frame(run, join(f"{base_path}/", key), store, []))
    try:
        await drive(ray, len(pairs), limit, submit, done)
    finally:
        for frame, outcome in zip(frames, outcomes, strict=True):
            if outcome is None:
                continue
            for hook, event in outcome.heard:  # redacted where they were made
                run.recorders.deliver(hook, event._replace(seq=len(run.log)))
            for commit in outcome.commits:
                if commit.frame == frame.name:  # what the branch's own frame holds
                    frame.local_seq += 1
                    if commit.writes:
                        frame.store.apply(frame.local_seq, commit.writes)
            strand.frame.adopt(outcome.commits)
            if outcome.error is not None or outcome.paused_at is not None:
                break  # the first failure in declaration order: nothing after it counts
    for (key, _), outcome in zip(pairs, outcomes, strict=True):
        if outcome is None:
            continue
        if outcome.paused_at is not None:
            raise RayBranchError(
                f"branch {key!r} at {base_path!r} paused at {outcome.paused_at!r} under "
                "runner=ray_runner(): a Ray branch cannot wait for an answer (its run lives "
                "on another machine). Pause in a stage before the fork, or run this fork "
                "without runner=",
                stage_path=outcome.paused_at,
            )
        if outcome.error is not None:
            err = _unpack(outcome.error)
            if outcome.cause is not None:
                raise err from _unpack(outcome.cause)
            raise err
    return [
        BranchResult(key, frame.name, frame.store, outcome.commits if outcome else [])
        for (key, _), frame, outcome in zip(pairs, frames, outcomes, strict=True)
    ]


def _label(branch: Branch) -> str:
    if branch.chart is not None:
        return f"chart {branch.chart.id!r}"
    fn = branch.fn
    return f"function {getattr(fn, '__qualname__', None) or repr(fn)}"
