"""A misspelled keyword to a construction-time API says "did you mean ...?" (an
:class:`UnknownKeywordError`, a ``TypeError`` like Python's own), instead of Python's bare
"got an unexpected keyword argument"."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from trackway import (
    Agent,
    Executor,
    Scope,
    Sequence,
    TrackwayError,
    define_tool,
    flow_chart,
    mcp_client,
    mock,
)
from trackway.agent import AgentBuildError
from trackway.engine import UnknownKeywordError
from trackway.engine.core._keywords import checked_keywords


def stage(scope: Scope) -> None:
    scope["x"] = 1


def route(scope: Scope) -> str:
    return "a"


class Answer(BaseModel):
    text: str


def _tool(**extra: Any) -> Any:
    return define_tool(
        name="t",
        description="A tool.",
        input_schema={"type": "object"},
        execute=lambda args, ctx: "ok",
        **extra,
    )


def _agent_builder() -> Any:
    return Agent.create(provider=mock(replies=["x"]), model="m")


CASES: list[tuple[str, Callable[[], Any], str, str]] = [
    (
        "Agent.create",
        lambda: Agent.create(provider=mock(replies=["x"]), model="m", max_iteration=3),
        "max_iteration",
        "max_iterations",
    ),
    ("flow_chart", lambda: flow_chart("A", stage, idd="a"), "idd", "id"),
    ("define_tool", lambda: _tool(excute=None), "excute", "execute"),
    (
        "Executor",
        lambda: Executor(flow_chart("A", stage).build(), recorder=[]),
        "recorder",
        "recorders",
    ),
    (
        "ChartBuilder.then",
        lambda: flow_chart("A", stage).then("B", stage, retries=2),
        "retries",
        "retry",
    ),
    (
        "ChartBuilder.decider",
        lambda: flow_chart("A", stage).decider("D", route, descripton="d"),
        "descripton",
        "description",
    ),
    (
        "ChartBuilder.subflow",
        lambda: flow_chart("A", stage).subflow("S", flow_chart("B", stage).build(), inputs={}),
        "inputs",
        "input",
    ),
    (
        "ChartBuilder.build",
        lambda: flow_chart("A", stage).build(chartid="c"),
        "chartid",
        "chart_id",
    ),
    (
        "DeciderBuilder.branch",
        lambda: flow_chart("A", stage).decider("D", route).branch("a", "A2", stage, loopto="a"),
        "loopto",
        "loop_to",
    ),
    ("mcp_client", lambda: mcp_client(name="s", comand="python"), "comand", "command"),
    (
        "AgentBuilder.output_schema",
        lambda: _agent_builder().output_schema(Answer, retry=1),
        "retry",
        "retries",
    ),
]


@pytest.mark.parametrize(
    ("where", "call", "wrong", "meant"), CASES, ids=[case[0] for case in CASES]
)
def test_a_misspelled_keyword_names_the_one_meant(
    where: str, call: Callable[[], Any], wrong: str, meant: str
) -> None:
    with pytest.raises(UnknownKeywordError) as caught:
        call()
    assert str(caught.value) == (
        f"{where}() got an unknown keyword {wrong!r}; did you mean {meant!r}?"
    )
    assert isinstance(caught.value, TypeError) and isinstance(caught.value, TrackwayError)
    assert caught.value.keyword == wrong and meant in caught.value.accepted
    assert caught.value.__suppress_context__  # Python's own message is not repeated below


def test_with_no_near_spelling_the_accepted_keywords_are_listed() -> None:
    chart = flow_chart("A", stage).build()
    with pytest.raises(UnknownKeywordError) as caught:
        Executor(chart, zzz=1)
    message = str(caught.value)
    assert message.startswith(
        "Executor() got an unknown keyword 'zzz'; it takes chart, recorders, "
    )
    assert "max_iterations" in message and "allow_unsigned_checkpoints" in message
    assert "chart" in caught.value.accepted and "self" not in caught.value.accepted


def test_every_unknown_keyword_is_named() -> None:
    with pytest.raises(
        UnknownKeywordError, match=r"'idd'; did you mean 'id'\? \(also unknown: 'x'"
    ):
        flow_chart("A", stage, idd="a", x=1)


def test_a_type_error_raised_inside_passes_through_untouched() -> None:
    @checked_keywords
    def inner(*, value: int) -> None:
        raise TypeError("got an unexpected keyword argument 'value' (from deep inside)")

    with pytest.raises(TypeError, match="from deep inside") as caught:
        inner(value=1)
    assert not isinstance(caught.value, UnknownKeywordError)


def test_a_missing_argument_is_still_pythons_own_error() -> None:
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument") as caught:
        define_tool(name="t", description="d", input_schema={"type": "object"})  # type: ignore[call-arg]
    assert not isinstance(caught.value, UnknownKeywordError)


def test_signatures_and_docs_are_kept() -> None:
    assert "max_iterations" in inspect.signature(Agent.create).parameters
    assert "recorders" in inspect.signature(Executor).parameters
    assert "retry" in inspect.signature(flow_chart("A", stage).then).parameters
    assert define_tool.__doc__ and define_tool.__name__ == "define_tool"
    # right calls still work
    assert Executor(flow_chart("A", stage).build(), recorders=[]).run_sync().state["x"] == 1


def test_a_composition_option_names_the_one_meant() -> None:
    step = _agent_builder().build()
    with pytest.raises(
        AgentBuildError, match=r"got an unknown keyword 'stor'; did you mean 'store'\?"
    ):
        Sequence.create(stor=None).step("a", step).build()
