"""``mock()``'s stream: an async iterator (not an async generator) that hands out the
answer's words (``stream=True``) and then the answer, taking its reply at the first step."""

from __future__ import annotations

import pytest

from tests.backends import run_async
from trackway.agent import LLMRequest, LLMResponse, MockExhaustedError, StreamDelta, mock

REQUEST = LLMRequest(model="m", messages=[{"role": "user", "content": "hi"}])


async def _drain(pieces: object) -> list[object]:
    return [piece async for piece in pieces]  # type: ignore[attr-defined]


def test_a_streaming_mock_hands_out_each_word_then_the_answer() -> None:
    provider = mock(reply="the answer is ok", stream=True)
    pieces = run_async(_drain, provider.stream(REQUEST))
    *words, answer = pieces
    assert [w.text for w in words if isinstance(w, StreamDelta)] == ["the", " answer", " is", " ok"]
    assert isinstance(answer, LLMResponse) and answer.content == "the answer is ok"
    again = run_async(_drain, provider.stream(REQUEST))[-1]
    assert again is answer  # a text reply is built once, the same answer every call


def test_a_mock_that_does_not_stream_hands_out_the_answer_alone() -> None:
    provider = mock(replies=["one", "two"])
    assert [p.content for p in run_async(_drain, provider.stream(REQUEST))] == ["one"]
    assert [p.content for p in run_async(_drain, provider.stream(REQUEST))] == ["two"]
    assert provider.calls == 2


def test_the_reply_is_taken_at_the_first_step_and_a_stream_closed_before_takes_none() -> None:
    provider = mock(replies=["one"])
    unread = provider.stream(REQUEST)
    assert provider.calls == 0  # nothing asked of the script yet
    run_async(unread.aclose)  # type: ignore[attr-defined]
    assert run_async(_drain, unread) == [] and provider.calls == 0
    assert [p.content for p in run_async(_drain, provider.stream(REQUEST))] == ["one"]
    exhausted = provider.stream(REQUEST)  # the script has no second reply
    with pytest.raises(MockExhaustedError, match="ran out of replies"):
        run_async(_drain, exhausted)
