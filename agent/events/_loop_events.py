"""The loop's events: ``agent.*`` (the turn), ``stream.*`` (model calls and tool calls as
they happen), ``cost.*`` and ``validation.*``.

Adding an event: a TypedDict of its payload and one ``event(...)`` line.
"""

from typing import Any, Literal, NotRequired, TypedDict

from ._registry import event

__all__: list[str] = []

Json = Any
"""A JSON value (what the model or a tool gave, or a record the run keeps)."""


class TurnStart(TypedDict):
    message: str
    agent: str | None


class IterationStart(TypedDict):
    iteration: int


class IterationEnd(TypedDict):
    iteration: int
    tool_calls: int


class StoppedEarly(TypedDict):
    reason: str
    limit: int | float | None
    pending_count: int
    empty_answer: bool


class TurnEnd(TypedDict):
    answer: str
    iterations: int
    usage: dict[str, int] | None
    stopped_early: StoppedEarly | None
    answer_coverage: NotRequired[dict[str, Json]]


class BudgetExhausted(TypedDict):
    reason: Literal["max-iterations", "cost-budget"]
    iteration: int
    limit: int | float
    pending_count: int
    wrapped_up: bool
    action: Literal["wrapped-up", "cut-short"]
    pending_tool_calls: NotRequired[list[dict[str, Json]]]
    spend: NotRequired[float]


class OutputRetry(TypedDict):
    attempt: int
    error: str


class AnswerTruncated(TypedDict):
    k: int
    iteration: int
    max_tokens: int | None


class ToolCallsRepaired(TypedDict):
    k: int
    repairs: list[dict[str, Json]]


class OutputFallback(TypedDict):
    served: str
    tiers: list[dict[str, Json]]


class Paused(TypedDict):
    kind: str
    question: NotRequired[str]
    call: NotRequired[dict[str, Json]]
    iteration: NotRequired[int]
    identity: NotRequired[dict[str, Json]]
    session_id: NotRequired[str]


class Resumed(TypedDict):
    id: str
    name: str
    answer: NotRequired[Json]
    abandon: NotRequired[bool]
    time: NotRequired[dict[str, Json]]


class Presented(TypedDict):
    id: str
    content: str


class MessageDenied(TypedDict):
    door: Literal["input", "output"]
    middleware: str
    reason: str
    iteration: int


class EvidenceChecked(TypedDict):
    iteration: int
    k: int
    posture: str
    candidates: int
    unsupported: int
    by_absence: int
    corpus_results: int
    corpus_tokens: int
    corpus_truncated: bool
    action: Literal["pass", "revise", "refuse", "flag"]
    downgraded_from: NotRequired[str]


class AnswerValidated(TypedDict):
    checks: int
    fired: int
    skipped: int
    complete: bool
    stopped_by: NotRequired[str]


class LlmStart(TypedDict):
    k: int
    model: str | None


class Token(TypedDict):
    text: str


class LlmEnd(TypedDict):
    k: int
    tool_calls: int
    usage: dict[str, int] | None
    stop_reason: str | None


class ToolStart(TypedDict):
    id: str
    name: str
    args: Json


class ToolProgress(TypedDict):
    id: str
    name: str
    iteration: int
    payload: NotRequired[Json]
    dropped: NotRequired[str]


class ToolEnd(TypedDict):
    id: str
    name: str
    iteration: int
    status: str
    result: str


class CostTick(TypedDict):
    k: int
    usage: dict[str, int] | None
    reported: bool
    total: dict[str, int]
    usd: NotRequired[float | None]
    usd_total: NotRequired[float]


class BudgetExceeded(TypedDict):
    k: int
    limit: float
    spend: float
    action: str


class ArgsInvalid(TypedDict):
    id: str
    name: str
    errors: list[str]
    enforced: bool


# the turn
event("agent.turn_start", TurnStart, "A turn began: the person's message and the agent's name.")
event("agent.iteration_start", IterationStart, "A loop iteration began (before its model call).")
event("agent.iteration_end", IterationEnd, "A loop iteration ended, with how many calls it ran.")
event("agent.turn_end", TurnEnd, "The turn ended: the answer, iterations, usage, any early stop.")
event(
    "agent.budget_exhausted",
    BudgetExhausted,
    "The iteration or cost budget ended the loop: wrapped up or cut short.",
)
event(
    "agent.output_retry", OutputRetry, "A typed answer failed its schema: the model is asked again."
)
event("agent.answer_truncated", AnswerTruncated, "The answer stopped at the max_tokens limit.")
event(
    "agent.tool_calls_repaired",
    ToolCallsRepaired,
    "An answer repeated a tool-call id: the repairs that gave each call one id.",
)
event("agent.output_fallback", OutputFallback, "run_typed's fallback chain: the tier served.")
event(
    "agent.paused",
    Paused,
    "The turn waits for a person: the pending question (its kind's own keys too).",
    extra="the pending question's kind (schema, arguments, stage, args, sources, format, zone...)",
)
event("agent.resumed", Resumed, "The person answered (or abandoned) the waiting call.")
event("agent.presented", Presented, "A skill door presented content to the person.")
event("agent.message_denied", MessageDenied, "A middleware link denied a message at a door.")
event("agent.evidence_checked", EvidenceChecked, "The evidence gate judged an answer (counts).")
event("agent.answer_validated", AnswerValidated, "The answer's claim checks ran (counts).")
# streaming
event("stream.llm_start", LlmStart, "Model call k starts, with the resolved model.")
event("stream.token", Token, "A piece of streamed answer text.")
event("stream.llm_end", LlmEnd, "Model call k ended: tool calls, usage, stop reason.")
event("stream.tool_start", ToolStart, "A tool call starts, with its arguments.")
event("stream.tool_progress", ToolProgress, "A running tool reported progress (or lost it).")
event("stream.tool_end", ToolEnd, "A tool call ended: its status and what the model read.")
# cost
event("cost.tick", CostTick, "Call k's usage, the turn's total, and its price when priced.")
event("cost.budget_exceeded", BudgetExceeded, "The run's spend passed its cost budget.")
# validation
event("validation.args_invalid", ArgsInvalid, "A call's arguments failed its tool's schema.")
