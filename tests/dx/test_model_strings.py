"""``Agent.create(model="openai:...")`` picks the provider from the prefix and reads the
environment, as the vendors' SDKs do — checked against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.local_http import Handler, base_url, serving
from trackway import Agent, receipts
from trackway.agent import AgentBuildError, AnthropicProvider, OpenAIProvider

SEEN: list[dict[str, Any]] = []


class _Chat(Handler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        SEEN.append({"path": self.path, "auth": self.headers.get("authorization"), **body})
        answer = {
            "choices": [{"message": {"content": "hello from 127.0.0.1"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 4},
        }
        self.answer(200, json.dumps(answer).encode())


@pytest.fixture
def server() -> Iterator[str]:
    SEEN.clear()
    with serving(_Chat) as httpd:
        yield base_url(httpd)


def test_a_model_string_reads_the_key_and_base_url_from_the_environment(
    server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    agent = Agent.create(model="openai:gpt-4o-mini", stream=False).build()
    assert agent.run_sync("hi") == "hello from 127.0.0.1"
    (call,) = SEEN
    assert call["path"] == "/v1/chat/completions" and call["model"] == "gpt-4o-mini"
    assert call["auth"] == "Bearer sk-from-env"  # both from the environment: sent together
    assert receipts(agent)[0]["via"]["base_url"] == server


def test_without_a_base_url_the_vendors_own_host_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    openai_agent = Agent.create(model="openai:gpt-4o-mini").build()
    assert isinstance(openai_agent._cfg.provider, OpenAIProvider)
    assert openai_agent._cfg.provider.base_url == "https://api.openai.com/v1"
    claude = Agent.create(model="anthropic:claude-sonnet-4").build()
    assert isinstance(claude._cfg.provider, AnthropicProvider)
    assert claude._cfg.model == "claude-sonnet-4"


@pytest.mark.parametrize("model", ["gpt-4o", "azure:gpt-4o", "openai:"])
def test_a_model_without_a_known_prefix_says_what_to_write(model: str) -> None:
    with pytest.raises(AgentBuildError) as caught:
        Agent.create(model=model)
    assert "'vendor:model'" in str(caught.value) and "provider=openai(...)" in str(caught.value)


def test_no_provider_and_no_model_is_refused() -> None:
    with pytest.raises(AgentBuildError, match="needs a model"):
        Agent.create()
