"""The tools' events: ``tools.*`` (dispatch, results, sessions, effects), ``tool_choice.*``
(the classifier's pick), ``credential.*`` and ``artifacts.*``.

Adding an event: a TypedDict of its payload and one ``event(...)`` line.
"""

from typing import Any, Literal, NotRequired, TypedDict

from ._registry import event

__all__: list[str] = []


class ToolError(TypedDict):
    id: str
    name: str
    iteration: int
    kind: str
    type: str
    message: str


class Gate(TypedDict):
    id: str
    name: str
    decision: str
    why: str | None


class Offered(TypedDict):
    iteration: int
    names: list[str]


class AnsweredOffWire(TypedDict):
    id: str
    name: str
    offered: int


class ArgumentFilled(TypedDict):
    id: str
    name: str
    argument: str
    source: str


class RepeatedCall(TypedDict):
    id: str
    name: str
    call: str
    result: str


class ResultRefused(TypedDict):
    id: str
    name: str
    iteration: int
    size_chars: int
    max_chars: int
    narrow_by: NotRequired[list[str]]
    declared_status: NotRequired[str]


class ResultTruncated(TypedDict):
    id: str
    name: str
    iteration: int
    size_chars: int


class CoverageDeclared(TypedDict):
    tool: str
    id: str
    iteration: int
    source: str
    verdict: NotRequired[str]


class Effect(TypedDict):
    id: str
    name: str
    kind: str
    outcome: Literal["accepted", "refused", "superseded"]
    instruction: NotRequired[str]
    lease: NotRequired[dict[str, Any]]
    why: NotRequired[str]
    stay: NotRequired[bool]


class Session(TypedDict):
    key_hash: str
    scope: str
    tool: str


class SessionReused(Session):
    calls: int


class SessionClosed(Session):
    reason: str
    calls: int


class SessionCloseFailed(SessionClosed):
    error_class: str


class Picked(TypedDict):
    k: int
    chosen: str | None
    narrowed: bool
    served: int
    latency_ms: float | None


class PickOutcome(TypedDict):
    k: int
    called: list[str]
    first_agrees: NotRequired[bool]
    miss: NotRequired[dict[str, list[str]]]


class PickFailed(TypedDict):
    k: int
    status: int | None
    retryable: bool


class Consent(TypedDict):
    credential: str
    tool: str
    id: str
    iteration: int
    granted: bool


class Where(TypedDict):
    id: str
    name: str
    iteration: int


class Ticket(Where):
    ref: str
    kind: str
    sha256: str
    size: int
    media_type: str


class Resolved(Ticket):
    arg: str
    via: str


class PlaceFailed(Where):
    kind: str
    error: str


class ArtifactRefused(Where):
    op: str
    arg: str
    ref: str
    kind: str
    reason: str


# tool dispatch
event("tools.offered", Offered, "The tools offered to this iteration's model call, by name.")
event("tools.gate", Gate, "A tool's gate did not allow a call: its decision and why.")
event(
    "tools.answered_off_wire",
    AnsweredOffWire,
    "A call named a tool not offered to this model call: refused, not run.",
)
event(
    "tools.argument_filled", ArgumentFilled, "A tool's rule filled an argument (never its value)."
)
event("tools.error", ToolError, "A call raised or could not run: what the developer sees.")
event("tools.repeated_call", RepeatedCall, "A call repeated an earlier one with the same result.")
event("tools.effect", Effect, "A tool's typed effect: accepted, refused or superseded.")
# results
event(
    "tools.result_refused", ResultRefused, "A result over its tool's ceiling: refused, sizes only."
)
event("tools.result_truncated", ResultTruncated, "A result over max_tool_result_chars was cut.")
event(
    "tools.coverage_declared",
    CoverageDeclared,
    "A result declared what it covered (the coverage_declared row).",
    extra="the tool's statement (checked, not_checked, provenance, period, ...)",
)
event(
    "tools.absent",
    CoverageDeclared,
    "A result declared that nothing was found, and where it looked.",
    extra="the tool's statement (what, checked, try_instead, provenance, period, ...)",
)
# sessions
event("tools.session_started", Session, "A tool session opened (its key hashed).")
event("tools.session_reused", SessionReused, "A live tool session served another call.")
event("tools.session_closed", SessionClosed, "A tool session closed: why, after how many calls.")
event("tools.session_close_failed", SessionCloseFailed, "A session's teardown raised.")
# the classifier's pick
event("tool_choice.picked", Picked, "The classifier picked tools for call k.")
event("tool_choice.outcome", PickOutcome, "What the model called at call k against the pick.")
event("tool_choice.failed", PickFailed, "The classifier failed: every tool is offered.")
# credentials
event("credential.consent", Consent, "The person granted or refused a credential to a call.")
# artifacts
event("artifacts.placed", Ticket, "A large result was placed in the store: its ticket.")
event("artifacts.place_failed", PlaceFailed, "Placing a result failed: it was served inline.")
event("artifacts.resolved", Resolved, "A ticket argument was redeemed for its bytes.")
event("artifacts.refused", ArtifactRefused, "A ticket argument was refused: why.")
