"""The declarations: instructions, skills, routes and the skill graph, and the two typed
effects a tool may return. All of them are data, checked when declared; the agent checks
how they fit together at ``build()``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from trackway.tools import Tool
from trackway.tools.results._outcome import TOOL_RESULT_STATUSES

from ..messages._errors import AgentBuildError

__all__ = [
    "ALWAYS_SERVED_TOOLS",
    "STRICTNESS",
    "EntryRequest",
    "EntryScorer",
    "EntryScoring",
    "Instruction",
    "InstructionLease",
    "Route",
    "Skill",
    "SkillGraph",
    "define_instruction",
    "define_skill",
    "propose_transition",
    "require_instruction",
    "route",
    "skill_graph",
]

ALWAYS_SERVED_TOOLS: tuple[str, ...] = ("read_skill", "list_skills", "skip_step", "present")
"""The doors: served to every call of an agent with skills, never narrowed away."""

STRICTNESS = ("assist", "guard", "rails")
"""Who may move the skill cursor. ``assist``: the model may read any skill; ``guard``: only
a skill the graph reaches from where it is; ``rails``: only the author's code (routes, tool
proposals, the entry) moves it."""

Strictness = Literal["assist", "guard", "rails"]
Continuity = Literal["turn", "conversation"]
InstructionLease = Literal["next-call", "until-skill-exit"]
LEASES: tuple[str, ...] = ("next-call", "until-skill-exit")
"""The delivery leases a pushed instruction may have."""


def _check_id(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise AgentBuildError(f"{what}: id={value!r}; use a non-empty str")
    return value


@dataclass(frozen=True)
class Instruction:
    """A system piece served to every model call while ``active_when(state)`` holds (or
    while a tool's ``require_instruction`` lease holds)."""

    id: str
    prompt: str
    active_when: Callable[[Mapping[str, Any]], bool]


def define_instruction(
    *, id: str, prompt: str, active_when: Callable[[Mapping[str, Any]], bool]
) -> Instruction:
    """An instruction served while ``active_when(state)`` holds, read from committed state
    before each model call (``lambda state: False`` for one only a tool's lease serves)."""
    _check_id(id, "define_instruction")
    if not isinstance(prompt, str) or not prompt.strip():
        raise AgentBuildError(f"define_instruction(id={id!r}): prompt must be a non-empty str")
    return Instruction(id, prompt, active_when)


@dataclass(frozen=True)
class Skill:
    """A bundle of instructions (``body``) and tools the model takes up by reading it
    (``read_skill``) or the graph moves it into. A hidden skill is never named to the model:
    it is entered only by the author's code (a route, a tool's proposal, the entry)."""

    id: str
    title: str
    body: str
    tools: tuple[Tool, ...] = ()
    hidden: bool = False


def define_skill(
    *, id: str, title: str, body: str, tools: Iterable[Tool] = (), hidden: bool = False
) -> Skill:
    """A skill: its ``body`` is served while it is active, its ``tools`` join the agent's."""
    _check_id(id, "define_skill")
    for name, value in (("title", title), ("body", body)):
        if not isinstance(value, str) or not value.strip():
            raise AgentBuildError(f"define_skill(id={id!r}): {name} must be a non-empty str")
    listed = tuple(tools)
    for t in listed:
        if not isinstance(t, Tool):
            raise AgentBuildError(
                f"define_skill(id={id!r}): tools lists {t!r}, not a Tool (define_tool or @tool)"
            )
    return Skill(id, title, body, listed, bool(hidden))


@dataclass(frozen=True)
class Route:
    """A declared edge of the skill graph. With no condition it says where the model may go
    (``reachable``, ``next_skill``); with one it moves the cursor by itself after a batch of
    tool results that matches it."""

    from_: str
    to: str
    on_tool_return: str | None = None
    on_tool_status: str | None = None
    when: Callable[[Mapping[str, Any]], bool] | None = None

    @property
    def conditional(self) -> bool:
        return (
            self.on_tool_return is not None
            or self.on_tool_status is not None
            or self.when is not None
        )

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"from": self.from_, "to": self.to}
        if self.on_tool_return is not None:
            out["on_tool_return"] = self.on_tool_return
        if self.on_tool_status is not None:
            out["on_tool_status"] = self.on_tool_status
        if self.when is not None:  # code: a replay reads what it decided
            out["when"] = getattr(self.when, "__qualname__", "when")
        return out


def route(
    from_: str,
    to: str,
    *,
    on_tool_return: str | None = None,
    on_tool_status: str | None = None,
    when: Callable[[Mapping[str, Any]], bool] | None = None,
) -> Route:
    """An edge ``from_ → to``. ``on_tool_return``: fires when that tool returned in the last
    batch; ``on_tool_status``: when a result had that status (of that tool, with both);
    ``when(state)``: a predicate over committed state. Code and a declared status are never
    combined: ``when`` with ``on_tool_status`` is refused."""
    _check_id(from_, "route(from_)")
    _check_id(to, "route(to)")
    if when is not None and on_tool_status is not None:
        raise AgentBuildError(
            f"route({from_!r}, {to!r}): when= and on_tool_status= together; route on the "
            "declared status or on code, never both (use two routes)"
        )
    if when is not None and not callable(when):
        raise AgentBuildError(f"route({from_!r}, {to!r}): when={when!r} is not callable")
    if on_tool_status is not None and on_tool_status not in TOOL_RESULT_STATUSES:
        raise AgentBuildError(
            f"route({from_!r}, {to!r}): on_tool_status={on_tool_status!r}; use one of "
            f"{', '.join(TOOL_RESULT_STATUSES)}"
        )
    if on_tool_return is not None and (not isinstance(on_tool_return, str) or not on_tool_return):
        raise AgentBuildError(
            f"route({from_!r}, {to!r}): on_tool_return={on_tool_return!r}; name a tool"
        )
    return Route(from_, to, on_tool_return, on_tool_status, when)


@dataclass(frozen=True)
class EntryRequest:
    """What an entry scorer reads: the user's message and the entries it may pick from
    (id and title; a hidden entry by its id only, never shown to the model)."""

    message: str
    entries: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class EntryScoring:
    """An entry scorer's answer: ``ranking`` is ``(skill id, score)``, highest first;
    ``chosen`` its pick. An empty ranking hands the pick to the cold start."""

    scorer: str
    ranking: tuple[tuple[str, float], ...] = ()
    chosen: str | None = None


@runtime_checkable
class EntryScorer(Protocol):
    """Ranks a graph's entries for a turn: ``name`` and async ``score(request)``."""

    name: str

    async def score(self, request: EntryRequest) -> EntryScoring: ...


@dataclass(frozen=True)
class SkillGraph:
    """How the cursor moves between skills: declared routes, the entries a turn starts from,
    how the entry is picked, the strictness and whether the cursor lasts past a turn."""

    routes: tuple[Route, ...]
    entry: tuple[str, ...] = ()
    scorer: EntryScorer | None = None
    strictness: Strictness = "guard"
    continuity: Continuity = "turn"

    def reachable(self, current: str | None) -> tuple[str, ...]:
        """Where the cursor may go from ``current`` (``None``: no skill yet, the entries)."""
        return tuple(reachable_from(self.record(), current))

    def next_skill(self, current: str | None) -> str | None:
        """The graph's own next step from ``current``: its first route with no condition."""
        return next_from(self.record(), current)

    def record(self) -> dict[str, Any]:
        return {
            "routes": [r.record() for r in self.routes],
            "entry": list(self.entry),
            "scorer": None if self.scorer is None else self.scorer.name,
            "strictness": self.strictness,
            "continuity": self.continuity,
        }


def conditional(route_record: Mapping[str, Any]) -> bool:
    """Whether a recorded route fires by itself (it has a condition)."""
    return any(key in route_record for key in ("on_tool_return", "on_tool_status", "when"))


def reachable_from(graph: Mapping[str, Any], current: str | None) -> list[str]:
    """Where a recorded graph lets the cursor go from ``current``: the entries from no
    skill, else the targets of the routes leaving it (the one law, for the declaration, the
    doors and the proposals alike)."""
    if current is None:
        return list(graph["entry"])
    out: list[str] = []
    for r in graph["routes"]:
        if r["from"] == current and r["to"] not in out:
            out.append(r["to"])
    return out


def next_from(graph: Mapping[str, Any], current: str | None) -> str | None:
    """A recorded graph's own next step from ``current``: the first entry from no skill,
    else the first route with no condition leaving it."""
    if current is None:
        return str(graph["entry"][0]) if graph["entry"] else None
    for r in graph["routes"]:
        if r["from"] == current and not conditional(r):
            return str(r["to"])
    return None


def skill_graph(
    *routes: Route,
    entry: str | Iterable[str] = (),
    scorer: EntryScorer | None = None,
    strictness: Strictness = "guard",
    continuity: Continuity = "turn",
) -> SkillGraph:
    """A skill graph. ``entry``: the skills a turn may start in (the first is the cold
    start); ``scorer``: ranks them per turn (``classifier_scorer(classifier)``), the cold
    start taking over on an empty ranking; ``strictness``: ``assist``, ``guard`` or
    ``rails`` (:data:`STRICTNESS`); ``continuity``: the cursor starts over each ``turn`` or
    lasts the ``conversation``."""
    for r in routes:
        if not isinstance(r, Route):
            raise AgentBuildError(f"skill_graph(...) takes route(...) edges, got {r!r}")
    entries = (entry,) if isinstance(entry, str) else tuple(entry)
    if strictness not in STRICTNESS:
        raise AgentBuildError(
            f"skill_graph(strictness={strictness!r}): use 'assist', 'guard' or 'rails'"
        )
    if continuity not in ("turn", "conversation"):
        raise AgentBuildError(
            f"skill_graph(continuity={continuity!r}): use 'turn' or 'conversation'"
        )
    if scorer is not None and not isinstance(scorer, EntryScorer):
        raise AgentBuildError(
            f"skill_graph(scorer={scorer!r}): use classifier_scorer(classifier) or an object "
            "with name and async score(request)"
        )
    if not entries and strictness != "assist":
        raise AgentBuildError(
            f"skill_graph(strictness={strictness!r}) names no entry: a turn starts with no "
            "skill, and from there the graph reaches none, so nothing could ever be taken up. "
            "Name where a turn starts, entry=[...], or use strictness='assist'"
        )
    if scorer is not None and not entries:
        raise AgentBuildError(
            "skill_graph(scorer=...) ranks the entries: name them with entry=[...]"
        )
    return SkillGraph(tuple(routes), entries, scorer, strictness, continuity)


def propose_transition(target_skill_id: str, reason: str = "") -> dict[str, Any]:
    """The typed effect asking the graph to move the cursor to ``target_skill_id`` (return
    it in an envelope's ``effects``). The graph decides; the verdict is recorded."""
    return {"kind": "propose-transition", "target_skill_id": target_skill_id, "reason": reason}


def require_instruction(
    instruction_id: str, delivery_lease: InstructionLease = "next-call"
) -> dict[str, Any]:
    """The typed effect pushing a registered instruction (or a skill's body) into the
    coming call (``next-call``) or while the active skill lasts (``until-skill-exit``)."""
    if delivery_lease not in LEASES:
        raise AgentBuildError(
            f"require_instruction({instruction_id!r}, {delivery_lease!r}): use 'next-call' "
            "or 'until-skill-exit'"
        )
    return {
        "kind": "require-instruction",
        "instruction_id": instruction_id,
        "delivery_lease": delivery_lease,
    }
