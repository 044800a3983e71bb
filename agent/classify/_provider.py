"""``provider_classifier``: a classifier that asks a model, through any trackway provider.

One request per question: the system text asks for a score from 0 to 1 per criterion and a
JSON answer only (``{"scores": {name: score}, "chosen": name | null}``); the user message
gives the question, the criteria with their descriptions and the state as JSON. The answer
is read strictly: anything but that JSON is a :class:`ClassifierError`, never a guess.

Retries. A rate limit or an overload (429, 529, 503, 408 and the other 5xx, as
``providers._http_errors.retryable`` counts them), or a connection that failed or timed out,
is asked again ``max_retries`` times,
waiting ``retry_delay * 2**attempt`` seconds; after that it is a ``ClassifierError`` with
``retryable=True``. Every other provider error is final at once (``retryable=False``).
An HTTP provider (``openai``, ``anthropic``) retries the same failures itself first
(its own ``max_retries``, 2 by default), so the attempts multiply: build it with
``max_retries=0`` to make this policy the only one, or keep its retries and pass
``max_retries=0`` here.
"""

from __future__ import annotations

import math
import re
import time

import anyio
import orjson

from trackway.engine import ConfigurationError

from ..messages._messages import LLMRequest, LLMResponse, Message
from ..providers._http_errors import HTTPErrors, one_line, retryable
from ..providers._provider import (
    ContextLengthError,
    Provider,
    ProviderConnectionError,
    ProviderError,
    ProviderRateLimitError,
    ProviderResponseError,
)
from ._port import ClassifierError, ClassifyAnswer, ClassifyRequest

__all__ = ["SYSTEM_PROMPT", "ProviderClassifier", "provider_classifier"]

SYSTEM_PROMPT = (
    "You are a classifier. Read the question, the criteria and the state. Score how well "
    "each criterion fits the state, from 0 (not at all) to 1 (exactly). Answer with JSON "
    'only, no other text: {"scores": {"<criterion name>": <score>, ...}, "chosen": '
    '"<criterion name>" or null}. Use the criteria names exactly as given; score every '
    "criterion; choose null when none fits."
)
"""The system text of every classifier request."""

_SHOWN = 80
"""How many characters of an answer that is not the JSON asked for a message quotes."""
_READ = 2000
"""How far into such an answer the key is scrubbed before it is cut to ``_SHOWN``."""
_FENCE = re.compile(r"\A```(?:json)?\s*(.*?)\s*```\Z", re.DOTALL | re.IGNORECASE)


async def _sleep(seconds: float) -> None:
    """The wait between attempts (a seam: tests replace it to record the delays)."""
    await anyio.sleep(seconds)


class _NotAsked(Exception):
    """The answer is not the JSON the classifier asked for; the message says why."""


def _overloaded(error: ProviderError) -> bool:
    """Whether asking again later may succeed: a rate limit, an overload of the server, or a
    connection that failed or timed out (nothing answered)."""
    if isinstance(error, (ProviderRateLimitError, ProviderConnectionError)):
        return True
    if isinstance(error, ContextLengthError) or not isinstance(error, ProviderResponseError):
        return False
    return error.status is not None and retryable(error.status)


def _scores(content: str) -> tuple[dict[str, float], str | None]:
    """The scores and the pick the answer gives, or :class:`_NotAsked`."""
    text = content.strip()
    fenced = _FENCE.match(text)
    if fenced is not None:  # models often fence JSON even when told not to
        text = fenced[1]
    if not text:
        raise _NotAsked("it is empty")
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        raise _NotAsked("it is not JSON") from None
    if not isinstance(data, dict):
        raise _NotAsked(f"it is a JSON {type(data).__name__}, not an object")
    scores = data.get("scores")
    if not isinstance(scores, dict):
        raise _NotAsked("it has no 'scores' object")
    out: dict[str, float] = {}
    for name, score in scores.items():
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            raise _NotAsked(f"the score of {name[:40]!r} is not a number")
        if not (math.isfinite(score) and 0.0 <= score <= 1.0):
            raise _NotAsked(f"the score of {name[:40]!r} is {score}, not from 0 to 1")
        out[name] = float(score)
    chosen = data.get("chosen")
    if chosen is not None and not isinstance(chosen, str):
        raise _NotAsked("its 'chosen' is neither a criterion's name nor null")
    return out, chosen


def _usage(response: LLMResponse) -> dict[str, int] | None:
    if response.usage is None:
        return None
    counts = response.usage.model_dump(exclude_none=True)
    return counts or None


class ProviderClassifier:
    """A :class:`~trackway.agent.classify.Classifier` that asks ``provider``'s model.

    ``llm_request(request)`` is the exact request it sends for a question.
    """

    def __init__(
        self,
        provider: Provider,
        *,
        model: str | None = None,
        max_retries: int = 3,
        retry_delay: float = 0.5,
        name: str | None = None,
    ) -> None:
        if not isinstance(provider, Provider):
            raise ConfigurationError(
                f"provider_classifier({provider!r}): not a provider; pass one such as "
                "openai(...), anthropic(...) or mock(...)"
            )
        chosen_model = model if model is not None else getattr(provider, "model", None)
        if not isinstance(chosen_model, str) or not chosen_model:
            raise ConfigurationError(
                f"provider_classifier(..., model={model!r}): the provider {provider.name!r} "
                "names no model; pass model='...'"
            )
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ConfigurationError(
                f"provider_classifier(..., max_retries={max_retries!r}): use 0 or more"
            )
        if (
            isinstance(retry_delay, bool)
            or not isinstance(retry_delay, (int, float))
            or not (math.isfinite(retry_delay) and retry_delay >= 0)
        ):
            raise ConfigurationError(
                f"provider_classifier(..., retry_delay={retry_delay!r}): use 0 or more seconds"
            )
        self.provider = provider
        self.model = chosen_model
        self.max_retries = max_retries
        self.retry_delay = float(retry_delay)
        self.name = name if name is not None else f"{provider.name}-classifier"
        # a provider that refuses response_format (the Messages API has none) is asked in words
        unsupported = getattr(provider, "unsupported_options", ())
        self._json_mode = "response_format" not in unsupported

    def __repr__(self) -> str:
        return (
            f"<ProviderClassifier name={self.name!r} provider={self.provider.name!r} "
            f"model={self.model!r} max_retries={self.max_retries}>"
        )

    def llm_request(self, request: ClassifyRequest) -> LLMRequest:
        """The model request that asks ``request``'s question."""
        criteria = "\n".join(f"- {c.name}: {c.description}" for c in request.criteria)
        state = orjson.dumps(
            dict(request.state),
            default=str,
            option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS,
        ).decode()
        text = (
            f"Question: {request.question}\n\n"
            f"Criteria (score each from 0 to 1):\n{criteria}\n\n"
            f"State (JSON):\n{state}"
        )
        return LLMRequest(
            model=self.model,
            system=SYSTEM_PROMPT,
            messages=(Message(role="user", content=text),),
            response_format={"type": "json_object"} if self._json_mode else None,
        )

    async def classify(self, request: ClassifyRequest) -> ClassifyAnswer:
        """Ask the model; the criteria it scored, highest first (ties in criteria order).

        ``chosen`` is the model's pick when it is an offered criterion, ``confidence`` its
        score; ``latency_ms`` runs from the first attempt to the answer, waits included.
        A request with no criteria is answered empty without asking.
        """
        if not request.criteria:
            return ClassifyAnswer(ranked=(), model=self.model)
        llm_request = self.llm_request(request)
        started = time.perf_counter()
        response = await self._complete(llm_request, request)
        latency_ms = (time.perf_counter() - started) * 1000.0
        try:
            scores, chosen = _scores(response.content)
        except _NotAsked as why:
            raise self._not_asked(response.content, str(why), request) from None
        order: dict[str, int] = {}  # a criterion's place (the first, if a name repeats)
        for index, criterion in enumerate(request.criteria):
            order.setdefault(criterion.name, index)
        ranked = sorted(
            ((name, score) for name, score in scores.items() if name in order),
            key=lambda pair: (-pair[1], order[pair[0]]),
        )
        picked = chosen if chosen in order else None
        return ClassifyAnswer(
            ranked=tuple(ranked),
            chosen=picked,
            confidence=scores.get(picked) if picked is not None else None,
            usage=_usage(response),
            latency_ms=latency_ms,
            model=self.model,
        )

    async def _complete(self, llm_request: LLMRequest, request: ClassifyRequest) -> LLMResponse:
        """The provider's answer, asking again on a rate limit or an overload."""
        for attempt in range(self.max_retries + 1):
            try:
                return await self.provider.complete(llm_request)
            except ProviderError as exc:
                said = self._scrub(str(exc))
                where = f"classifier {self.name!r}, question {request.question_id!r}"
                if not _overloaded(exc):
                    raise ClassifierError(
                        f"{where}: the provider {self.provider.name!r} failed ({said}). Only a "
                        "rate limit, an overload or a failed connection is asked again; fix "
                        "what the error names.",
                        status=exc.status,
                        retryable=False,
                    ) from exc
                if attempt == self.max_retries:
                    tries = attempt + 1
                    raise ClassifierError(
                        f"{where}: the provider {self.provider.name!r} is still rate limited, "
                        f"overloaded or out of reach after {tries} "
                        f"attempt{'' if tries == 1 else 's'} "
                        f"({said}). Retry later, or raise provider_classifier(..., "
                        f"max_retries=) (now {self.max_retries}).",
                        status=exc.status,
                        retryable=True,
                    ) from exc
            await _sleep(self.retry_delay * 2**attempt)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _scrub(self, text: str) -> str:
        """``text`` on one line, every echo of the provider's API key replaced by ``***``."""
        if isinstance(self.provider, HTTPErrors):
            return self.provider._scrub(text)
        return one_line(text)

    def _not_asked(self, content: str, why: str, request: ClassifyRequest) -> ClassifierError:
        why = self._scrub(why)  # it may name a key of the answer
        shown = self._scrub(content[:_READ])
        if len(shown) > _SHOWN:
            shown = shown[: _SHOWN - 1] + "…"
        return ClassifierError(
            f"classifier {self.name!r}, question {request.question_id!r}: the model "
            f"{self.model!r} answered with {len(content)} characters that are not the JSON "
            f"asked for ({why}); they begin {shown!r}. The answer must be "
            '{"scores": {"<criterion>": <0..1>, ...}, "chosen": "<criterion>" or null}; '
            "a model that does not keep to it needs a stronger model or a JSON mode.",
            retryable=False,
        )


def provider_classifier(
    provider: Provider,
    *,
    model: str | None = None,
    max_retries: int = 3,
    retry_delay: float = 0.5,
    name: str | None = None,
) -> ProviderClassifier:
    """A classifier that asks ``provider``'s model (``model``, else the provider's own).

    Rate limits and overloads are asked again ``max_retries`` times, waiting
    ``retry_delay * 2**attempt`` seconds; an HTTP provider retries them itself first, so
    build it with ``max_retries=0`` to make these the only retries. Every failure is a
    :class:`ClassifierError` (``status``, ``retryable``) whose message never holds the API
    key. ``name`` defaults to ``"<provider name>-classifier"``.
    """
    return ProviderClassifier(
        provider, model=model, max_retries=max_retries, retry_delay=retry_delay, name=name
    )
