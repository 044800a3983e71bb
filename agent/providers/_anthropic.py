"""``anthropic(...)``: the Anthropic Messages API.

Wire mapping (``LLMRequest`` -> body):

- ``system`` -> the top-level ``system`` field;
- an assistant message -> content blocks: a ``text`` block (when it has text), then one
  ``tool_use`` block per tool call (``input`` is the arguments object);
- tool messages -> ``tool_result`` blocks in a user message; consecutive tool results are
  merged into one user message, as the API expects after a turn with several calls;
- ``tools`` -> ``{"name", "description", "input_schema"}``;
- ``max_tokens`` is required by the API: the request's, else the provider's default (1024);
- ``tool_choice`` -> ``{"type": "auto"}``, ``{"type": "any"}`` for ``"required"``,
  ``{"type": "none"}``, or ``{"type": "tool", "name": ...}`` (sent only with ``tools``);
- ``temperature`` and ``top_p`` as given, ``stop`` -> ``stop_sequences``; ``extra_body``'s
  fields are added to the body as they are. The Messages API has no ``seed`` and no
  ``response_format``: a request with either is refused (:class:`ProviderRequestError`)
  rather than sent without it, except a ``json_schema`` format (``output_schema(...,
  strategy="native")``): it becomes a tool named after the schema that the model is made to
  call (``tool_choice`` ``{"type": "tool"}``; ``{"type": "any"}`` beside the agent's own
  tools), and that call's input, as JSON, is the answer (``_structured``).

Stop reasons are normalised: ``end_turn`` and ``stop_sequence`` -> ``stop``, ``tool_use``,
``max_tokens``, ``refusal``, otherwise the API's own word (e.g.
``model_context_window_exceeded``). Streaming
reads the SSE events (``content_block_*``, ``message_delta``). ``thinking_budget`` ->
``thinking: {"type": "enabled", "budget_tokens"}``; ``thinking`` and ``redacted_thinking``
blocks are read (``thinking_delta`` and ``signature_delta`` when streamed) and sent back
first in their assistant turn (``_thinking``). A body or event of the wrong shape
(a ``delta``, ``content_block`` or ``usage`` that is not an object, text that is not a string,
a ``tool_use`` block without a name) is a :class:`ProviderResponseError` naming the field.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx2
import orjson

from ..messages._messages import (
    LLMRequest,
    LLMResponse,
    StreamDelta,
    ThinkingBlock,
    ToolCall,
)
from ..messages._payload import (
    UNPARSED_ARGUMENTS,
    optional_object,
    optional_str,
    required_str,
)
from ._caching import mark_anthropic
from ._http import (
    MAX_ERROR_BODY,
    MAX_RESPONSE_BODY,
    HTTPProvider,
)
from ._provider import (
    ProviderConfigError,
    ProviderError,
    ProviderRateLimitError,
    ProviderRequestError,
    ProviderResponseError,
)
from ._structured import NativeOutput, answer_from_tool, answer_tool, ask_for_answer
from ._thinking import anthropic_budget, anthropic_thinking, thinking_wire
from .wire import AnthropicStream, anthropic_stop_reason, anthropic_usage

__all__ = ["AnthropicProvider", "anthropic"]

API_VERSION = "2023-06-01"
"""The ``anthropic-version`` header sent with every call."""

_TOOL_CHOICES: dict[str, dict[str, str]] = {
    "auto": {"type": "auto"},
    "required": {"type": "any"},
    "none": {"type": "none"},
}


class AnthropicProvider(HTTPProvider):
    """A Messages API provider; build it with :func:`anthropic`."""

    name = "anthropic"
    key_env = "ANTHROPIC_API_KEY"
    api_label = "a Messages API response"
    default_base_url = "https://api.anthropic.com"
    path = "/v1/messages"
    stream_item = "an event"

    def __init__(self, model: str, *, max_tokens: int = 1024, **options: Any) -> None:
        """``max_tokens`` is sent when a request sets none; ``options`` as for
        :class:`HTTPProvider` (base_url, api_key, timeout, max_retries, backoff, ...)."""
        if not (isinstance(max_tokens, int) and max_tokens > 0):
            raise ProviderConfigError(
                f"anthropic(max_tokens={max_tokens!r}): use a positive integer"
            )
        super().__init__(model, **options)
        self.max_tokens = max_tokens

    unsupported_options = ("seed", "response_format")
    """Request options the Messages API has no field for (refused when the agent is built)."""

    native_output: NativeOutput = "forced-tool"
    """A ``json_schema`` response format is asked for with a forced tool (``_structured``)."""

    def describe_call(self, streamed: bool) -> dict[str, Any]:
        """As for every HTTP provider, plus the ``max_tokens`` sent when a request sets none
        (the body depends on it)."""
        return {**super().describe_call(streamed), "default_max_tokens": self.max_tokens}

    def _auth_headers(self, api_key: str) -> dict[str, str]:
        return {"x-api-key": api_key}

    def _static_headers(self) -> dict[str, str]:
        return {"anthropic-version": API_VERSION}

    def _endpoint_hint(self) -> str:
        return "the Messages API root (e.g. https://api.anthropic.com, without /v1)"

    def _models_hint(self) -> str:
        return f"; GET {self.base_url}/v1/models lists the models the key may use"

    # -- request -----------------------------------------------------------------------------

    def body(self, request: LLMRequest) -> dict[str, Any]:
        """The Messages API body for ``request`` (what goes on the wire)."""
        answer = answer_tool(request)
        for option in self.unsupported_options:
            if getattr(request, option) is not None and (answer is None or option == "seed"):
                raise ProviderRequestError(
                    f"anthropic: the Messages API has no {option}, so a request with "
                    f"{option}= cannot be sent as recorded; drop {option}= from the agent (or "
                    "pass the vendor's own field through extra_body=)"
                )
        messages: list[dict[str, Any]] = []
        results: list[dict[str, Any]] | None = None  # the open user message of tool results
        for index, message in enumerate(request.messages):
            if message.role == "tool":
                if not message.tool_call_id:
                    raise ProviderRequestError(
                        f"messages[{index}] is a tool result without tool_call_id; set "
                        "Message(role='tool', tool_call_id=<the id of the call it answers>)"
                    )
                block = {
                    "type": "tool_result",
                    "tool_use_id": message.tool_call_id,
                    "content": message.content,
                }
                if results is None:
                    results = []
                    messages.append({"role": "user", "content": results})
                results.append(block)
                continue
            results = None
            thought = thinking_wire(message.thinking) if message.role == "assistant" else []
            if message.role == "assistant" and (message.tool_calls or thought):
                blocks: list[dict[str, Any]] = list(thought)
                if message.content:
                    blocks.append({"type": "text", "text": message.content})
                blocks.extend(
                    {"type": "tool_use", "id": call.id, "name": call.name, "input": call.args}
                    for call in message.tool_calls or ()
                )
                messages.append({"role": "assistant", "content": blocks})
            else:
                messages.append({"role": message.role, "content": message.content})
        body: dict[str, Any] = {
            "model": request.model or self.model,
            "max_tokens": request.max_tokens if request.max_tokens is not None else self.max_tokens,
        }
        if request.thinking_budget is not None:
            budget = anthropic_budget(request.thinking_budget)
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
            if body["max_tokens"] <= budget:  # the answer's room comes on top of the budget
                body["max_tokens"] = budget + self.max_tokens
        if request.system:
            body["system"] = request.system
        body["messages"] = messages
        if request.tools or answer is not None:
            body["tools"] = [
                {
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": tool.input_schema,
                }
                for tool in request.tools or ()
            ]
            if answer is not None:
                ask_for_answer(body, request, answer)
            elif request.tool_choice is not None:
                body["tool_choice"] = _TOOL_CHOICES.get(
                    request.tool_choice, {"type": "tool", "name": request.tool_choice}
                )
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.top_p is not None:
            body["top_p"] = request.top_p
        if request.stop is not None:
            body["stop_sequences"] = list(request.stop)
        if request.extra_body:
            body.update(request.extra_body)
        if request.cache:
            mark_anthropic(body, request.cache)
        return body

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """As for every HTTP provider; a forced answer tool's input is read as the answer."""
        response = await super().complete(request)
        answer = answer_tool(request)
        return response if answer is None else answer_from_tool(response, answer["name"])

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamDelta | LLMResponse]:
        """As for every HTTP provider; a forced answer tool's input is read as the answer."""
        answer = answer_tool(request)
        async for piece in super().stream(request):
            if answer is not None and isinstance(piece, LLMResponse):
                piece = answer_from_tool(piece, answer["name"])
            yield piece

    # -- response ----------------------------------------------------------------------------

    def _parse(self, data: Any) -> LLMResponse:
        content = data.get("content") if isinstance(data, dict) else None
        if not isinstance(content, list):
            raise self._malformed(orjson.dumps(data), "no 'content' list")
        text: list[str] = []
        calls: list[ToolCall] = []
        thinking: list[ThinkingBlock] = []
        for index, block in enumerate(content):
            if not isinstance(block, dict):
                raise self._malformed(orjson.dumps(data), f"content[{index}] is not a block")
            kind = optional_str(block.get("type"), f"content[{index}].type")
            thought = anthropic_thinking(block, f"content[{index}]")
            if thought is not None:
                thinking.append(thought)
            elif kind == "text":
                text.append(required_str(block.get("text"), f"content[{index}].text"))
            elif kind == "tool_use":
                name, arguments = block.get("name"), block.get("input")
                if not isinstance(name, str):
                    raise self._malformed(orjson.dumps(data), f"content[{index}] has no name")
                call_id = optional_str(block.get("id"), f"content[{index}].id")
                calls.append(
                    ToolCall(
                        id=call_id or f"call_{index}",
                        name=name,
                        args=arguments
                        if isinstance(arguments, dict)
                        else {}
                        if arguments is None
                        else {UNPARSED_ARGUMENTS: orjson.dumps(arguments).decode()},
                    )
                )
        model = data.get("model")
        return LLMResponse(
            content="".join(text),
            tool_calls=tuple(calls),
            usage=anthropic_usage(optional_object(data.get("usage"), "usage")),
            stop_reason=anthropic_stop_reason(data.get("stop_reason")),
            model=model if isinstance(model, str) and model else None,
            thinking=tuple(thinking) or None,
        )

    # -- streaming ---------------------------------------------------------------------------

    def _assembly(self) -> AnthropicStream:
        return AnthropicStream()

    def _stream_failure(self, event: str, data: dict[str, Any]) -> ProviderError | None:
        return self._stream_error(data) if data.get("type", event) == "error" else None

    def _stream_error(self, data: dict[str, Any]) -> ProviderError:
        error = data.get("error")
        kind = error.get("type") if isinstance(error, dict) else None
        detail = error.get("message") if isinstance(error, dict) else error
        said = self._quote(f"{kind or 'error'}: {detail or 'no message'}")
        text = self._scrub(
            f"{self.name}: the server at {self.base_url} reported an error mid-stream "
            f"({said}). Retry the call."
        )
        if kind == "rate_limit_error":
            return ProviderRateLimitError(text, status=429, quoted=(said,))
        return ProviderResponseError(text, quoted=(said,))


def anthropic(
    model: str,
    *,
    base_url: str = AnthropicProvider.default_base_url,
    api_key: str | None = None,
    max_tokens: int = 1024,
    timeout: float = 60.0,
    max_retries: int = 2,
    backoff: float = 0.5,
    transport: httpx2.AsyncBaseTransport | None = None,
    headers: Mapping[str, str] | None = None,
    max_error_body: int = MAX_ERROR_BODY,
    max_response_body: int = MAX_RESPONSE_BODY,
    retry_read_timeouts: bool = False,
) -> AnthropicProvider:
    """A provider for the Anthropic Messages API.

    Args:
        model: the model. The agent uses it unless ``Agent.create(model=)`` names the same
            one; naming two different models is refused (``configure()`` may pick another
            for one run).
        base_url: the API root, without ``/v1`` (the provider posts to ``/v1/messages``).
        api_key: sent as ``x-api-key``. Default: ``$ANTHROPIC_API_KEY``, but only when
            ``base_url`` is Anthropic's own host (pass ``api_key=`` for a gateway);
            ``api_key=""`` sends none, e.g. behind a proxy that adds it. Anthropic's own
            host with no key at all: the first call raises :class:`MissingAPIKeyError`,
            before connecting.
        max_tokens: the answer's token cap when the request sets none (the API needs one).
        timeout: seconds to wait for the connection and for each read.
        max_retries: extra attempts on 408, 429, 5xx (529 overloaded included), connection
            errors, connect timeouts and a stream that ended before its answer (while no text
            was streamed).
        backoff: the first wait between attempts in seconds, doubled each time; a
            ``retry-after`` from the server wins.
        transport: an ``httpx2`` async transport (``httpx2.MockTransport`` in tests, or a
            pooling ``httpx2.AsyncHTTPTransport`` you own and close, to reuse connections).
        headers: extra HTTP headers sent with every call (e.g. ``anthropic-beta``).
        max_error_body: bytes read of an error response; the rest is not read, and the
            message says where the body was cut.
        max_response_body: the largest answer read, in bytes (also the largest streamed
            event); a larger one is a :class:`ProviderResponseError`.
        retry_read_timeouts: send the call again after a read timeout. Off by default: the
            server had the request and may still be generating, so a second request would
            queue behind the first (on a local server the next call then waits for both).
    """
    return AnthropicProvider(
        model,
        max_tokens=max_tokens,
        base_url=base_url,
        api_key=api_key,
        timeout=timeout,
        max_retries=max_retries,
        backoff=backoff,
        transport=transport,
        headers=headers,
        max_error_body=max_error_body,
        max_response_body=max_response_body,
        retry_read_timeouts=retry_read_timeouts,
    )
