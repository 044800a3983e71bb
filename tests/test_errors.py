"""One exception tree: every error trackway raises is a TrackwayError, shown publicly."""

from __future__ import annotations

import inspect
from pathlib import Path

import httpx2
import pytest

import trackway
from trackway import (
    Agent,
    AgentError,
    ProviderAuthError,
    ProviderError,
    RunError,
    StageError,
    StoreError,
    StoreWriteError,
    ToolError,
    TrackwayError,
    UnknownRunError,
    openai,
)
from trackway.recorders import Narrative

ERRORS = [
    obj
    for name in trackway.__all__
    if inspect.isclass(obj := getattr(trackway, name))
    and issubclass(obj, BaseException)
    and not issubclass(obj, Warning)
]


def test_the_one_warning_category_is_documented():
    assert issubclass(trackway.TrackwayWarning, UserWarning)
    text = (Path(__file__).resolve().parent.parent / "docs" / "guide" / "errors.md").read_text()
    assert "TrackwayWarning" in text


def test_every_exported_exception_is_a_trackway_error():
    assert len(ERRORS) > 40
    for error in ERRORS:
        assert issubclass(error, TrackwayError), error


def test_the_subtrees():
    assert issubclass(trackway.ToolDefinitionError, ToolError)
    assert issubclass(trackway.AgentBuildError, AgentError)
    assert issubclass(trackway.ReplayDivergence, AgentError)
    assert issubclass(trackway.MockExhaustedError, ProviderError)
    assert issubclass(trackway.ProviderConfigError, ProviderError)
    assert issubclass(UnknownRunError, StoreError)
    assert issubclass(StoreWriteError, StoreError) and issubclass(StoreWriteError, RunError)
    assert issubclass(trackway.CorruptCheckpointError, trackway.CheckpointError)
    assert issubclass(trackway.CorruptCheckpointError, trackway.DocumentError)


def test_public_classes_show_their_public_module():
    for name in trackway.__all__:
        obj = getattr(trackway, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert obj.__module__ == "trackway", name
    assert repr(StageError) == "<class 'trackway.StageError'>"
    assert Narrative.__module__ == "trackway.recorders"


def test_the_exception_tree_is_drawn_in_the_docs():
    text = (Path(__file__).resolve().parent.parent / "docs" / "guide" / "errors.md").read_text()
    for error in ERRORS:
        assert error.__name__ in text, error.__name__


def test_a_provider_failure_is_caught_as_itself_around_agent_run():
    def server(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(401, json={"error": {"message": "bad key"}})

    provider = openai("m", api_key="k" * 12, transport=httpx2.MockTransport(server))
    agent = Agent.create(provider=provider, model="m").build()
    with pytest.raises(ProviderError) as info:
        agent.run_sync("hi")
    assert isinstance(info.value, ProviderAuthError)
    assert isinstance(info.value.stage_error, StageError)
    assert info.value.stage_error.stage_path == "call-llm#1"
    assert info.value.stage_error.snapshot is not None
