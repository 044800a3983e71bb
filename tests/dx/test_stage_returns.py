"""A stage that returns a mapping writes it (LangGraph's habit); any other value is refused."""

from __future__ import annotations

from typing import Any

import pytest

from trackway import Executor, StageError, flow_chart
from trackway.recorders import narrative

from ..backends import run_async


def test_a_returned_mapping_is_that_stages_writes_in_one_commit() -> None:
    def assess(scope: Any) -> dict[str, Any]:
        return {"risk": "high" if scope["amount"] > 1000 else "low", "checked": True}

    story = narrative()
    result = Executor(flow_chart("Assess", assess).build(), recorders=[story]).run_sync(
        {"amount": 1500}
    )
    assert result.state["risk"] == "high" and result.state["checked"] is True
    (commit,) = result.snapshot.history()
    assert [(op.kind, op.key) for op in commit.ops] == [("set", "risk"), ("set", "checked")]
    assert commit.reads == ("amount",)
    assert story.text() == (
        'Stage 1: Assess — read amount = 1500; wrote risk = "high", checked = true'
    )


def test_scope_writes_and_a_returned_mapping_share_the_commit_and_the_last_wins() -> None:
    def stage(scope: Any) -> dict[str, Any]:
        scope["a"] = 1
        scope.append("log", "x")
        return {"a": 2}

    result = Executor(flow_chart("S", stage).build()).run_sync()
    assert result.state["a"] == 2 and result.state["log"] == ["x"]
    assert len(result.snapshot) == 1


def test_an_async_stage_may_return_a_mapping() -> None:
    async def stage(scope: Any) -> dict[str, Any]:
        return {"done": True}

    async def go() -> Any:
        return await Executor(flow_chart("S", stage).build()).run()

    assert run_async(go).state["done"] is True


@pytest.mark.parametrize(
    ("returned", "said"),
    [
        (5, "returned int 5; a stage writes state with scope[key] = value"),
        ("approve", "returned str 'approve'"),
        ([1, 2], "returned list [1, 2]"),
    ],
)
def test_any_other_returned_value_fails_the_stage_and_says_the_fix(
    returned: Any, said: str
) -> None:
    chart = flow_chart("Route", lambda s: returned, id="route").build()
    with pytest.raises(StageError) as caught:
        Executor(chart).run_sync()
    assert said in str(caught.value)
    assert "return {'key': value}" in str(caught.value)
    assert ".decider()" in str(caught.value)  # a returned branch key hints at a decider
    failed = Executor(chart).run_sync(raise_on_error=False)
    assert failed.snapshot.history()[0].error.type == "StageContractError"


def test_a_mapping_with_a_key_that_is_not_a_string_is_refused() -> None:
    chart = flow_chart("S", lambda s: {1: "x"}).build()
    failed = Executor(chart).run_sync(raise_on_error=False)
    assert failed.status == "failed"
    assert "returned a mapping with the key 1; state keys are strings" in str(failed.error)
