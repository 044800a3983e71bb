"""``mock_classifier``: a scripted classifier for tests and demos (no model, no network).

It answers from a script, one answer per call in order, or from a function of each request,
and keeps every request it was handed (``.calls``). A scripted answer is served as written:
its names (even one the request did not offer) and its order. The stage that asks a
classifier keeps only the names it offered, so a script can also stand for a classifier that
answers off the list.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from trackway.engine import ConfigurationError

from ..providers._mock import refuse_unknown_keys
from ._port import ClassifierError, ClassifyAnswer, ClassifyRequest

__all__ = ["MockClassifier", "MockClassifierExhaustedError", "mock_classifier"]

AnswerLike = ClassifyAnswer | Mapping[str, Any] | ClassifierError
"""One scripted answer: a :class:`ClassifyAnswer`, a dict of its fields, or an error to raise."""
Script = Sequence[AnswerLike] | Callable[[ClassifyRequest], AnswerLike]

_ANSWER_KEYS = ("ranked", "chosen", "confidence", "usage", "latency_ms", "model")
_RANK_KEYS = ("name", "score")
_FORMS = (
    "a ClassifyAnswer, a dict {'ranked': [['name', 0.9], ...], 'chosen': 'name', "
    "'confidence': 0.9, 'usage': {...}} or a ClassifierError to raise"
)


class MockClassifierExhaustedError(ClassifierError):
    """The scripted answers ran out: the classifier was asked more often than the script said."""


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigurationError(f"{what} is {value!r}; use a number, e.g. 0.9")
    number = float(value)
    if not math.isfinite(number):
        raise ConfigurationError(f"{what} is {value!r}; use a finite number, e.g. 0.9")
    return number


def _rank(item: Any, what: str) -> tuple[str, float]:
    """One ranked entry, ``["name", score]`` or ``{"name": ..., "score": ...}``."""
    if isinstance(item, Mapping):
        refuse_unknown_keys(item, _RANK_KEYS, what, ConfigurationError)
        if "name" not in item or "score" not in item:
            raise ConfigurationError(f"{what} is {item!r}; write {{'name': 'x', 'score': 0.9}}")
        name, score = item["name"], item["score"]
    elif isinstance(item, (list, tuple)) and len(item) == 2:
        name, score = item
    else:
        raise ConfigurationError(
            f"{what} is {item!r}; write ['name', 0.9] or {{'name': 'name', 'score': 0.9}}"
        )
    if not isinstance(name, str) or not name:
        raise ConfigurationError(f"{what} names {name!r}; a criterion's name is a non-empty str")
    return name, _number(score, f"{what}'s score")


def _usage(value: Any, what: str) -> dict[str, int] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ConfigurationError(f"{what} is {value!r}; use a dict, e.g. {{'input_tokens': 12}}")
    out: dict[str, int] = {}
    for key, count in value.items():
        if not isinstance(key, str) or isinstance(count, bool) or not isinstance(count, int):
            raise ConfigurationError(
                f"{what} has {key!r}: {count!r}; a usage entry is a str and a whole number"
            )
        out[key] = count
    return out


def _as_answer(item: Any, n: int) -> ClassifyAnswer | ClassifierError:
    """A scripted item as the answer (or the error) it stands for, checked once."""
    what = f"mock classifier answer {n + 1}"
    if isinstance(item, (ClassifyAnswer, ClassifierError)):
        return item
    if not isinstance(item, Mapping):
        raise ConfigurationError(f"{what} is {item!r}; an answer is {_FORMS}")
    refuse_unknown_keys(item, _ANSWER_KEYS, what, ConfigurationError)
    ranked_in = item.get("ranked", ())
    if isinstance(ranked_in, (str, bytes)) or not isinstance(ranked_in, Sequence):
        raise ConfigurationError(
            f"{what}: 'ranked' is {ranked_in!r}; use a list of ['name', score] pairs"
        )
    ranked = tuple(_rank(r, f"{what}, ranked[{i}]") for i, r in enumerate(ranked_in))
    chosen = item.get("chosen")
    if chosen is not None and not isinstance(chosen, str):
        raise ConfigurationError(f"{what}: 'chosen' is {chosen!r}; use a criterion's name or None")
    confidence = item.get("confidence")
    if confidence is not None:
        confidence = _number(confidence, f"{what}: 'confidence'")
    elif chosen is not None:  # as a provider classifier says it: the chosen one's score
        confidence = next((score for name, score in ranked if name == chosen), None)
    model = item.get("model")
    if model is not None and not isinstance(model, str):
        raise ConfigurationError(f"{what}: 'model' is {model!r}; use a str or None")
    return ClassifyAnswer(
        ranked=ranked,
        chosen=chosen,
        confidence=confidence,
        usage=_usage(item.get("usage"), f"{what}: 'usage'"),
        latency_ms=_number(item.get("latency_ms", 0.0), f"{what}: 'latency_ms'"),
        model=model,
    )


class MockClassifier:
    """Answers from a script (a list, one answer per call) or a function of each request.

    ``calls`` keeps every request it was handed, in order, including the ones it answered by
    raising. A list script is checked when it is given, so a misspelled key fails at once.
    """

    def __init__(self, script: Script, *, name: str = "mock-classifier") -> None:
        self.name = name
        self.calls: list[ClassifyRequest] = []
        self._respond: Callable[[ClassifyRequest], AnswerLike] | None = None
        self._answers: list[ClassifyAnswer | ClassifierError] = []
        if callable(script):
            self._respond = script
        elif isinstance(script, (str, bytes, Mapping)) or not isinstance(script, Sequence):
            raise ConfigurationError(
                f"mock_classifier({script!r}): the script is a list of answers (each {_FORMS}) "
                "or a function of the request that returns one"
            )
        else:
            self._answers = [_as_answer(item, n) for n, item in enumerate(script)]

    async def classify(self, request: ClassifyRequest) -> ClassifyAnswer:
        """The next scripted answer (or the scripted error, raised)."""
        n = len(self.calls)
        self.calls.append(request)
        if self._respond is not None:
            answer = _as_answer(self._respond(request), n)
        elif n < len(self._answers):
            answer = self._answers[n]
        else:
            count = len(self._answers)
            raise MockClassifierExhaustedError(
                f"mock classifier {self.name!r} ran out of answers: it was asked for answer "
                f"{n + 1} (question {request.question_id!r}) but the script has {count}; add "
                "answers to the script, or pass a function of the request instead of a list"
            )
        if isinstance(answer, ClassifierError):
            raise answer
        return answer

    def __repr__(self) -> str:
        script = "a function" if self._respond is not None else f"{len(self._answers)} answers"
        return f"<MockClassifier name={self.name!r} script={script} calls={len(self.calls)}>"


def mock_classifier(script: Script, *, name: str = "mock-classifier") -> MockClassifier:
    """A scripted classifier: ``script`` is a list consumed one answer per call, or a function
    ``(ClassifyRequest) -> answer``.

    An answer is a :class:`ClassifyAnswer`, a dict of its fields (``ranked`` as
    ``[["name", 0.9], ...]`` or ``[{"name": ..., "score": ...}]``, and any of ``chosen``,
    ``confidence``, ``usage``, ``latency_ms``, ``model``), or a :class:`ClassifierError`,
    raised instead of answering. Without ``confidence`` a dict's is the chosen one's score;
    ``latency_ms`` is 0 unless scripted. A key the dict does not take is refused naming the
    closest one (a ``ConfigurationError``). A call past the end of a list raises
    :class:`MockClassifierExhaustedError`.
    """
    return MockClassifier(script, name=name)
