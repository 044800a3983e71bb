"""What ``run`` and ``resume`` are given, checked before anything runs: the message, the
caller (identity, session), a tool given as a mapping, the checkpoint of a question; and how
a failure leaves ``run`` (as the provider's own error, carrying the conversation)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from trackway.engine import Checkpoint, Durability, RedactionPolicy, RunError, RunStore, StageError
from trackway.engine.execute._trust import as_checkpoint as engine_checkpoint
from trackway.tools import Identity, Tool, define_tool

from ..context._compaction import check_carried
from ..messages._conversation import Conversation
from ..messages._errors import (
    AgentBuildError,
    InvalidAnswerError,
    InvalidRunInputError,
    MiddlewareError,
    MiddlewareFailedError,
    ResumeIdentityConflictError,
    RunCheckpointError,
    ThinkingHandlerError,
)
from ..messages._messages import Message
from ..messages._redaction import agent_policy
from ..providers._provider import ProviderError
from ..time._layer import clock_input

__all__ = [
    "QUESTION_KINDS",
    "Runtime",
    "as_checkpoint",
    "as_identity",
    "check_same_caller",
    "checkpointed",
    "run_input",
    "surfaced",
    "tool_from_mapping",
]


QUESTION_KINDS = (
    "ask_human",
    "request_input",
    "check_in",
    "arguments",
    "consent",
    "time_choice",
)


def tool_from_mapping(spec: Mapping[str, Any]) -> Tool:
    """A tool given as ``{"name", "description", "schema", "execute"}``."""
    unknown = sorted(set(spec) - {"name", "description", "schema", "input_schema", "execute"})
    missing = [k for k in ("name", "description", "execute") if k not in spec]
    if "schema" not in spec and "input_schema" not in spec:
        missing.append("schema")
    if unknown or missing:
        raise AgentBuildError(
            f"tool({{...}}): a tool mapping has name, description, schema and execute"
            f"{'; missing ' + ', '.join(missing) if missing else ''}"
            f"{'; unknown ' + ', '.join(unknown) if unknown else ''}"
        )
    return define_tool(
        name=spec["name"],
        description=spec["description"],
        input_schema=spec.get("schema", spec.get("input_schema")),
        execute=spec["execute"],
    )


_CHECKPOINTED: dict[type[ProviderError], type[ProviderError]] = {}


def checkpointed(kind: type[ProviderError]) -> type[ProviderError]:
    """The class raised for a provider failure of ``kind`` mid-run: both a
    :class:`RunCheckpointError` and ``kind`` (so ``except kind`` keeps working)."""
    made = _CHECKPOINTED.get(kind)
    if made is None:
        made = type(
            "RunCheckpointError", (RunCheckpointError, kind), {"__module__": "trackway.agent"}
        )
        _CHECKPOINTED[kind] = made
    return made


def as_checkpoint(
    checkpoint: Checkpoint | str | bytes, store: RunStore | None = None, *, opened: bool = False
) -> Checkpoint:
    """A checkpoint given as the object, as its JSON, or by the paused run's id (or
    checkpoint id) in the agent's ``store`` (read as the engine reads it; ``opened``: a
    redacted agent takes the real copy a store with a seal keeps sealed)."""
    if not isinstance(checkpoint, (Checkpoint, str, bytes)):
        raise InvalidAnswerError(
            f"resume() takes the Paused outcome's checkpoint (or its JSON), or the paused run's "
            f"id, got {type(checkpoint).__name__}"
        )
    return engine_checkpoint(checkpoint, store, opened=opened)


def check_same_caller(payload: Mapping[str, Any], identity: Any, session_id: Any) -> None:
    """A resume may name the caller; it must be the paused run's (checked before the claim)."""
    given = as_identity(identity)
    if given is not None and given.model_dump(exclude_none=True) != payload.get("identity", {}):
        raise ResumeIdentityConflictError(
            f"this run paused for identity {payload.get('identity')!r}, not "
            f"{given.model_dump(exclude_none=True)!r}: resume it as the caller it paused for"
        )
    if session_id is not None and session_id != payload.get("session_id"):
        raise ResumeIdentityConflictError(
            f"this run paused in session {payload.get('session_id')!r}, not {session_id!r}"
        )


@dataclass(frozen=True)
class Runtime:
    """Where an agent's runs are kept: the engine's store, durability and redaction."""

    store: RunStore | None = None
    durability: Durability = "sync"
    redact: RedactionPolicy | None = None

    def __post_init__(self) -> None:
        # under errors=True a failed tool call's error text is hidden too
        object.__setattr__(self, "redact", agent_policy(self.redact))


def as_identity(value: Any) -> Identity | None:
    """``value`` as an :class:`Identity` (``None`` stays ``None``); anything else is an
    :class:`InvalidRunInputError` naming the fields an identity has."""
    if value is None or isinstance(value, Identity):
        return value
    if isinstance(value, Mapping):
        try:
            return Identity.model_validate(dict(value))
        except ValidationError as exc:
            where = ".".join(str(p) for p in exc.errors()[0]["loc"]) or "identity"
            raise InvalidRunInputError(
                f"identity: {where}: {exc.errors()[0]['msg']}; an identity has tenant, "
                "principal and conversation_id (each a str, each optional)"
            ) from None
    raise InvalidRunInputError(
        f"identity={value!r}: pass an Identity(tenant=..., principal=..., conversation_id=...) "
        "or a dict of those fields"
    )


def surfaced(error: RunError) -> Exception:
    """The error ``run`` raises: a provider failure, a ``configure()`` mistake or a
    middleware link's failure as itself (``except ProviderError`` works), with the engine's
    :class:`StageError` kept on its ``stage_error``."""
    cause = error.__cause__
    surfacing = (
        ProviderError,
        AgentBuildError,
        MiddlewareError,
        MiddlewareFailedError,
        ThinkingHandlerError,
    )
    if isinstance(error, StageError) and isinstance(cause, surfacing):
        cause.stage_error = error
        return cause
    return error


def run_input(
    message: Any,
    continue_from: Conversation | None,
    identity: Any = None,
    session_id: Any = None,
    time: Any = None,
) -> dict[str, Any]:
    """Check the run input before anything runs; say what was wrong."""
    if isinstance(message, Mapping):
        if identity is not None and message.get("identity") is not None:
            raise InvalidRunInputError(
                "the identity is given twice (in the input dict and as identity=); give it once"
            )
        unknown = set(message) - {"message", "identity", "time"}
        if unknown:
            raise InvalidRunInputError(
                f"run input has unknown keys {', '.join(sorted(map(repr, unknown)))}; allowed: "
                "'message', 'identity', 'time'"
            )
        if "message" not in message:
            raise InvalidRunInputError("run input dict needs a 'message'")
        if time is not None and message.get("time") is not None:
            raise InvalidRunInputError(
                "the clock is given twice (in the input dict and as time=); give it once"
            )
        identity = message.get("identity", identity)
        time = message.get("time", time)
        message = message["message"]
    if not isinstance(message, str):
        raise InvalidRunInputError(
            f"the message must be a str, got {type(message).__name__}; pass run('...') or "
            "run({'message': '...', 'identity': ...})"
        )
    if not message.strip():
        raise InvalidRunInputError("the message is empty; there is nothing to answer")
    initial: dict[str, Any] = {"message": message}
    clock = clock_input(time)
    if clock is not None:  # .time(): the run's clock as the caller declared it
        initial["time"] = clock
    checked = as_identity(identity)
    if checked is not None:
        initial["identity"] = checked.model_dump(exclude_none=True)
    if session_id is not None:
        if not isinstance(session_id, str) or not session_id:
            raise InvalidRunInputError(
                f"session_id={session_id!r}: use a non-empty str naming the caller's session"
            )
        initial["session_id"] = session_id
    if continue_from is not None:
        if not isinstance(continue_from, Conversation):
            raise InvalidRunInputError("continue_from takes agent.checkpoint() (a Conversation)")
        try:  # the history as the request will carry it: validated, defaults filled in
            initial["prior_history"] = [
                Message.model_validate(m).model_dump(mode="json", exclude_none=True)
                for m in continue_from.history
            ]
        except ValidationError as exc:
            raise InvalidRunInputError(
                f"continue_from holds a message that is not valid: {exc.errors()[0]['msg']}"
            ) from None
        if continue_from.carry:
            check_carried(initial["prior_history"], continue_from.carry)  # .compaction()'s
            initial["carried"] = dict(continue_from.carry)
    return initial
