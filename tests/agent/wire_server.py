"""What the provider tests share: a scripted HTTP server (MockTransport), a tool spec, and
a synchronous way to drain a stream."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx2
import orjson

from tests.backends import run_async
from trackway.agent.messages._messages import LLMRequest, LLMResponse, StreamDelta, ToolSpec
from trackway.agent.providers._http import HTTPProvider

WEATHER = ToolSpec(
    name="weather",
    description="Current weather for a city.",
    input_schema={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)

Handler = Callable[[httpx2.Request], httpx2.Response]


class Server:
    """A MockTransport that answers from a script and keeps every request it saw."""

    def __init__(self, *answers: httpx2.Response | Exception | Handler) -> None:
        self.answers = list(answers)
        self.requests: list[httpx2.Request] = []
        self.transport = httpx2.MockTransport(self._handle)

    def _handle(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        if isinstance(answer, httpx2.Response):
            return answer
        return answer(request)

    def body(self, index: int = -1) -> Any:
        return orjson.loads(self.requests[index].content)


def collect_stream(p: HTTPProvider, request: LLMRequest) -> list[StreamDelta | LLMResponse]:
    """Everything ``p.stream(request)`` yields, in order (run on a fresh event loop)."""

    async def collect() -> list[StreamDelta | LLMResponse]:
        return [item async for item in p.stream(request)]

    return run_async(collect)
