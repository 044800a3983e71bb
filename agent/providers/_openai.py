"""``openai(...)``: the Chat Completions API, on OpenAI or any compatible server.

Works with api.openai.com and with servers that speak the same wire format (llama.cpp,
vLLM, Ollama's ``/v1``, LM Studio, ...): point ``base_url`` at the server's ``/v1``. A local
server usually needs no API key.

Wire mapping (``LLMRequest`` -> body):

- ``system`` -> first message ``{"role": "system"}``;
- an assistant message's tool calls -> ``tool_calls`` of type ``function`` whose
  ``arguments`` is a JSON string (``content`` is ``""`` when the message has no text:
  llama.cpp's server refuses ``null``);
- a tool message -> ``{"role": "tool", "tool_call_id": ..., "content": ...}``;
- ``tools`` -> function tools (``parameters`` is the tool's input schema);
- ``tool_choice`` -> ``"auto"``, ``"required"``, ``"none"``, or for a tool's name
  ``{"type": "function", "function": {"name": ...}}`` (sent only with ``tools``);
- ``thinking_budget`` -> ``reasoning_effort``; ``reasoning_content`` (streamed or not) is read
  as an unsigned reasoning block and never sent back (``_thinking``);
- ``temperature``, ``max_tokens``, ``seed``, ``top_p``, ``stop`` and ``response_format`` as
  given (left out when ``None``); ``extra_body``'s fields are added to the body as they are.

Stop reasons are normalised: ``stop``, ``tool_use``, ``max_tokens``, ``content_filter``, or
the server's own word; an answer with ``message.refusal`` (structured outputs) stops with
``refusal`` and its text is the refusal. Tool-call arguments that are not a JSON object are
kept verbatim as ``{"_unparsed_arguments": raw}`` (the model wrote them; it is not a
provider failure). A body or chunk of the wrong shape (``choices`` not a list, a ``delta``
or ``usage`` that is not an object, text, ids or names that are not strings, a tool call
that never got a name) is a :class:`ProviderResponseError` naming the field; scalar metadata
of the wrong type (``model``, ``finish_reason``, token counts) is read as not reported.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import httpx2
import orjson

from ..messages._messages import LLMRequest, LLMResponse, ToolCall, Usage
from ..messages._payload import (
    UNPARSED_ARGUMENTS,
    MalformedPayload,
    optional_int,
    optional_list,
    optional_object,
    optional_str,
    parse_arguments,
    shared_id_arguments,
)
from ._http import (
    MAX_ERROR_BODY,
    MAX_RESPONSE_BODY,
    HTTPProvider,
)
from ._options import TOOL_CHOICES
from ._provider import (
    ProviderConfigError,
    ProviderError,
    ProviderRequestError,
    ProviderResponseError,
)
from ._structured import NativeOutput
from ._thinking import THINKING_HANDLERS, effort_of, reasoning, split_think_tags

__all__ = ["OpenAIProvider", "openai"]

_STOP_REASONS = {
    "stop": "stop",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "content_filter",
}


def _stop_reason(finish_reason: Any) -> str | None:
    if not isinstance(finish_reason, str) or not finish_reason:
        return None
    return _STOP_REASONS.get(finish_reason, finish_reason)


def _usage(data: Any) -> Usage | None:
    if not isinstance(data, dict):
        return None
    details = optional_object(data.get("prompt_tokens_details"), "usage.prompt_tokens_details")
    cached = details.get("cached_tokens") if details is not None else None
    prompt, read = _int(data.get("prompt_tokens")), _int(cached)
    if prompt is not None and read is not None:  # prompt_tokens include the cached part
        prompt = max(prompt - read, 0)
    return Usage(
        input_tokens=prompt,
        output_tokens=_int(data.get("completion_tokens")),
        cache_read_tokens=read,
    )


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _arguments_json(args: dict[str, Any]) -> str:
    raw = args.get(UNPARSED_ARGUMENTS)
    if len(args) == 1 and isinstance(raw, str):
        return raw  # send back exactly what the model wrote
    return orjson.dumps(args).decode()


class _ToolCallParts:
    """One tool call being assembled from streamed deltas."""

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.arguments: list[str] = []

    def merge(self, call: dict[str, Any], where: str) -> None:
        call_id = optional_str(call.get("id"), f"{where}.id")
        if call_id:
            self.id = call_id
        function = optional_object(call.get("function"), f"{where}.function")
        if function is None:
            return
        name = optional_str(function.get("name"), f"{where}.function.name")
        if name and not self.name:
            self.name = name  # sent once, with the first piece
        arguments = optional_str(function.get("arguments"), f"{where}.function.arguments")
        if arguments is not None:
            self.arguments.append(arguments)


class _Stream:
    """A streamed answer being assembled from its chunks.

    A chunk of the wrong shape (``choices`` not a list, a ``delta`` that is not an object,
    a tool-call name that is not a string, ...) raises :class:`MalformedPayload`.
    """

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: dict[int, _ToolCallParts] = {}
        self.usage: Usage | None = None
        self.stop_reason: str | None = None
        self.model: str | None = None
        self.refused = False
        self.reasoning: list[str] = []
        self.think_tags = False

    def feed(self, event: str, chunk: dict[str, Any]) -> str:
        """Take one chunk in; the text it adds (maybe empty)."""
        added: list[str] = []
        if isinstance(chunk.get("model"), str) and chunk["model"]:
            self.model = chunk["model"]
        usage = optional_object(chunk.get("usage"), "usage")
        if usage:
            self.usage = _usage(usage)
        for position, choice in enumerate(optional_list(chunk.get("choices"), "choices")):
            where = f"choices[{position}]"
            if not isinstance(choice, dict):
                raise MalformedPayload(f"{where} is not an object")
            index = optional_int(choice.get("index"), f"{where}.index")
            if index not in (None, 0):
                continue  # only the first choice is read (n=1)
            self.stop_reason = _stop_reason(choice.get("finish_reason")) or self.stop_reason
            delta = optional_object(choice.get("delta"), f"{where}.delta")
            if delta is None:
                continue
            piece = optional_str(delta.get("content"), f"{where}.delta.content")
            if piece:
                added.append(piece)
            thought = optional_str(
                delta.get("reasoning_content"), f"{where}.delta.reasoning_content"
            )
            if thought:
                self.reasoning.append(thought)
            refusal = optional_str(delta.get("refusal"), f"{where}.delta.refusal")
            if refusal:  # the model declined the schema: its words are the answer's text
                self.refused = True
                added.append(refusal)
            calls = optional_list(delta.get("tool_calls"), f"{where}.delta.tool_calls")
            for number, call in enumerate(calls):
                at = f"{where}.delta.tool_calls[{number}]"
                if not isinstance(call, dict):
                    raise MalformedPayload(f"{at} is not an object")
                key = optional_int(call.get("index"), f"{at}.index")
                self.calls.setdefault(number if key is None else key, _ToolCallParts()).merge(
                    call, at
                )
        self.text.extend(added)
        return "".join(added)

    def finished(self, saw_done: bool) -> bool:
        """A stream is whole once it said why it stopped or sent ``[DONE]``."""
        return saw_done or self.stop_reason is not None

    def response(self) -> LLMResponse:
        for index, part in sorted(self.calls.items()):
            if not part.name:
                raise MalformedPayload(f"tool call {index} came without a name")
        ids = Counter(part.id for part in self.calls.values() if part.id)
        calls = tuple(
            ToolCall(
                id=part.id or f"call_{index}",
                name=part.name,
                args=(shared_id_arguments if ids[part.id] > 1 else parse_arguments)(
                    "".join(part.arguments)
                ),
            )
            for index, part in sorted(self.calls.items())
        )
        response = LLMResponse(
            content="".join(self.text),
            tool_calls=calls,
            usage=self.usage,
            stop_reason="refusal" if self.refused else self.stop_reason,
            model=self.model,
            thinking=reasoning("".join(self.reasoning)),
        )
        return split_think_tags(response) if self.think_tags else response


class OpenAIProvider(HTTPProvider):
    """A Chat Completions provider; build it with :func:`openai`."""

    name = "openai"
    key_env = "OPENAI_API_KEY"
    api_label = "a Chat Completions response"
    default_base_url = "https://api.openai.com/v1"
    path = "/chat/completions"
    stream_item = "a chunk"
    native_output: NativeOutput = "response_format"
    """A ``json_schema`` response format is sent as it is (structured outputs)."""

    def _auth_headers(self, api_key: str) -> dict[str, str]:
        return {"authorization": f"Bearer {api_key}"}

    def _endpoint_hint(self) -> str:
        return "an OpenAI-compatible API (the URL usually ends in /v1)"

    def _models_hint(self) -> str:
        return f"; GET {self.base_url}/models lists the models the server offers"

    thinking_handler = "reasoning_content"
    """How reasoning is read (``openai(thinking_handler=)``, ``_thinking``)."""

    def describe_call(self, streamed: bool) -> dict[str, Any]:
        """As for every HTTP provider, plus a thinking handler other than the default (it
        changes what the response says)."""
        described = super().describe_call(streamed)
        if self.thinking_handler != "reasoning_content":
            described["thinking_handler"] = self.thinking_handler
        return described

    # -- request -----------------------------------------------------------------------------

    def body(self, request: LLMRequest) -> dict[str, Any]:
        """The Chat Completions body for ``request`` (what goes on the wire)."""
        messages: list[dict[str, Any]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        for index, message in enumerate(request.messages):
            if message.role == "tool":
                if not message.tool_call_id:
                    raise ProviderRequestError(
                        f"messages[{index}] is a tool result without tool_call_id; set "
                        "Message(role='tool', tool_call_id=<the id of the call it answers>)"
                    )
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": message.tool_call_id,
                        "content": message.content,
                    }
                )
            elif message.role == "assistant" and message.tool_calls:
                messages.append(
                    {
                        "role": "assistant",
                        "content": message.content,  # "" when none: servers refuse null
                        "tool_calls": [
                            {
                                "id": call.id,
                                "type": "function",
                                "function": {
                                    "name": call.name,
                                    "arguments": _arguments_json(call.args),
                                },
                            }
                            for call in message.tool_calls
                        ],
                    }
                )
            else:
                messages.append({"role": message.role, "content": message.content})
        body: dict[str, Any] = {"model": request.model or self.model, "messages": messages}
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.input_schema,
                    },
                }
                for tool in request.tools
            ]
            if request.tool_choice is not None:
                body["tool_choice"] = (
                    request.tool_choice
                    if request.tool_choice in TOOL_CHOICES
                    else {"type": "function", "function": {"name": request.tool_choice}}
                )
        for option in ("temperature", "max_tokens", "seed", "top_p", "response_format"):
            value = getattr(request, option)
            if value is not None:
                body[option] = value
        if request.stop is not None:
            body["stop"] = list(request.stop)
        if request.thinking_budget is not None:
            body["reasoning_effort"] = effort_of(request.thinking_budget)
        if request.extra_body:
            body.update(request.extra_body)
        return body

    # -- response ----------------------------------------------------------------------------

    def _parse(self, data: Any) -> LLMResponse:
        choices = data.get("choices") if isinstance(data, dict) else None
        if choices is None and isinstance(data, dict) and data.get("error"):
            raise self._reported_error(data)
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise self._malformed(orjson.dumps(data), "no 'choices'")
        choice = choices[0]
        message = choice.get("message")
        if not isinstance(message, dict):
            raise self._malformed(orjson.dumps(data), "no 'choices[0].message'")
        content = optional_str(message.get("content"), "choices[0].message.content")
        refusal = optional_str(message.get("refusal"), "choices[0].message.refusal")
        thought = optional_str(
            message.get("reasoning_content"), "choices[0].message.reasoning_content"
        )
        calls: list[ToolCall] = []
        raw_calls = message.get("tool_calls") or []
        if not isinstance(raw_calls, list):
            raise self._malformed(orjson.dumps(data), "'tool_calls' is not a list")
        for index, raw in enumerate(raw_calls):
            function = raw.get("function") if isinstance(raw, dict) else None
            if not isinstance(function, dict) or not isinstance(function.get("name"), str):
                raise self._malformed(orjson.dumps(data), f"tool_calls[{index}] has no name")
            arguments = function.get("arguments")
            if isinstance(arguments, dict):  # some servers send an object, not JSON text
                args = arguments
            else:
                where = f"choices[0].message.tool_calls[{index}].function.arguments"
                args = parse_arguments(optional_str(arguments, where))
            call_id = optional_str(raw.get("id"), f"choices[0].message.tool_calls[{index}].id")
            calls.append(
                ToolCall(
                    id=call_id or f"call_{index}",
                    name=function["name"],
                    args=args,
                )
            )
        model = data.get("model")
        response = LLMResponse(
            content=(content or "") + (refusal or ""),
            tool_calls=tuple(calls),
            usage=_usage(optional_object(data.get("usage"), "usage")),
            stop_reason="refusal" if refusal else _stop_reason(choice.get("finish_reason")),
            model=model if isinstance(model, str) and model else None,
            thinking=reasoning(thought),
        )
        return split_think_tags(response) if self.thinking_handler == "think-tags" else response

    # -- streaming ---------------------------------------------------------------------------

    def _stream_body(self, request: LLMRequest) -> dict[str, Any]:
        """Usage is asked for with ``stream_options.include_usage`` and reported when the
        server sends it; tool calls are assembled from their streamed pieces."""
        body = super()._stream_body(request)
        body["stream_options"] = {"include_usage": True}
        return body

    def _assembly(self) -> _Stream:
        assembly = _Stream()
        assembly.think_tags = self.thinking_handler == "think-tags"
        return assembly

    def _stream_failure(self, event: str, data: dict[str, Any]) -> ProviderError | None:
        return self._reported_error(data, " mid-stream") if data.get("error") else None

    def _reported_error(self, chunk: dict[str, Any], when: str = "") -> ProviderResponseError:
        error = chunk.get("error")
        detail = (error.get("message") if isinstance(error, dict) else error) or "no message"
        said = self._quote(str(detail))
        return ProviderResponseError(
            self._scrub(
                f"{self.name}: the server at {self.base_url} reported an error{when}: {said}"
            ),
            quoted=(said,),
        )


def openai(
    model: str,
    *,
    base_url: str = OpenAIProvider.default_base_url,
    api_key: str | None = None,
    timeout: float = 60.0,
    max_retries: int = 2,
    backoff: float = 0.5,
    transport: httpx2.AsyncBaseTransport | None = None,
    headers: Mapping[str, str] | None = None,
    max_error_body: int = MAX_ERROR_BODY,
    max_response_body: int = MAX_RESPONSE_BODY,
    retry_read_timeouts: bool = False,
    thinking_handler: str = "reasoning_content",
) -> OpenAIProvider:
    """A provider for the Chat Completions API (OpenAI or any compatible server).

    Args:
        model: the model. The agent uses it unless ``Agent.create(model=)`` names the same
            one; naming two different models is refused (``configure()`` may pick another
            for one run).
        base_url: the API root, ending in ``/v1`` for most servers,
            e.g. ``"http://127.0.0.1:8080/v1"`` for a local llama.cpp server.
        api_key: sent as a bearer token. Default: ``$OPENAI_API_KEY``, but only when
            ``base_url`` is OpenAI's own host (an environment key never goes to another
            server; pass ``api_key=`` for that). A local server may need none: with neither
            (or ``api_key=""``) no ``authorization`` header is sent. OpenAI's own host with
            no key at all: the first call raises :class:`MissingAPIKeyError`, before
            connecting.
        timeout: seconds to wait for the connection and for each read.
        max_retries: extra attempts on 408, 429, 5xx, connection errors, connect timeouts
            and a stream that ended before its answer (while no text was streamed).
        backoff: the first wait between attempts in seconds, doubled each time; a
            ``retry-after`` from the server wins.
        transport: an ``httpx2`` async transport (``httpx2.MockTransport`` in tests, or a
            pooling ``httpx2.AsyncHTTPTransport`` you own and close, to reuse connections).
        headers: extra HTTP headers sent with every call.
        max_error_body: bytes read of an error response; the rest is not read, and the
            message says where the body was cut.
        max_response_body: the largest answer read, in bytes (also the largest streamed
            event); a larger one is a :class:`ProviderResponseError`.
        retry_read_timeouts: send the call again after a read timeout. Off by default: the
            server had the request and may still be generating, so a second request would
            queue behind the first (on a local server the next call then waits for both).
        thinking_handler: ``"reasoning_content"`` reads the server's ``reasoning_content``;
            ``"think-tags"`` also moves a leading ``<think>...</think>`` out of the answer
            into a reasoning block (named in each call's receipt).
    """
    if thinking_handler not in THINKING_HANDLERS:
        raise ProviderConfigError(
            f"openai(thinking_handler={thinking_handler!r}): use 'reasoning_content' or "
            "'think-tags'"
        )
    provider = OpenAIProvider(
        model,
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
    provider.thinking_handler = thinking_handler
    return provider
