"""The agent layer's errors (the provider errors live with the provider interface).

::

    TrackwayError
    └── AgentError                   the agent layer
        ├── AgentBuildError          the agent was configured wrongly       (ValueError too)
        │   └── TemplateError            a voice template with an unknown key or placeholder
        ├── InvalidRunInputError     run() was given input it cannot take   (ValueError too)
        │   └── ConversationFormatError   a conversation document this version cannot read
        ├── RunInFlightError         follow_up() while a turn is in flight
        ├── AgentNotRunError         asked for the last run before any run
        ├── NoConversationError      follow_up() before any run, or after a refused one
        ├── PendingQuestionError     follow_up() while the last run waits for a person
        ├── ResumeIdentityConflictError  resume() for another identity than the paused run's
        ├── DecisionRequiredError    a check-in answered with something else than a decision
        ├── InvalidAnswerError       an answer the paused question cannot take
        ├── RunCheckpointError       a provider failure mid-run, with the conversation so far
        │                            (also the ProviderError subclass that failed)
        ├── OutputSchemaError        an answer that does not parse into the output schema
        │   └── OutputContractError  run_typed() got no answer matching the schema (after the
        │                            run's retries and the fallback chain, when configured)
        ├── CachePolicyError         a system_prompt_cache_policy function raised or answered
        │                            something other than 'always' or 'never'
        ├── ReplayDivergence         a replay committed something the recording did not
        ├── MiddlewareError          a middleware link returned what its door cannot take
        ├── MiddlewareFailedError    a middleware link raised (its exception is the cause)
        ├── MessageDeniedError       a middleware link denied the person's message or the answer
        │   ├── InputRefusedError        at the input door: no model call, no conversation
        │   └── AnswerDeniedError        at the output door: the answer is withheld
        ├── UnsupportedValuesError   the evidence gate ('rails') withheld an answer stating values
        │                            no tool result of the turn carried
        └── RedactedRecordError      served_at/replay on a record whose conversation was hidden
"""

from __future__ import annotations

from typing import Any

from trackway.engine import DocumentError, StageError, TrackwayError

__all__ = [
    "AgentBuildError",
    "AgentError",
    "AgentNotRunError",
    "AnswerDeniedError",
    "ArtifactsEmbedError",
    "CachePolicyError",
    "ClockRequiredError",
    "ConversationFormatError",
    "DecisionRequiredError",
    "InputRefusedError",
    "InvalidAnswerError",
    "InvalidRunInputError",
    "MessageDeniedError",
    "MiddlewareError",
    "MiddlewareFailedError",
    "NoConversationError",
    "OutputContractError",
    "OutputSchemaError",
    "PendingQuestionError",
    "RedactedRecordError",
    "ReplayDivergence",
    "ResumeIdentityConflictError",
    "RunCheckpointError",
    "RunInFlightError",
    "TemplateError",
    "ThinkingHandlerError",
    "UnsupportedValuesError",
]


class AgentError(TrackwayError):
    """Base class of the agent layer's own errors (providers have :class:`ProviderError`)."""


class AgentBuildError(AgentError, ValueError):
    """The agent was configured wrongly (e.g. two tools with one name, or a ``configure()``
    that returned a setting it cannot take; raised from ``run`` as itself, with the
    engine's :class:`~trackway.engine.StageError` on ``stage_error``)."""

    stage_error: StageError | None = None


class TemplateError(AgentBuildError):
    """A voice setting that cannot be used: a template key no line is worded by, a
    placeholder the key does not offer, a per-tool key for a tool the agent does not have,
    or an empty ``app_name``. The message names the key and the valid ones."""


class InvalidRunInputError(AgentError, ValueError):
    """``run`` was given input it cannot take; nothing ran."""


class ClockRequiredError(InvalidRunInputError):
    """A run under ``.time()`` declared no zone and the builder has none to fall back on (the
    server's zone is never used); nothing ran."""


class ConversationFormatError(InvalidRunInputError, DocumentError):
    """A conversation document (``Conversation.from_json``) this version cannot read."""

    def __init__(
        self,
        message: str,
        *,
        document: str = "conversation",
        field: str | None = None,
        source: str | None = None,
    ) -> None:
        DocumentError.__init__(self, message, document=document, field=field, source=source)


class RunInFlightError(AgentError, RuntimeError):
    """A call bound to the agent's last conversation (``follow_up``), or a change to the
    agent (``attach``, ``override``), while a turn is in flight; ``run`` itself may overlap."""


class AgentNotRunError(AgentError, RuntimeError):
    """The agent was asked about its last run (``snapshot()``...) before it ran."""


class OutputSchemaError(AgentError, ValueError):
    """An answer that does not parse into the agent's output schema (``parse_output``,
    ``parse_output_async``). ``raw_output`` is the text as given (kept for triage);
    ``stage`` says which half failed: ``"json-parse"`` (not JSON), ``"schema-validate"``
    (JSON, not the model) or ``"stop-reason"`` (the provider stopped a native answer:
    refused, cut at ``max_tokens``, out of context); ``error`` is the validator's message
    as the run quotes it (``"loc: msg"``); ``path`` the failing field (``"items.0.price"``),
    when there is one. ``chain``: the fallback tiers tried, as rows (``{tier, outcome,
    error?}``), when ``.output_fallback()`` was engaged and every tier failed."""

    def __init__(
        self,
        message: str,
        *,
        raw_output: str,
        stage: str,
        error: str,
        path: str | None = None,
        chain: tuple[dict[str, Any], ...] = (),
    ) -> None:
        super().__init__(message)
        self.raw_output = raw_output
        self.stage = stage
        self.error = error
        self.path = path
        self.chain = chain


class OutputContractError(OutputSchemaError):
    """``run_typed`` could not get an answer that matches the output schema: the run's
    retries ran out (or an output link broke the answer), and the fallback chain, when
    configured, served nothing valid. An :class:`OutputSchemaError` about the run's last
    answer (``raw_output`` is it), with the run's own report: ``attempts`` (answers judged),
    ``retries_spent``, ``broken_by`` (the output link whose rewrite broke a valid answer),
    ``stop_reason`` (native strategy), ``fallback_configured``; ``last_error`` and
    ``answer`` are ``error`` and ``raw_output`` by their earlier names."""

    def __init__(
        self,
        message: str,
        *,
        attempts: int,
        last_error: str,
        answer: str,
        stage: str = "schema-validate",
        path: str | None = None,
        retries_spent: int | None = None,
        broken_by: str | None = None,
        stop_reason: str | None = None,
        fallback_configured: bool = False,
        chain: tuple[dict[str, Any], ...] = (),
    ) -> None:
        super().__init__(
            message, raw_output=answer, stage=stage, error=last_error, path=path, chain=chain
        )
        self.attempts = attempts
        self.last_error = last_error
        self.answer = answer
        self.retries_spent = attempts - 1 if retries_spent is None else retries_spent
        self.broken_by = broken_by
        self.stop_reason = stop_reason
        self.fallback_configured = fallback_configured


class CachePolicyError(AgentError, RuntimeError):
    """A ``system_prompt_cache_policy`` function raised, or answered something other than
    ``"always"`` or ``"never"``: the run stops before the call (what was committed stays)."""


class ReplayDivergence(AgentError):
    """A replay committed something other than the recording did."""

    def __init__(self, message: str, *, stage_path: str, key: str | None) -> None:
        super().__init__(message)
        self.stage_path = stage_path
        self.key = key


class NoConversationError(AgentError, RuntimeError):
    """``follow_up`` was called before this agent completed a run, or ``follow_up`` /
    ``checkpoint()`` after a run whose message an input link refused: there is nothing to
    continue (run first, or pass ``continue_from=`` a conversation you kept)."""


class MiddlewareError(AgentError, TypeError):
    """A middleware link returned what its door cannot take (the message names the link,
    the door and the decisions it may return; raised from ``run`` as itself, with the
    engine's :class:`~trackway.engine.StageError` on ``stage_error``)."""

    stage_error: StageError | None = None


class MiddlewareFailedError(AgentError, RuntimeError):
    """A middleware link raised. The message names the link and the door; the link's own
    exception is the ``__cause__``. Raised from ``run`` as itself (the engine's
    :class:`~trackway.engine.StageError` on ``stage_error``): at the input door before any
    model call, at the output door with the model's answer kept in the record."""

    stage_error: StageError | None = None

    def __init__(self, message: str, *, middleware: str, door: str, quoted: str) -> None:
        super().__init__(message)
        self.middleware = middleware
        self.door = door
        self.quoted = (quoted,)  # what the link's exception said: masked under errors=True


class ThinkingHandlerError(AgentError):
    """A thinking handler (``.thinking_handler(fn)``) raised, or returned something other
    than a ``(text, blocks)`` pair. The message names the handler (``.handler``) and the
    model call (``.k``); a raised exception is the ``__cause__``. Raised from ``run`` as
    itself, with the engine's :class:`~trackway.engine.StageError` on ``stage_error``; the
    model's raw answer is kept in the record (``response``)."""

    stage_error: StageError | None = None

    def __init__(self, message: str, *, handler: str, k: int) -> None:
        super().__init__(message)
        self.handler = handler
        self.k = k


class MessageDeniedError(AgentError):
    """A middleware link denied a message: ``door`` (``"input"`` or ``"output"``),
    ``middleware`` (the link's name), ``reason`` (what it said), ``run_id`` (the run, kept
    in the record with the decision and its end)."""

    def __init__(
        self, message: str, *, door: str, middleware: str, reason: str, run_id: str
    ) -> None:
        super().__init__(message)
        self.door = door
        self.middleware = middleware
        self.reason = reason
        self.run_id = run_id


class InputRefusedError(MessageDeniedError):
    """An input link refused the person's message: no model was called (nothing billed)
    and no conversation was admitted (``checkpoint()`` and ``follow_up`` raise
    :class:`NoConversationError` until a run is admitted)."""


class AnswerDeniedError(MessageDeniedError):
    """An output link denied the model's answer: it is withheld from the caller (the
    record keeps it, as the model gave it, in ``response``)."""


class UnsupportedValuesError(AgentError):
    """The evidence gate under ``posture="rails"`` withheld the answer: after one revision
    ask it still stated names or numbers that no tool result of the turn carried.
    ``verdict`` is the committed verdict (``agent.unsupported_values()``: ``values``,
    ``candidates``, ``revised``, ``refused``...); ``run_id`` names the run, whose record
    keeps the model's answer (``response``). The message counts the values and never quotes
    them."""

    def __init__(self, message: str, *, verdict: dict[str, Any], run_id: str) -> None:
        super().__init__(message)
        self.verdict = verdict
        self.run_id = run_id


class RedactedRecordError(AgentError, ValueError):
    """``served_at`` or ``replay`` was given a record whose conversation a redaction policy
    hid: the requests cannot be rebuilt from it (its receipts still can be read)."""


class PendingQuestionError(AgentError, RuntimeError):
    """``follow_up`` would continue a conversation that waits for a person's answer: resume
    it (``agent.resume(checkpoint, answer)``) or drop the question (``abandon_pause()``)."""


class ResumeIdentityConflictError(AgentError, ValueError):
    """``resume`` was given another identity than the paused run's (checked before the
    checkpoint is used)."""


class DecisionRequiredError(AgentError, ValueError):
    """A check-in was answered with something other than ``"approve"`` or ``"decline"``
    (checked before the checkpoint is used: resume it again with a decision)."""


class InvalidAnswerError(AgentError, ValueError):
    """An answer the paused question cannot take (not matching ``request_input``'s schema,
    or not text for ``ask_human``); checked before the checkpoint is used."""


class ArtifactsEmbedError(AgentError, LookupError):
    """``save_recording(..., artifacts="embed")`` cannot read an artifact the run placed or
    redeemed: no store was given, or the store does not hold it under the run's scope."""


class RunCheckpointError(AgentError):
    """A provider failed mid-run. The exception is also the provider's own error class
    (``except ProviderAuthError`` still catches it), and carries ``checkpoint``: the
    conversation up to the last completed iteration, for ``agent.resume_on_error``.

    ``run_id`` names the failed run; ``last_completed_iteration`` how far it got.
    """

    checkpoint: Any = None
    run_id: str = ""
    last_completed_iteration: int = 0
    stage_error: StageError | None = None
