"""One exception tree: every error trackway raises is a TrackwayError, shown publicly."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import httpx2
import pytest

import trackway
from trackway import Agent, ProviderError, RunError, StageError, TrackwayError, openai
from trackway.agent import (
    AgentBuildError,
    AgentError,
    MockExhaustedError,
    ProviderAuthError,
    ProviderConfigError,
)
from trackway.engine import (
    CheckpointError,
    CorruptCheckpointError,
    DocumentError,
    StoreError,
    StoreWriteError,
    TrackwayWarning,
    UnknownRunError,
)
from trackway.recorders import Narrative
from trackway.tools import ToolDefinitionError, ToolError

LAYERS = ("trackway.engine", "trackway.tools", "trackway.agent")

ERRORS = [
    obj
    for layer in map(importlib.import_module, LAYERS)
    for name in layer.__all__
    if inspect.isclass(obj := getattr(layer, name))
    and issubclass(obj, BaseException)
    and not issubclass(obj, Warning)
]


def test_the_one_warning_category_is_documented():
    assert issubclass(TrackwayWarning, UserWarning)
    text = (Path(__file__).resolve().parent.parent / "docs" / "guide" / "errors.md").read_text()
    assert "TrackwayWarning" in text


def test_every_exported_exception_is_a_trackway_error():
    assert len(ERRORS) > 40
    for error in ERRORS:
        assert issubclass(error, TrackwayError), error


def test_the_subtrees():
    assert issubclass(ToolDefinitionError, ToolError)
    assert issubclass(AgentBuildError, AgentError)
    assert issubclass(trackway.ReplayDivergence, AgentError)
    assert issubclass(MockExhaustedError, ProviderError)
    assert issubclass(ProviderConfigError, ProviderError)
    assert issubclass(UnknownRunError, StoreError)
    assert issubclass(StoreWriteError, StoreError) and issubclass(StoreWriteError, RunError)
    assert issubclass(CorruptCheckpointError, CheckpointError)
    assert issubclass(CorruptCheckpointError, DocumentError)


def test_public_classes_show_their_public_module():
    # the top-level names under trackway, the rest under the subpackage that exports them
    for layer in map(importlib.import_module, LAYERS):
        for name in layer.__all__:
            obj = getattr(layer, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                home = "trackway" if name in trackway.__all__ else layer.__name__
                assert obj.__module__ == home, name
    assert repr(StageError) == "<class 'trackway.StageError'>"
    assert repr(CheckpointError) == "<class 'trackway.engine.CheckpointError'>"
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
