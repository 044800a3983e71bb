"""How an HTTP provider reports a failure: every HTTP failure becomes a
:class:`ProviderError` here, once, quoting server text scrubbed of the API key and cut.

:class:`HTTPErrors` is the half of :class:`~trackway.agent.providers._http.HTTPProvider` that builds
messages; it reads the provider's configuration (name, base URL, key, limits) and the
response of the attempt that failed.
"""

from __future__ import annotations

import http
import re
from typing import Any, NoReturn

import httpx2
import orjson

from ._provider import (
    ContextLengthError,
    ModelNotFoundError,
    ProviderAuthError,
    ProviderConnectionError,
    ProviderError,
    ProviderRateLimitError,
    ProviderResponseError,
)
from ._scrub import MIN_SCRUBBED_KEY, Scrubber

__all__ = [
    "MAX_RETRY_AFTER",
    "SNIPPET",
    "Answer",
    "HTTPErrors",
    "classify",
    "one_line",
    "retryable",
    "text_of",
]

MAX_RETRY_AFTER = 60.0
"""A server asking for a longer wait than this (seconds) gets an error, not a nap."""
SNIPPET = 300
"""How many characters of server text a message quotes at most."""


def one_line(text: str) -> str:
    """``text`` on one line, its runs of whitespace as single spaces."""
    return " ".join(text.split())


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def text_of(content: bytes, response: httpx2.Response) -> str:
    return content.decode(response.encoding or "utf-8", "replace")


class Answer:
    """One attempt's response and, unless it is a stream being held open, its body."""

    __slots__ = ("content", "cut", "response")

    def __init__(self, response: httpx2.Response, content: bytes = b"", cut: bool = False) -> None:
        self.response = response
        self.content = content
        self.cut = cut  # the body went on past the bytes read


def retryable(status: int) -> bool:
    return status in (408, 429) or status >= 500


def _phrase(status: int) -> str:
    """The standard reason phrase of ``status`` (``""`` for a status HTTP does not name)."""
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


_AUTH_CODES = frozenset(
    {"authentication_error", "invalid_api_key", "permission_error", "unauthorized", "forbidden"}
)
_AUTH_WORDS = re.compile(
    r"invalid (api )?key|incorrect api key|api key (is )?(invalid|missing|not valid)|"
    r"authentication (error|failed|required)|unauthori[sz]ed|no connected db"
)
_MODEL_WORDS = re.compile(
    r"invalid model|unknown model|no such model|model[^.]{0,80}(not found|does not exist|"
    r"is not supported|not available)"
)
_CONTEXT_CODES = frozenset({"context_length_exceeded", "context_window_exceeded"})
_CONTEXT_WORDS = re.compile(
    r"context (length|window|size)|maximum context|too many tokens|prompt is too long|"
    r"exceeds? (the )?(model'?s? )?(context|maximum)"
)


def classify(status: int, code: str, message: str) -> str:
    """What a failed answer means, from its status and the vendor's own error body:
    ``auth``, ``model``, ``context``, ``rate``, ``overloaded`` or ``other``.

    The body wins over the status for client errors: a gateway answers an unknown model or a
    bad key with 400, and a context overflow with 400 or 413. litellm's proxy without a
    database answers any key but its master key with 400 "No connected db."
    """
    if status == 429 or code in ("rate_limit_error", "rate_limit_exceeded"):
        return "rate"
    if status in (503, 529) or code == "overloaded_error" or "overloaded" in message:
        return "overloaded"
    client = 400 <= status < 500
    if status in (401, 403) or (client and (code in _AUTH_CODES or _AUTH_WORDS.search(message))):
        return "auth"
    if code in _CONTEXT_CODES or (
        (client or status == 500) and _CONTEXT_WORDS.search(message) is not None
    ):
        return "context"
    if (status == 404 and "model" in message) or (
        client and (code == "model_not_found" or _MODEL_WORDS.search(message) is not None)
    ):
        return "model"
    return "other"


class HTTPErrors:
    """Messages for every way an HTTP call fails, naming the server and what to do."""

    name: str
    key_env: str
    api_label: str
    stream_item: str
    base_url: str
    timeout: float
    max_retries: int
    max_error_body: int
    max_response_body: int
    retry_read_timeouts: bool
    _api_key: str | None
    _scrubber_cache: tuple[Scrubber | None] | None

    def _malformed(self, content: bytes | str, why: str) -> ProviderResponseError:
        said = repr(self._quote(content))
        return ProviderResponseError(
            self._scrub(
                f"{self.name}: the server at {self.base_url} answered, but not with "
                f"{self.api_label} ({why}): {said}. Check that base_url "
                f"points at {self._endpoint_hint()}."
            ),
            quoted=(why, said),
        )

    def _malformed_event(
        self, number: int, event: str, data: Any, why: str
    ) -> ProviderResponseError:
        named, said = repr(event), repr(self._quote(orjson.dumps(data)))
        return ProviderResponseError(
            self._scrub(
                f"{self.name}: the server at {self.base_url} streamed {self.stream_item} "
                f"that is malformed (number {number} of the stream, event {named}): {why}: "
                f"{said}. Check that base_url points at "
                f"{self._endpoint_hint()}, and that the server streams {self.api_label}."
            ),
            quoted=(named, why, said),
        )

    def _too_large(self, response: httpx2.Response) -> ProviderResponseError:
        return ProviderResponseError(
            f"{self.name}: the answer from {self.base_url} is larger than "
            f"max_response_body={self.max_response_body} bytes, so it was not read past that. "
            f"If answers this large are expected, raise {self.name}(..., "
            "max_response_body=...); otherwise check that base_url points at "
            f"{self._endpoint_hint()}.",
            status=response.status_code,
            quoted=(),
        )

    def _endpoint_hint(self) -> str:
        return "the right API"

    def _scrubber(self) -> Scrubber | None:
        if self._scrubber_cache is None:
            key = one_line(self._api_key or "")
            self._scrubber_cache = (Scrubber(key) if len(key) >= MIN_SCRUBBED_KEY else None,)
        return self._scrubber_cache[0]

    def _scrub(self, text: str) -> str:
        """``text`` on one line, every echo of the API key in it replaced by ``***``."""
        flat = one_line(text)
        scrubber = self._scrubber()
        return scrubber.scrub(flat) if scrubber is not None else flat

    def _quote(self, content: bytes | str, limit: int = SNIPPET, *, whole: bool = True) -> str:
        """Server or exception text as a message quotes it: on one line, scrubbed of the
        API key, then cut to ``limit`` characters.

        Scrubbing comes first, so a key the cut falls into is still replaced whole. A large
        text is scrubbed only as far as the quote reaches: a window that grows until it holds
        ``limit`` scrubbed characters, leaving out its last characters, which may begin an
        echo of the key that runs past the window. ``whole=False`` says ``content`` itself
        was cut (a body read up to a cap): its end is left out the same way.
        """
        scrubber = self._scrubber()
        margin = (scrubber.reach if scrubber is not None else 0) + 8
        window = 4 * limit + 2 * margin
        while True:
            piece = content[:window]
            text = piece.decode("utf-8", "replace") if isinstance(piece, bytes) else piece
            flat = one_line(text)
            read_all = len(piece) >= len(content)
            if read_all and whole:
                return _cut(scrubber.scrub(flat) if scrubber is not None else flat, limit)
            end = max(0, len(flat) - margin)
            shown = scrubber.scrub_before(flat, end) if scrubber is not None else flat[:end]
            if len(shown) > limit:
                return _cut(shown, limit)
            if read_all:
                return shown + "…"
            window *= 4

    def _retries_note(self, attempts: int) -> str:
        return "" if attempts == 1 else f" after {attempts} attempts"

    def _timeout_error(self, exc: httpx2.TimeoutException, attempts: int) -> ProviderError:
        if isinstance(exc, httpx2.ReadTimeout) and not self.retry_read_timeouts:
            return ProviderConnectionError(
                f"{self.name}: no answer from {self.base_url} within timeout={self.timeout} "
                f"seconds{self._retries_note(attempts)} ({type(exc).__name__}). The server "
                "had the request, so it was not sent again: it may still be generating, and "
                "a second request would wait behind it. Raise timeout= for long generations, "
                "or pass retry_read_timeouts=True to send it again anyway.",
                quoted=(),
            )
        return ProviderConnectionError(
            f"{self.name}: no answer from {self.base_url} within timeout={self.timeout} "
            f"seconds{self._retries_note(attempts)} ({type(exc).__name__}). Raise timeout= "
            "for long generations, or check that the server is up.",
            quoted=(),
        )

    def _unfinished(self, outcome: Any, attempts: int) -> ProviderError:
        events = outcome.unfinished
        what = (
            "without a single event"
            if events == 0
            else f"after {events} event{'' if events == 1 else 's'}"
        )
        if outcome.hollow is not None:
            what = outcome.hollow
        sent = " and the text so far was streamed" if outcome.yielded else ""
        return ProviderResponseError(
            f"{self.name}: the stream from {self.base_url} ended before the answer finished "
            f"({what}{self._retries_note(attempts)}{sent}). Some servers end a stream this "
            "way when the request does not fit the model's context or when they cannot "
            "stream a tool call (llama.cpp's server does both): shorten the conversation, or "
            "run with Agent.create(..., stream=False) to read the server's own reason.",
            quoted=(),
        )

    def _connection_error(self, exc: httpx2.TransportError, attempts: int) -> ProviderError:
        cause = self._quote(str(exc) or type(exc).__name__)
        if isinstance(exc, httpx2.ConnectError):
            return ProviderConnectionError(
                f"{self.name}: could not connect to {self.base_url}"
                f"{self._retries_note(attempts)} ({cause}): nothing is listening at "
                f"{self.base_url}; start the server or fix base_url.",
                quoted=(cause,),
            )
        return ProviderConnectionError(
            f"{self.name}: the connection to {self.base_url} failed"
            f"{self._retries_note(attempts)} ({type(exc).__name__}: {cause}). Check the "
            "server and the network, or raise max_retries=.",
            quoted=(cause,),
        )

    def _broken_stream(self, exc: httpx2.TransportError) -> ProviderError:
        """A failure while reading a response that already started (never retried)."""
        if isinstance(exc, httpx2.TimeoutException):
            return ProviderConnectionError(
                f"{self.name}: the stream from {self.base_url} stalled: no data within "
                f"timeout={self.timeout} seconds ({type(exc).__name__}). Raise timeout= for "
                "slow servers.",
                quoted=(),
            )
        cause = self._quote(str(exc))
        return ProviderConnectionError(
            f"{self.name}: the connection to {self.base_url} dropped mid-stream "
            f"({type(exc).__name__}: {cause}). Retry the call.",
            quoted=(cause,),
        )

    def _vendor_error(self, answer: Answer) -> tuple[str, str]:
        """The error's code (or type) and message as the server's JSON body gives them
        (``""`` for what it does not say); both lower-cased, for classifying."""
        try:
            data = orjson.loads(answer.content)
        except orjson.JSONDecodeError:
            return "", text_of(answer.content, answer.response).lower()
        if not isinstance(data, dict):
            return "", ""
        error = data.get("error")
        code = message = ""
        if isinstance(error, dict):
            for field in ("code", "type"):
                value = error.get(field)
                if isinstance(value, str) and value and not value.isdigit():
                    code = value
                    break
            value = error.get("message")
            message = value if isinstance(value, str) else ""
        elif isinstance(error, str):
            message = error
        for field in ("message", "detail"):
            value = data.get(field)
            if isinstance(value, str):
                message = f"{message} {value}"
        return code.lower(), message.lower()

    def _detail(self, answer: Answer) -> str:
        """The server's own words about a failed call (code and message), scrubbed, cut."""
        response = answer.response
        reason = self._quote(response.reason_phrase)
        whole = not answer.cut
        try:
            data = orjson.loads(answer.content)
        except orjson.JSONDecodeError:
            return self._quote(text_of(answer.content, response), whole=whole) or reason
        parts: list[str] = []
        if isinstance(data, dict):
            error = data.get("error")
            if isinstance(error, dict):
                code = error.get("code") or error.get("type")
                if isinstance(code, str) and code:
                    parts.append(code)
                message = error.get("message")
                if isinstance(message, str) and message:
                    parts.append(message)
            elif isinstance(error, str) and error:
                parts.append(error)
            for field in ("message", "detail"):
                value = data.get(field)
                if isinstance(value, str) and value and value not in parts:
                    parts.append(value)
        if parts:
            return self._quote(": ".join(parts)) or reason
        return self._quote(text_of(answer.content, response), whole=whole) or reason

    def _raise_status(
        self,
        answer: Answer,
        model: Any,
        *,
        attempts: int,
        asked_wait: float | None = None,
    ) -> NoReturn:
        response = answer.response
        status = response.status_code
        reason = self._quote(response.reason_phrase)
        detail = self._detail(answer).removeprefix(reason).removeprefix(": ")
        head = f"{status} {reason}" if reason else str(status)
        said = f"{head}: {detail}" if detail else head
        # the server's words, masked under a redaction policy (an error body can echo the
        # request); the status line's standard wording is kept
        quoted = (detail,) if reason == _phrase(status) else (reason, detail)
        if answer.cut:
            said += (
                f"; the body was cut at {self.max_error_body} bytes, raise max_error_body= to "
                "read more"
            )
        where = self.base_url
        tried = self._retries_note(attempts)
        kind = classify(status, *self._vendor_error(answer))
        if kind == "auth":
            self._raise_auth(status, where, said, model, quoted)
        if kind == "model":
            raise ModelNotFoundError(
                f"{self.name}: the server at {where} does not know model {model!r} "
                f"({said}). Check the model name{self._models_hint()}.",
                status=status,
                quoted=quoted,
            )
        if kind == "context":
            raise ContextLengthError(
                f"{self.name}: the request does not fit the model's context at {where} "
                f"({said}). Shorten the conversation or the tool results, or lower "
                "max_tokens=.",
                status=status,
                quoted=quoted,
            )
        if status == 404:
            raise ProviderResponseError(
                f"{self.name}: nothing at {response.request.url} ({said}). Check base_url: it "
                f"should point at {self._endpoint_hint()}.",
                status=status,
                quoted=quoted,
            )
        if kind == "rate":
            if asked_wait is not None and asked_wait > MAX_RETRY_AFTER:
                text = (
                    f"{self.name}: rate limited at {where} ({said}); the server asks to wait "
                    f"{asked_wait:.0f} seconds (retry-after), longer than the "
                    f"{MAX_RETRY_AFTER:.0f} seconds trackway waits. Retry later."
                )
            else:
                text = (
                    f"{self.name}: still rate limited at {where}{tried} ({said}). Wait and "
                    f"retry, send fewer requests, or raise max_retries= (now {self.max_retries})."
                )
            raise ProviderRateLimitError(text, status=status, quoted=quoted)
        if kind == "overloaded":
            raise ProviderResponseError(
                f"{self.name}: the server at {where} is overloaded{tried} ({said}). Retry "
                f"later, or raise max_retries= (now {self.max_retries}).",
                status=status,
                quoted=quoted,
            )
        if retryable(status):
            raise ProviderResponseError(
                f"{self.name}: the server at {where} failed{tried} ({said}). That is its own "
                "error, quoted; if it names the request (the messages, the tools, an option), "
                "fix that, otherwise retry later.",
                status=status,
                quoted=quoted,
            )
        raise ProviderResponseError(
            f"{self.name}: the server at {where} rejected the request ({said}).",
            status=status,
            quoted=quoted,
        )

    def _raise_auth(
        self, status: int, where: str, said: str, model: Any, quoted: tuple[str, ...]
    ) -> NoReturn:
        how = f"set {self.key_env} or pass {self.name}(..., api_key=...)"
        if not self._api_key:
            withheld = self._withheld_env_key()
            text = (
                f"{self.name}: the server at {where} wants an API key and none was sent "
                f"({said}). To send one, {how}."
            )
            if withheld:
                text += (
                    f" ({self.key_env} is set, but an environment key is sent only to the "
                    f"vendor's own host; pass api_key= to send it to {where}.)"
                )
        elif status == 403:
            text = (
                f"{self.name}: the server at {where} refused this request for the API key "
                f"({said}). Check that the key may use model {model!r}; to use another "
                f"key, {how}."
            )
        else:
            text = (
                f"{self.name}: the server at {where} refused the API key ({said}). "
                f"Check the key: {how}."
            )
        raise ProviderAuthError(text, status=status, quoted=quoted)

    def _withheld_env_key(self) -> bool:
        return False

    def _models_hint(self) -> str:
        return ""
