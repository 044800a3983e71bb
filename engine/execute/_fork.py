"""Branching from history: a new run that continues from the state after commit k of another.

``Executor.fork_from(source, k, changes)`` makes a new run (a new id) whose log starts with a
copy of the source run's first ``k`` commits, followed by one ``forked-from`` commit that says where
it came from (``detail={"forked_from": {"run_id": ..., "k": k}}``) and holds ``changes`` as
its ``set`` writes. The walk then goes through the chart from its start the way recovery
does (``_recovery``): every stage, decision, merge and subflow mapping the copied log holds
is *taken* from it, never run again, and the first one it does not hold runs live — so the
new run continues from commit k's position (inside subflows, loops, parallel branches and
pauses alike), with commit k's state plus ``changes``. Execution indices come out as they
were, so the copied commits keep their stage paths and the new ones follow on.

This is not a re-execution from a checkpoint (LangGraph's time travel replays the graph
from a saved checkpoint and runs its nodes again): nothing before k runs again, so a side
effect before k is not repeated, and a decision made before k stands even if ``changes``
would have changed it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, Literal

from ..core._commit import Commit, Write, log_writes
from ..core._detail import CommitDetail
from ..core._errors import ChartMismatchError, ExecutorUsageError, OutOfRangeError, StateValueError
from ..core._paths import new_run_id
from ..core._snapshot import Snapshot
from ..core._values import encode_entries
from ._recovery import replay_index

if TYPE_CHECKING:
    from ..run._context import RunContext
    from ._executor import Executor

__all__ = ["FORK_KIND", "fork_run"]

FORK_KIND: Final[Literal["forked-from"]] = "forked-from"


def fork_run(
    executor: Executor, source: Snapshot | str, k: int, changes: Mapping[str, Any] | None
) -> tuple[RunContext, Commit]:
    """The new run's context (its log: the source's first ``k`` commits, under the new run
    id; a replay index over them) and the ``forked-from`` commit the run opens with."""
    snapshot = _source(executor, source)
    if snapshot.chart_id != executor.chart.id:
        raise ChartMismatchError(
            f"run {snapshot.run_id!r} was made by chart {snapshot.chart_id!r}, not "
            f"{executor.chart.id!r}: fork it with an executor of the chart that made it"
        )
    n = len(snapshot)
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= n:
        raise OutOfRangeError(
            f"fork_from(..., k={k!r}): run {snapshot.run_id!r} has {n} commits, so k must be an "
            f"int from 0 (its input) to {n} (after its last commit)"
        )
    prefix = snapshot.commits[:k]
    failed = next((c for c in prefix if c.outcome == "error"), None)
    if failed is not None:
        raise ExecutorUsageError(
            f"fork_from(..., k={k}): commit {failed.seq} ({failed.stage_path}) failed, and a "
            "fork continues from the commits before k as they are; fork at "
            f"k={failed.seq - 1} to run that stage again"
        )
    run_id = new_run_id()
    copied = [c._replace(run_id=run_id) for c in prefix]
    base = Snapshot.from_commits(
        run_id=run_id,
        chart_id=snapshot.chart_id,
        status="running",
        initial=_plain_initial(snapshot),
        commits=copied,
    )
    run = executor._continued(run_id, base)
    # an earlier forked-from commit is state, not a stage: the walk never reaches it
    run.replay = replay_index(tuple(c for c in copied if c.kind != FORK_KIND))
    return run, _fork_commit(run, snapshot.run_id, k, changes)


def _source(executor: Executor, source: Snapshot | str) -> Snapshot:
    if isinstance(source, Snapshot):
        return source
    if not isinstance(source, str):
        raise ExecutorUsageError(
            f"fork_from takes a Snapshot or a run id (str), got {type(source).__name__}"
        )
    session = executor._session
    if session is None:
        raise ExecutorUsageError(
            f"fork_from({source!r}, ...) loads the run from the executor's store, and this "
            "executor has none: use Executor(chart, store=<the run's store>), or pass the "
            "run's Snapshot (RunResult.snapshot, or store.load(run_id))"
        )
    if executor.redact is not None:
        raise ExecutorUsageError(
            "fork_from(run_id) cannot continue from a run under a redaction policy: the store "
            "holds its redacted values only. Pass the Snapshot you hold instead."
        )
    return session.call(lambda s: s.load(source), f"load run {source!r}")


def _plain_initial(snapshot: Snapshot) -> dict[str, Any]:
    import orjson

    return {key: orjson.loads(data) for key, data in snapshot._initial.items()}


def _fork_commit(run: RunContext, parent: str, k: int, changes: Mapping[str, Any] | None) -> Commit:
    path = f"{FORK_KIND}@{k}"
    if changes is not None and not isinstance(changes, Mapping):
        raise StateValueError(
            f"fork_from(changes=...) takes a dict of state keys to set, got "
            f"{type(changes).__name__}",
            key="<changes>",
            stage_path=None,
        )
    validator = run.validator(run.chart)
    writes: list[Write] = []
    for key, data, owned in encode_entries(changes or {}, "fork_from(changes=...)", path):
        if validator is not None:
            validator.check_set(key, data, path)
        writes.append(("set", key, data, owned))
    detail: CommitDetail = {"forked_from": {"run_id": parent, "k": k}}
    now = time.time()
    return Commit(
        len(run.log) + 1, run.run_id, path, FORK_KIND, "Forked from", FORK_KIND, "", now, now,
        log_writes(tuple(writes)), (), "ok", None, detail,
    )  # fmt: skip
