"""What the run keeps beside the loop: ``context.*`` (the window), ``findings.*``,
``memory.*``, ``skill.*``, ``time.*``, ``middleware.*`` and ``composition.*``.

Adding an event: a TypedDict of its payload and one ``event(...)`` line.
"""

from typing import Any, Literal, NotRequired, TypedDict

from ._registry import event

__all__: list[str] = []


class Window(TypedDict):
    strategy: str
    k: int
    removed_messages: int
    chars_before: int
    chars_after: int


class LedgerFacts(TypedDict):
    k: int
    pinned: int
    yielded: int
    limit: int
    stand_down: bool
    dropped: int


class Declared(TypedDict):
    id: str
    name: str
    basis: str | None
    has_proposition: bool


class Standing(TypedDict):
    id: str
    standing: str
    declared_by: str
    agrees: NotRequired[bool]


class Conflict(TypedDict):
    ids: list[str]
    declared_by: str


class Judged(TypedDict):
    id: str
    standing: str
    confidence: float | None
    latency_ms: float
    tokens: int


class JudgeFailed(TypedDict):
    id: str
    status: int | None


class Contingent(TypedDict):
    moment: Literal["answer", "dispatch"]
    declared_on: str
    carriers: int
    standings: list[str]
    value_chars: int


class Period(TypedDict):
    id: str
    name: str
    iteration: int
    verdict: Literal["covered", "partly-held", "not-held", "unknown", "undeclared"]


class Memories(TypedDict):
    scope: str
    memories: list[dict[str, Any]]


class Entry(TypedDict):
    k: int
    scorer: str | None
    chosen: str | None
    cold_start: NotRequired[bool]
    chosen_hidden: NotRequired[bool]


Moved = TypedDict(
    "Moved",
    {
        "k": int,
        "from": str | None,
        "to": str | None,
        "by": str,
        "tenure": int,
        "from_hidden": NotRequired[bool],
        "to_hidden": NotRequired[bool],
    },
)


class Clock(TypedDict):
    kind: str
    now: str
    now_source: str
    zone: str
    zone_source: str
    offset: str


class Reading(TypedDict):
    quote: str
    how: str
    settled: bool


class Choice(TypedDict):
    kind: str
    quote: str
    abandoned: NotRequired[bool]
    reading: NotRequired[int]
    chosen: NotRequired[dict[str, Any]]
    by: NotRequired[str]


Decided = TypedDict(
    "Decided",
    {
        "middleware": str,
        "door": str,
        "iteration": int,
        "outcome": str,
        "changed": bool,
        "id": NotRequired[str],
        "tool": NotRequired[str],
        "why": NotRequired[str],
        "from": NotRequired[dict[str, str]],
    },
)


class CompositionTurnEnd(TypedDict):
    answer: Any


# the window
event("context.window", Window, "The window strategy cut the history for call k (sizes).")
event(
    "context.ledger_facts",
    LedgerFacts,
    "The window held turns the model declared facts (counts; the ceiling, the stand-down).",
)
# the findings ledger
event("findings.declared", Declared, "A call declared its basis (never the proposition's text).")
event(
    "findings.standing",
    Standing,
    "The model gave a result a standing on the ledger (agrees: with the judge, once judged).",
)
event("findings.conflict", Conflict, "Two facts the model stands on disagree (witness ids only).")
event("findings.judged", Judged, "The judge gave a tool result a standing of its own.")
event("findings.judge_failed", JudgeFailed, "The judge failed on a result; the run went on.")
event(
    "findings.contingent",
    Contingent,
    "A value used in the answer or a call rests only on results the model set aside.",
)
event(
    "findings.period",
    Period,
    "A result's period verdict (or 'undeclared' when its tool owed one): never an instant.",
)
# memory
event("memory.recalled", Memories, "Memories recalled for the turn, by identity scope.")
event("memory.written", Memories, "The turn written to memory, by identity scope.")
# skills
event("skill.entry", Entry, "The entry scorer chose the turn's first skill.")
event("skill.moved", Moved, "The skill cursor moved: from, to, by what, its tenure.")
# time
event("time.clock", Clock, "The turn's clock: now, the zone and where each came from.")
event("time.reading", Reading, "A time mention in the message was read.")
event("time.choice", Choice, "The person chose (or abandoned) a reading of a time mention.")
# middleware
event("middleware.decided", Decided, "A middleware link decided at a door (no rewritten value).")
# compositions
event("composition.turn_end", CompositionTurnEnd, "A composition's turn ended with its answer.")
