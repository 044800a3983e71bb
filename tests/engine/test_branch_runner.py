"""``runner=`` takes any :class:`BranchRunner`: the interface the chart declares and the run
calls (``ray_runner()`` is one). A runner that runs the branches here, through the engine's
own ``run_parallel``, gives the run an inline fork gives, and is called only when the node
runs afresh."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from trackway import Executor, Scope, flow_chart
from trackway.engine import Branch, BranchRunner, ChartBuildError, ray_runner


class _Here:
    """Runs the branches in this process and counts the calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    async def run_branches(
        self,
        strand: Any,
        pairs: Sequence[tuple[str, Branch]],
        base_path: str,
        seeds: Sequence[Mapping[str, Any]] | None,
        limit: int | None,
        chooser: str | None,
    ) -> list[Any]:
        from trackway.engine.run._parallel import run_parallel

        self.calls.append((base_path, tuple(key for key, _ in pairs)))
        return await run_parallel(strand, pairs, base_path, seeds, limit, chooser=chooser)


def _double(scope: Scope) -> None:
    scope["result"] = scope["item"] * 2


def _left(scope: Scope) -> None:
    scope["left"] = scope["x"] + 1


def _right(scope: Scope) -> None:
    scope["right"] = scope["x"] - 1


def _seed(scope: Scope) -> None:
    scope["items"] = [1, 2, 3]
    scope["x"] = 10


def _chart(runner: BranchRunner | None) -> Any:
    return (
        flow_chart("Seed", _seed)
        .fork("Both", {"l": _left, "r": _right}, runner=runner)
        .parallel_for_each(
            "Each", items="items", branch=_double, into="doubled", max_branches=5, runner=runner
        )
        .build()
    )


def _commits(result: Any) -> list[tuple[Any, ...]]:
    return [
        (c.seq, c.stage_path, c.frame, c.kind, c.outcome, c.writes)
        for c in result.snapshot.history()
    ]


def test_a_runner_of_its_own_runs_the_branches_as_inline_ones_run() -> None:
    here = _Here()
    assert isinstance(here, BranchRunner) and isinstance(ray_runner(), BranchRunner)
    inline = Executor(_chart(None)).run_sync({})
    ran = Executor(_chart(here)).run_sync({})
    assert ran.status == inline.status == "done"
    assert dict(ran.state) == dict(inline.state)
    assert ran.state["doubled"] == [2, 4, 6] and (ran.state["left"], ran.state["right"]) == (11, 9)
    assert _commits(ran) == _commits(inline)
    assert [keys for _, keys in here.calls] == [("l", "r"), ("0", "1", "2")]


def test_anything_else_is_refused_with_the_same_message() -> None:
    class _NoMethod:
        pass

    for wrong in ("ray", _NoMethod(), 3):
        with pytest.raises(ChartBuildError, match=r"runner= takes ray_runner\(\) .* or None, got"):
            flow_chart("S", _seed).fork("F", {"a": _left}, runner=wrong)  # type: ignore[arg-type]
