"""Error classes follow the vendor's error body, not the status code alone.

The bodies are the ones real servers sent (llama.cpp's server through llama-cpp-python, the
litellm proxy in front of it, OpenAI, Anthropic); the status codes are theirs too.
"""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from tests.backends import run_async
from trackway.agent import (
    ContextLengthError,
    LLMRequest,
    Message,
    ModelNotFoundError,
    ProviderAuthError,
    ProviderError,
    ProviderRateLimitError,
    ProviderResponseError,
    anthropic,
    openai,
)
from trackway.agent.providers._http_errors import classify

from .wire_server import Server

HELLO = LLMRequest(model="m", messages=(Message(role="user", content="hi"),))
LLAMA_OVERFLOW = {
    "error": {
        "message": "This model's maximum context length is 2048 tokens. However, you requested "
        "3015 tokens (3010 in the messages, 5 in the completion). Please reduce the length of "
        "the messages or completion.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}
LITELLM_BAD_MODEL = {
    "type": "error",
    "error": {
        "type": "invalid_request_error",
        "message": "anthropic_messages: Invalid model name passed in model=nope. Call "
        "`/v1/models` to view available models for your key.",
    },
}
LITELLM_BAD_KEY = {
    "error": {"message": "No connected db.", "type": "no_db_connection", "code": "400"}
}


def fail(status: int, body: Any) -> type[ProviderError]:
    server = Server(httpx2.Response(status, json=body))
    for provider in (
        openai("m", base_url="http://gw.test/v1", api_key="k", transport=server.transport),
        anthropic("m", base_url="http://gw.test", api_key="k", transport=server.transport),
    ):
        with pytest.raises(ProviderError) as caught:
            run_async(provider.complete, HELLO)
        kind = type(caught.value)
    return kind


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (400, LLAMA_OVERFLOW, ContextLengthError),
        (400, LITELLM_BAD_MODEL, ModelNotFoundError),
        (400, LITELLM_BAD_KEY, ProviderAuthError),
        (401, {"error": {"message": "Incorrect API key provided"}}, ProviderAuthError),
        (
            404,
            {"error": {"message": "The model `x` does not exist", "code": "model_not_found"}},
            ModelNotFoundError,
        ),
        (
            404,
            {"type": "error", "error": {"type": "not_found_error", "message": "model: claude-x"}},
            ModelNotFoundError,
        ),
        (
            400,
            {"type": "error", "error": {"message": "prompt is too long: 210000 tokens > 200000"}},
            ContextLengthError,
        ),
        (400, {"error": {"message": "messages: field required"}}, ProviderResponseError),
    ],
)
def test_the_body_decides_the_class(status: int, body: Any, expected: type) -> None:
    assert fail(status, body) is expected


def test_a_500_quotes_the_server_and_does_not_guess_overload(sleeps: list[float]) -> None:
    server = Server(httpx2.Response(500, json={"error": {"message": "Tool call parse failed"}}))
    p = openai("m", base_url="http://gw.test/v1", api_key="k", transport=server.transport)
    with pytest.raises(ProviderResponseError) as caught:
        run_async(p.complete, HELLO)
    text = str(caught.value)
    assert "Tool call parse failed" in text
    assert "overloaded" not in text


def test_an_overloaded_answer_says_so(sleeps: list[float]) -> None:
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    server = Server(httpx2.Response(529, json=body))
    p = anthropic("m", base_url="http://gw.test", api_key="k", transport=server.transport)
    with pytest.raises(ProviderResponseError, match="is overloaded after 3 attempts"):
        run_async(p.complete, HELLO)


def test_a_429_body_and_a_rate_limit_type_are_rate_limits(sleeps: list[float]) -> None:
    body = {"error": {"type": "rate_limit_error", "message": "slow down"}}
    assert classify(400, "rate_limit_error", "slow down") == "rate"
    server = Server(httpx2.Response(429, json=body))
    p = openai("m", base_url="http://gw.test/v1", api_key="k", transport=server.transport)
    with pytest.raises(ProviderRateLimitError):
        run_async(p.complete, HELLO)


def test_words_in_a_5xx_body_do_not_make_it_an_auth_or_model_error() -> None:
    assert classify(502, "", "upstream: invalid api key for model x not found") == "other"
    assert classify(500, "", "maximum context length exceeded") == "context"
