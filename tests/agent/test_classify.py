"""The classifier adapters: ``mock_classifier`` answers from its script, and
``provider_classifier`` asks a model through a real provider (``openai(...)``) talking to a
real HTTP server on 127.0.0.1, retrying rate limits and overloads and never quoting the key.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

import pytest

from tests.backends import run_async
from tests.local_http import Handler, base_url, serving
from trackway.agent import (
    Classifier,
    ClassifierError,
    ClassifyAnswer,
    ClassifyCriterion,
    ClassifyRequest,
    MockClassifierExhaustedError,
    anthropic,
    mock,
    mock_classifier,
    openai,
    provider_classifier,
)
from trackway.agent.classify import _provider
from trackway.engine import ConfigurationError

KEY = "sk-secret-xyz"

REQUEST = ClassifyRequest(
    question_id="tool-choice",
    question="Which tool answers the user's message?",
    criteria=(
        ClassifyCriterion("weather", "Current weather for a city."),
        ClassifyCriterion("calendar", "The user's meetings and free slots."),
        ClassifyCriterion("search", "Anything else, from the web."),
    ),
    state={"message": "Is it raining in Oslo?", "skill": None},
)


def _classify(classifier: Classifier, request: ClassifyRequest = REQUEST) -> ClassifyAnswer:
    return run_async(classifier.classify, request)


# -- mock_classifier -----------------------------------------------------------------------


def test_a_list_script_answers_in_order_in_every_form_and_keeps_the_requests() -> None:
    second = ClassifyRequest("entry", "Which skill?", REQUEST.criteria[:2])
    refused = ClassifierError("the model is down", status=529, retryable=True)
    classifier = mock_classifier(
        [
            {"ranked": [["weather", 0.9], ["search", 0.2]], "chosen": "weather"},
            {
                "ranked": [{"name": "calendar", "score": 0.7}],
                "confidence": 0.5,
                "usage": {"input_tokens": 40, "output_tokens": 9},
                "latency_ms": 12.5,
                "model": "small",
            },
            ClassifyAnswer(ranked=(("search", 1.0),), chosen="search"),
            refused,
        ]
    )
    assert isinstance(classifier, Classifier)

    first = _classify(classifier)
    assert first.ranked == (("weather", 0.9), ("search", 0.2))
    assert (first.chosen, first.confidence) == ("weather", 0.9)  # the chosen one's score
    assert (first.latency_ms, first.usage, first.model) == (0.0, None, None)

    answer = _classify(classifier, second)
    assert answer.ranked == (("calendar", 0.7),)
    assert (answer.chosen, answer.confidence, answer.latency_ms) == (None, 0.5, 12.5)
    assert answer.usage == {"input_tokens": 40, "output_tokens": 9}
    assert answer.model == "small"

    assert _classify(classifier) == ClassifyAnswer(ranked=(("search", 1.0),), chosen="search")
    with pytest.raises(ClassifierError) as info:
        _classify(classifier)
    assert info.value is refused and info.value.status == 529
    assert classifier.calls == [REQUEST, second, REQUEST, REQUEST]


def test_a_scripted_answer_is_served_as_written_names_and_order() -> None:
    classifier = mock_classifier([{"ranked": [["low", 0.1], ["not-offered", 0.8]], "chosen": "x"}])
    answer = _classify(classifier)
    # the stage that asks keeps only the names it offered; the mock says what it was told
    assert answer.ranked == (("low", 0.1), ("not-offered", 0.8))
    assert (answer.chosen, answer.confidence) == ("x", None)


def test_a_script_that_runs_out_says_how_many_answers_it_had() -> None:
    classifier = mock_classifier([{"ranked": [["weather", 1]]}] * 2, name="tools")
    _classify(classifier)
    _classify(classifier)
    with pytest.raises(MockClassifierExhaustedError) as info:
        _classify(classifier)
    assert isinstance(info.value, ClassifierError) and info.value.retryable is False
    message = str(info.value)
    assert "mock classifier 'tools' ran out of answers" in message
    assert "asked for answer 3 (question 'tool-choice')" in message
    assert "the script has 2" in message
    assert len(classifier.calls) == 3


def test_an_empty_script_runs_out_at_the_first_call() -> None:
    with pytest.raises(MockClassifierExhaustedError, match="the script has 0"):
        _classify(mock_classifier([]))


def test_a_function_script_answers_each_request() -> None:
    def first_offered(request: ClassifyRequest) -> dict[str, Any]:
        name = request.criteria[0].name
        return {"ranked": [[name, 0.6]], "chosen": name}

    classifier = mock_classifier(first_offered, name="first")
    assert classifier.name == "first"
    assert _classify(classifier).chosen == "weather"
    other = ClassifyRequest("entry", "Which skill?", (ClassifyCriterion("billing", "Bills."),))
    answer = _classify(classifier, other)
    assert (answer.ranked, answer.chosen, answer.confidence) == (
        (("billing", 0.6),),
        "billing",
        0.6,
    )
    assert classifier.calls == [REQUEST, other]


def test_a_function_script_may_return_an_error_to_raise() -> None:
    classifier = mock_classifier(lambda request: ClassifierError("no", status=400))
    with pytest.raises(ClassifierError, match="no") as info:
        _classify(classifier)
    assert info.value.status == 400 and len(classifier.calls) == 1


@pytest.mark.parametrize(
    ("script", "message"),
    [
        (
            [{"rankd": [["a", 1]]}],
            "mock classifier answer 1 has the key 'rankd' (did you mean 'ranked'?); the keys it "
            "takes are ranked, chosen, confidence, usage, latency_ms, model",
        ),
        (
            [{"ranked": []}, {"ranked": [{"name": "a", "scroe": 1}]}],
            "mock classifier answer 2, ranked[0] has the key 'scroe' (did you mean 'score'?)",
        ),
        ([{"ranked": [["a", "high"]]}], "ranked[0]'s score is 'high'; use a number"),
        ([{"ranked": [["a", float("nan")]]}], "use a finite number"),
        ([{"ranked": [("a", 1, 2)]}], "write ['name', 0.9]"),
        ([{"ranked": "a"}], "'ranked' is 'a'; use a list"),
        ([{"chosen": 3}], "'chosen' is 3; use a criterion's name or None"),
        ([{"usage": {"input_tokens": 1.5}}], "a usage entry is a str and a whole number"),
        ([{"usage": 12}], "'usage' is 12; use a dict"),
        ([{"model": 4}], "'model' is 4; use a str or None"),
        ([{"ranked": [{"name": "a"}]}], "write {'name': 'x', 'score': 0.9}"),
        ([{"ranked": [["", 0.5]]}], "names ''; a criterion's name is a non-empty str"),
        (["weather"], "mock classifier answer 1 is 'weather'; an answer is a ClassifyAnswer"),
        ({"ranked": []}, "the script is a list of answers"),
    ],
)
def test_a_malformed_script_is_refused_when_it_is_given(script: Any, message: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        mock_classifier(script)
    assert message in str(info.value)


def test_a_function_scripts_malformed_answer_is_refused_at_its_call() -> None:
    classifier = mock_classifier(lambda request: {"chosn": "weather"})
    with pytest.raises(ConfigurationError, match=r"'chosn' \(did you mean 'chosen'\?\)"):
        _classify(classifier)


def test_a_mock_classifier_shows_its_script_and_calls() -> None:
    listed = mock_classifier([{"ranked": []}], name="tools")
    assert repr(listed) == "<MockClassifier name='tools' script=1 answers calls=0>"
    _classify(listed)
    assert repr(listed) == "<MockClassifier name='tools' script=1 answers calls=1>"
    assert "script=a function" in repr(mock_classifier(lambda request: {"ranked": []}))


def test_a_mock_answer_round_trips_through_the_record() -> None:
    classifier = mock_classifier(
        [{"ranked": [["weather", 0.9]], "chosen": "weather", "usage": {"input_tokens": 3}}]
    )
    answer = _classify(classifier)
    assert ClassifyAnswer.from_record(json.loads(json.dumps(answer.record()))) == answer


# -- provider_classifier over a real HTTP server --------------------------------------------

Reply = tuple[int, Any]  # (status, body), the body a dict or a function of the request seen


class _Scripted(Handler):
    """A Chat Completions server answering from a script; the last answer repeats."""

    answers: ClassVar[list[Reply]]
    seen: ClassVar[list[dict[str, Any]]]

    def do_POST(self) -> None:
        cls = type(self)
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        cls.seen.append({"body": body, "auth": self.headers.get("authorization")})
        status, payload = cls.answers[min(len(cls.seen), len(cls.answers)) - 1]
        if callable(payload):
            payload = payload(cls.seen[-1])
        self.answer(status, json.dumps(payload).encode())


@contextmanager
def _server(*answers: Reply) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    seen: list[dict[str, Any]] = []
    handler = type("Server", (_Scripted,), {"answers": list(answers), "seen": seen})
    with serving(handler) as httpd:
        yield base_url(httpd), seen


def _completion(content: str) -> dict[str, Any]:
    return {
        "model": "small-served",
        "choices": [
            {"message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 50, "completion_tokens": 12},
    }


def _scores(scores: dict[str, float], chosen: str | None) -> Reply:
    return 200, _completion(json.dumps({"scores": scores, "chosen": chosen}))


def _echoing_key(status: int, kind: str) -> Reply:
    """An error body that quotes the request's authorization header back (a careless proxy)."""
    return status, lambda seen: {"error": {"type": kind, "message": f"not now, {seen['auth']}"}}


def _classifier(url: str, **options: Any) -> Any:
    # the provider's own retries off, so the classifier's are the only ones (the module says why)
    provider = openai("small", base_url=url, api_key=KEY, max_retries=0)
    return provider_classifier(provider, retry_delay=0.001, **options)


@pytest.fixture
def delays(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The classifier's waits between attempts, recorded (and still slept, briefly)."""
    waited: list[float] = []
    real = _provider._sleep

    async def recorded(seconds: float) -> None:
        waited.append(seconds)
        await real(seconds)

    monkeypatch.setattr(_provider, "_sleep", recorded)
    return waited


def test_a_json_answer_is_ranked_highest_first_and_picks_an_offered_criterion() -> None:
    scores = {"search": 0.2, "weather": 0.85, "calendar": 0.2, "umbrella": 0.99}
    with _server(_scores(scores, "weather")) as (url, seen):
        classifier = _classifier(url)
        answer = _classify(classifier)
    # ties in criteria order (calendar before search); a name not offered is dropped
    assert answer.ranked == (("weather", 0.85), ("calendar", 0.2), ("search", 0.2))
    assert (answer.chosen, answer.confidence) == ("weather", 0.85)
    assert answer.usage == {"input_tokens": 50, "output_tokens": 12}
    assert answer.model == "small" and answer.latency_ms > 0
    assert classifier.name == "openai-classifier"

    (call,) = seen
    assert call["auth"] == f"Bearer {KEY}"
    body = call["body"]
    assert body["model"] == "small" and body["response_format"] == {"type": "json_object"}
    system, user = body["messages"]
    assert system == {"role": "system", "content": _provider.SYSTEM_PROMPT}
    text = user["content"]
    assert "Which tool answers the user's message?" in text
    assert "- calendar: The user's meetings and free slots." in text
    assert '"message": "Is it raining in Oslo?"' in text
    assert classifier.llm_request(REQUEST).hash == classifier.llm_request(REQUEST).hash


def test_a_pick_that_is_not_offered_is_no_pick() -> None:
    with _server(_scores({"weather": 0.3, "umbrella": 0.9}, "umbrella")) as (url, _):
        answer = _classify(_classifier(url))
    assert answer.ranked == (("weather", 0.3),)
    assert (answer.chosen, answer.confidence) == (None, None)


def test_a_fenced_json_answer_is_read() -> None:
    fenced = '```json\n{"scores": {"calendar": 1}, "chosen": "calendar"}\n```'
    with _server((200, _completion(fenced))) as (url, _):
        answer = _classify(_classifier(url))
    assert (answer.ranked, answer.chosen, answer.confidence) == (
        (("calendar", 1.0),),
        "calendar",
        1.0,
    )


def test_a_rate_limit_is_asked_again_and_then_answers(delays: list[float]) -> None:
    limited = (429, {"error": {"type": "rate_limit_exceeded", "message": "slow down"}})
    with _server(limited, limited, _scores({"weather": 1}, "weather")) as (url, seen):
        answer = _classify(_classifier(url, max_retries=3))
    assert answer.chosen == "weather"
    assert len(seen) == 3  # two refusals, then the answer
    assert delays == [0.001, 0.002]  # retry_delay * 2**attempt


def test_an_overload_that_lasts_is_a_retryable_error_without_the_key(delays: list[float]) -> None:
    with _server(_echoing_key(529, "overloaded_error")) as (url, seen):
        classifier = _classifier(url, max_retries=2)
        with pytest.raises(ClassifierError) as info:
            _classify(classifier)
    error = info.value
    assert len(seen) == 3 and delays == [0.001, 0.002]
    assert (error.status, error.retryable) == (529, True)
    assert "still rate limited, overloaded or out of reach after 3 attempts" in str(error)
    assert "max_retries=) (now 2)" in str(error)
    assert "not now, Bearer ***" in str(error)  # the server's words, the key scrubbed out
    for text in (str(error), repr(error), str(error.__cause__), repr(error.__cause__)):
        assert KEY not in text


def test_a_client_error_is_final_at_once(delays: list[float]) -> None:
    with (
        _server(_echoing_key(400, "invalid_request_error")) as (url, seen),
        pytest.raises(ClassifierError) as info,
    ):
        _classify(_classifier(url))
    assert len(seen) == 1 and delays == []
    assert (info.value.status, info.value.retryable) == (400, False)
    assert "Only a rate limit, an overload or a failed connection is asked again" in str(info.value)
    assert KEY not in str(info.value) and KEY not in repr(info.value)


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (f"Sure! The weather tool fits best. (key {KEY})", "it is not JSON"),
        ("", "it is empty"),
        ('["weather"]', "it is a JSON list, not an object"),
        ('{"chosen": "weather"}', "it has no 'scores' object"),
        ('{"scores": {"weather": "high"}}', "the score of 'weather' is not a number"),
        ('{"scores": {"weather": 7}}', "the score of 'weather' is 7, not from 0 to 1"),
        (f'{{"scores": {{"{KEY}": "x"}}}}', "the score of '***' is not a number"),
        (
            '{"scores": {"weather": 1}, "chosen": 1}',
            "its 'chosen' is neither a criterion's name nor null",
        ),
    ],
)
def test_an_answer_that_is_not_the_json_asked_for_is_an_error(content: str, why: str) -> None:
    with (
        _server((200, _completion(content))) as (url, seen),
        pytest.raises(ClassifierError) as info,
    ):
        _classify(_classifier(url))
    error = info.value
    assert len(seen) == 1 and (error.status, error.retryable) == (None, False)
    message = str(error)
    assert f"answered with {len(content)} characters that are not the JSON asked for ({why})" in (
        message
    )
    assert f"they begin {content.replace(KEY, '***')!r}" in message  # each under 80 characters
    assert KEY not in message and KEY not in repr(error)


# -- provider_classifier: what is sent, and its options ---------------------------------------


def test_a_provider_without_response_format_is_asked_in_words_only() -> None:
    classifier = provider_classifier(anthropic("claude-x", api_key=KEY))
    assert classifier.model == "claude-x"
    assert classifier.llm_request(REQUEST).response_format is None
    assert provider_classifier(mock("{}"), model="m").llm_request(REQUEST).response_format == {
        "type": "json_object"
    }


def test_over_a_mock_provider_the_answer_is_read_the_same_way() -> None:
    provider = mock(json.dumps({"scores": {"search": 0.4, "weather": 0.4}, "chosen": None}))
    classifier = provider_classifier(provider, model="m", name="tools")
    answer = _classify(classifier)
    assert answer.ranked == (("weather", 0.4), ("search", 0.4))
    assert (answer.chosen, answer.confidence, answer.usage) == (None, None, None)
    assert (classifier.name, answer.model) == ("tools", "m")
    assert provider.requests == [classifier.llm_request(REQUEST)]


def test_a_provider_failure_that_is_no_overload_is_final() -> None:
    provider = mock(replies=[])  # runs out at the first call: a ProviderError, no status
    classifier = provider_classifier(provider, model="m", retry_delay=0)
    with pytest.raises(ClassifierError) as info:
        _classify(classifier)
    assert (info.value.status, info.value.retryable) == (None, False)
    assert "the provider 'mock' failed (mock provider ran out of replies" in str(info.value)
    assert provider.calls == 1


def test_a_long_answer_that_is_not_json_is_quoted_by_its_beginning() -> None:
    prose = "The weather tool, surely. " * 20
    classifier = provider_classifier(mock(prose), model="m")
    assert repr(classifier) == (
        "<ProviderClassifier name='mock-classifier' provider='mock' model='m' max_retries=3>"
    )
    with pytest.raises(ClassifierError) as info:
        _classify(classifier)
    message = str(info.value)
    assert f"answered with {len(prose)} characters" in message
    assert f"they begin {prose[:79] + '…'!r}" in message


def test_a_question_with_no_criteria_is_answered_empty_without_asking() -> None:
    provider = mock("never read")
    answer = _classify(provider_classifier(provider, model="m"), ClassifyRequest("q", "Which?", ()))
    assert answer.ranked == () and answer.chosen is None and provider.calls == 0


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: provider_classifier(mock("x")), "names no model; pass model='...'"),
        (lambda: provider_classifier(mock("x"), model="m", max_retries=-1), "use 0 or more"),
        (lambda: provider_classifier(mock("x"), model="m", retry_delay=-1), "0 or more seconds"),
        (lambda: provider_classifier("openai", model="m"), "not a provider"),  # type: ignore[arg-type]
    ],
)
def test_bad_options_are_refused(make: Callable[[], Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        make()


def test_a_connection_nobody_answers_is_asked_again_then_retryable(delays: list[float]) -> None:
    """A port on 127.0.0.1 that nothing listens on: the connection fails (nothing was
    answered), so asking again later may succeed."""
    import socket

    with socket.socket() as probe:  # a free port, closed again: connecting is refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    classifier = _classifier(f"http://127.0.0.1:{port}/v1", max_retries=1)
    with pytest.raises(ClassifierError) as info:
        _classify(classifier)
    assert info.value.retryable is True and info.value.status is None
    assert delays == [0.001]  # asked twice
    assert "out of reach after 2 attempts" in str(info.value)
    assert KEY not in str(info.value)
