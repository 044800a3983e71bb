"""Every public async method of ``Agent``, ``Executor`` and the compositions has a
``<name>_sync`` twin with the same parameters, so a caller without an event loop finds the
same API (``agent.run_result_sync(...)`` as ``await agent.run_result(...)``).

The check introspects the classes: a new async method without a twin fails it.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

import trackway.agent as agent_api
from tests.backends import run_async
from trackway import Agent, Executor, LLMCall, Loop, Parallel, Sequence, mock
from trackway.agent import AgentResult, Composition, Conditional, NoConversationError
from trackway.agent.compose import _composition
from trackway.engine import ExecutorUsageError

CLASSES: list[type] = [Agent, Executor, Composition, Sequence, Parallel, Conditional, Loop, LLMCall]

NO_TWIN = {
    "stream": (
        "a plain method returning an async context manager of live events, not an async "
        "method; a caller without an event loop gets the same events as they happen from "
        "agent.on(...) listeners (recorders' on_commit for an Executor) around run_sync"
    ),
    "parse_output_async": (
        "already the async twin of parse_output, the sync parse (which never engages the "
        "fallback chain, as the seed keeps it); a caller without an event loop that wants the "
        "chain runs anyio.run(agent.parse_output_async, raw)"
    ),
}
"""Methods that hand out something asynchronous yet have no ``_sync`` twin, and why."""


def _hands_out_async(member: Any) -> bool:
    """Whether ``member`` is async: an ``async def``, an async generator, or a plain method
    whose declared result is awaited or iterated with ``async for``/``async with``."""
    if inspect.iscoroutinefunction(member) or inspect.isasyncgenfunction(member):
        return True
    if not inspect.isfunction(member):
        return False
    try:
        result = typing.get_type_hints(member).get("return")
    except Exception:  # an annotation only a type checker can resolve: read it as written
        result = inspect.signature(member).return_annotation
    origin = typing.get_origin(result) or result
    return isinstance(origin, type) and any(
        hasattr(origin, hook) for hook in ("__aiter__", "__aenter__", "__await__")
    )


def _async_methods(cls: type) -> dict[str, Any]:
    return {
        name: member
        for name, member in inspect.getmembers(cls)
        if not name.startswith("_") and _hands_out_async(member)
    }


def test_the_composition_classes_are_all_listed() -> None:
    module_classes = {
        obj
        for name, obj in vars(_composition).items()
        if inspect.isclass(obj) and obj.__module__ == "trackway" and name in _composition.__all__
    }
    assert module_classes <= set(CLASSES)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_every_public_async_method_has_a_sync_twin_with_its_parameters(cls: type) -> None:
    missing = []
    for name, method in _async_methods(cls).items():
        if name in NO_TWIN:
            assert not hasattr(cls, f"{name}_sync"), f"{name} has a twin: drop it from NO_TWIN"
            continue
        twin = getattr(cls, f"{name}_sync", None)
        if twin is None:
            missing.append(name)
            continue
        assert not inspect.iscoroutinefunction(twin), f"{cls.__name__}.{name}_sync is async"
        ours = list(inspect.signature(twin).parameters.values())
        theirs = list(inspect.signature(method).parameters.values())
        assert [(p.name, p.kind, p.default) for p in ours] == [
            (p.name, p.kind, p.default) for p in theirs
        ], f"{cls.__name__}.{name}_sync takes other parameters than {name}"
        assert twin.__doc__, f"{cls.__name__}.{name}_sync has no docstring"
    assert missing == [], f"{cls.__name__} has async methods without a _sync twin: {missing}"


def test_the_listed_exceptions_exist_and_are_asynchronous() -> None:
    for name in NO_TWIN:
        assert any(name in _async_methods(cls) for cls in CLASSES), name


def test_the_check_sees_the_methods_it_is_meant_to() -> None:
    assert {"run", "run_result", "run_typed", "follow_up", "stream"} <= set(_async_methods(Agent))
    assert {"run", "resume", "recover", "fork_from", "stream"} <= set(_async_methods(Executor))


class Weather(BaseModel):
    city: str
    celsius: int


def test_run_result_sync_returns_the_agent_result() -> None:
    agent = Agent.create(provider=mock(replies=["Sunny."]), model="m").build()
    result = agent.run_result_sync("Weather?")
    assert isinstance(result, AgentResult) and result.output == "Sunny."


def test_follow_up_sync_continues_the_last_conversation() -> None:
    provider = mock(replies=["Paris is in France.", "About 2 million."])
    agent = Agent.create(provider=provider, model="m").build()
    with pytest.raises(NoConversationError):
        agent.follow_up_sync("Too early")
    agent.run_sync("Where is Paris?")
    assert agent.follow_up_sync("How many live there?") == "About 2 million."
    assert [m.content for m in provider.requests[1].messages] == [
        "Where is Paris?",
        "Paris is in France.",
        "How many live there?",
    ]


def test_run_typed_sync_parses_the_answer() -> None:
    provider = mock(replies=['{"city": "Paris", "celsius": 22}'])
    agent = Agent.create(provider=provider, model="m").output_schema(Weather).build()
    assert agent.run_typed_sync("Weather?") == Weather(city="Paris", celsius=22)


def test_a_composition_has_them_too() -> None:
    step = Agent.create(provider=mock(replies=["one", "two"]), model="m").build()
    chain = Sequence.create().step("first", step).build()
    assert chain.run_result_sync("go").output == "one"
    assert chain.follow_up_sync("again") == "two"


@pytest.mark.parametrize(
    ("call", "twin"),
    [
        (lambda agent: agent.run_result_sync("x"), "await agent.run_result(...)"),
        (lambda agent: agent.follow_up_sync("x"), "await agent.follow_up(...)"),
        (lambda agent: agent.run_typed_sync("x"), "await agent.run_typed(...)"),
    ],
    ids=["run_result", "follow_up", "run_typed"],
)
def test_inside_an_event_loop_each_names_its_async_twin(
    call: Callable[[Agent], Any], twin: str
) -> None:
    agent = Agent.create(provider=mock(replies=["x"]), model="m").build()

    async def inside() -> None:
        with pytest.raises(ExecutorUsageError, match=re.escape(twin)):
            call(agent)

    run_async(inside)


def _parameters(fn: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


FUNCTION_TWINS = [
    (agent_api.run_many_sync, agent_api.run_many),
    (agent_api.replay, agent_api.replay_async),
]
"""Module-level sync twins and their async originals: written out, not generated, so each
keeps an explicit signature a reader and a type checker see."""


@pytest.mark.parametrize(
    ("twin", "original"), FUNCTION_TWINS, ids=lambda fn: getattr(fn, "__name__", "")
)
def test_each_sync_function_takes_its_async_originals_parameters(
    twin: Callable[..., Any], original: Callable[..., Any]
) -> None:
    assert inspect.iscoroutinefunction(original) and not inspect.iscoroutinefunction(twin)
    assert _parameters(twin) == _parameters(original)
    assert inspect.signature(twin).return_annotation == (
        inspect.signature(original).return_annotation
    )


def test_stream_takes_runs_parameters_and_its_buffer() -> None:
    run = _parameters(Agent.run)
    stream = _parameters(Agent.stream)
    assert stream[: len(run)] == run
    assert [name for name, _, _ in stream[len(run) :]] == ["buffer"]


def test_the_parameter_check_sees_a_difference() -> None:
    def original(a: int, *, b: int = 1) -> None: ...

    def drifted(a: int, *, b: int = 2) -> None: ...

    assert _parameters(drifted) != _parameters(original)
