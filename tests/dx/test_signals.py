"""Mistakes that used to pass in silence now get a message that names the fix."""

from __future__ import annotations

import time
from typing import Any

import httpx2
import pytest

from trackway import Agent, Executor, Recorder, anthropic, decide, flow_chart, mock, openai
from trackway.agent import AgentBuildError, ProviderConfigError
from trackway.engine import ChartBuildError, ConfigurationError, RunTimeoutError, deferred


class _Misspelled(Recorder):
    def on_commmit(self, commit: Any) -> None: ...


class _Async(Recorder):
    async def on_commit(self, commit: Any) -> None: ...


class _Plain:  # no base class: only its hook names matter
    def on_stage_ended(self, event: Any) -> None: ...


CHART = flow_chart("A", lambda s: None).build()


def test_a_misspelled_hook_is_refused_with_the_closest_name() -> None:
    with pytest.raises(ConfigurationError) as caught:
        Executor(CHART, recorders=[_Misspelled()])
    text = str(caught.value)
    assert "on_commmit(), which is not a recorder hook" in text
    assert "did you mean on_commit?" in text and "on_run_start" in text
    with pytest.raises(ConfigurationError, match="did you mean on_stage_end"):
        Executor(CHART, recorders=[deferred(_Plain())])


def test_an_async_hook_is_refused_because_it_would_never_be_awaited() -> None:
    with pytest.raises(ConfigurationError, match="on_commit is async def, but hooks are called"):
        Executor(CHART, recorders=[_Async()])


def test_an_agent_refuses_a_bad_recorder_when_it_is_attached() -> None:
    builder = Agent.create(provider=mock(reply="hi"), model="m")
    with pytest.raises(ConfigurationError, match="did you mean on_commit"):
        builder.recorder(_Misspelled())
    agent = builder.build()
    with pytest.raises(ConfigurationError, match="async def"):
        agent.attach(_Async())


def test_a_mock_reply_with_an_unknown_key_is_refused_naming_it() -> None:
    with pytest.raises(ProviderConfigError) as caught:
        mock(replies=["ok", {"contnet": "hi"}])
    assert str(caught.value) == (
        "mock reply 1 has the key 'contnet' (did you mean 'content'?); the keys it takes are "
        "content, tool_calls, usage, stop_reason, thinking"
    )
    with pytest.raises(ProviderConfigError, match=r"tool call 0 has the key 'arguments'"):
        mock(replies=[{"tool_calls": [{"name": "w", "arguments": {}}]}])
    with pytest.raises(ProviderConfigError, match="is not a tool call"):
        mock(replies=[{"tool_calls": [{"args": {}}]}])
    # a respond= function is checked on each reply it makes
    agent = Agent.create(provider=mock(respond=lambda req: {"text": "x"}), model="m").build()
    with pytest.raises(ProviderConfigError, match="has the key 'text'"):
        agent.run_sync("hi")


@pytest.mark.parametrize("make", [openai, anthropic])
def test_a_transport_that_is_not_an_httpx2_async_one_is_refused(make: Any) -> None:
    with pytest.raises(ProviderConfigError) as caught:
        make("m", base_url="http://127.0.0.1:9/v1", api_key="k", transport=httpx2.HTTPTransport())
    assert "not an httpx2 async transport" in str(caught.value)
    assert "httpx2.MockTransport(handler)" in str(caught.value)


def test_a_sync_stage_that_overruns_the_timeout_ends_the_run_timed_out() -> None:
    chart = (
        flow_chart("Slow", lambda s: time.sleep(0.2), id="slow")
        .then("Next", lambda s: s.__setitem__("x", 1), id="next")
        .build()
    )
    with pytest.raises(RunTimeoutError) as caught:
        Executor(chart).run_sync(timeout=0.05)
    assert "after slow#0 (a sync stage cannot be cancelled while it runs" in str(caught.value)
    result = Executor(chart).run_sync(timeout=0.05, raise_on_error=False)
    assert result.status == "failed"
    assert [c.stage_path for c in result.snapshot.history()] == ["slow#0"]  # Next never ran
    assert Executor(chart).run_sync(timeout=5).state["x"] == 1


def test_forgetting_a_deciders_end_says_to_write_it() -> None:
    decider = (
        flow_chart("A", lambda s: None)
        .decider("Route", lambda s: decide(s, [], "x"))
        .branch("x", "X", lambda s: None)
    )
    with pytest.raises(AttributeError) as caught:
        decider.build()  # type: ignore[attr-defined]
    assert str(caught.value) == (
        "a decider has no .build(): its branches end with .end(), which returns to the chart; "
        "write .branch(...).branch(...).end().build(...)"
    )
    assert not hasattr(decider, "nothing_like_it")  # other names stay plain AttributeErrors


def test_forgetting_an_agents_build_says_to_call_it() -> None:
    builder = Agent.create(provider=mock(reply="hi"), model="m")
    with pytest.raises(AttributeError, match=r"returns a builder, which has no \.run_sync"):
        builder.run_sync("hi")  # type: ignore[attr-defined]
    with pytest.raises(AgentBuildError, match="Agent.create"):
        Agent(provider=mock(reply="hi"))


@pytest.mark.parametrize(
    ("build", "said"),
    [
        (lambda: flow_chart("A", lambda: None), "stage 'A': <lambda>.<locals>.<lambda>()"),
        (lambda: flow_chart("A", lambda s, t: None), "cannot be called with 1 positional"),
        (
            lambda: flow_chart("A", lambda s: None).then("B", lambda s: None, on_resume=print),
            None,  # a builtin: its signature cannot be checked, so it is not refused
        ),
        (
            lambda: flow_chart("A", lambda s: None).then(
                "B", lambda s: None, on_resume=lambda s: None
            ),
            "on_resume= of stage 'B': <lambda>.<locals>.<lambda>(s) cannot be called with 2",
        ),
    ],
)
def test_a_stage_function_with_the_wrong_signature_is_refused_when_declared(
    build: Any, said: str | None
) -> None:
    if said is None:
        build()
        return
    with pytest.raises(ChartBuildError) as caught:
        build()
    assert said in str(caught.value)
