"""``SkillSet``: an agent's skills, instructions and graph as ``build()`` checked them, what
the record keeps of them (``record()``), and the choices they leave to code
(:class:`Decisions`: which instructions are active, whether a ``when`` route holds, which
entry a turn starts in). A replay swaps the live decisions for the recorded ones."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from trackway.tools import Tool

from ..messages._errors import AgentBuildError
from ._declare import (
    ALWAYS_SERVED_TOOLS,
    EntryRequest,
    EntryScoring,
    Instruction,
    Skill,
    SkillGraph,
)

__all__ = ["Decisions", "LiveDecisions", "RouteConditions", "SkillSet", "check_skillset"]


class Decisions(Protocol):
    """The choices the declarations leave to code, asked once per model call ``k``."""

    def active(self, state: Mapping[str, Any], k: int) -> list[str]:
        """The ids of the instructions whose ``active_when`` holds, in declaration order."""
        ...

    def when(self, index: int, state: Mapping[str, Any], k: int) -> bool:
        """Whether route ``index``'s ``when`` holds."""
        ...

    async def entry(self, request: EntryRequest, k: int) -> EntryScoring | None:
        """The entry scorer's ranking (``None``: the graph has no scorer)."""
        ...


class LiveDecisions:
    """The decisions made by the author's code: ``active_when``, ``when``, the scorer."""

    def __init__(self, instructions: Sequence[Instruction], graph: SkillGraph | None) -> None:
        self._instructions = tuple(instructions)
        self._graph = graph

    def active(self, state: Mapping[str, Any], k: int) -> list[str]:
        out = []
        for instruction in self._instructions:
            verdict = instruction.active_when(state)
            if not isinstance(verdict, bool):
                raise TypeError(
                    f"instruction {instruction.id!r}: active_when returned {verdict!r}; "
                    "return True or False"
                )
            if verdict:
                out.append(instruction.id)
        return out

    def when(self, index: int, state: Mapping[str, Any], k: int) -> bool:
        assert self._graph is not None
        predicate = self._graph.routes[index].when
        assert predicate is not None
        return bool(predicate(state))

    async def entry(self, request: EntryRequest, k: int) -> EntryScoring | None:
        if self._graph is None or self._graph.scorer is None:
            return None
        return await self._graph.scorer.score(request)


@dataclass
class RouteConditions:
    """What the conditional routes leaving one skill fire on: a tool and a status together,
    a tool's return, a status, or code (``when``: asked every batch)."""

    pairs: set[tuple[str, str | None]]
    tools: set[str]
    statuses: set[str | None]
    when: bool


@dataclass
class SkillSet:
    """The checked declarations of one agent."""

    skills: dict[str, Skill]
    instructions: dict[str, Instruction]
    graph: SkillGraph | None
    scoped: bool
    decisions: Decisions
    owners: dict[str, list[str]] = field(default_factory=dict)
    """Each skill tool's name and the skills that declare it."""
    doors: dict[str, Tool] = field(default_factory=dict)
    """The always-served doors (none without skills)."""

    def conditions_from(self, skill: str | None) -> RouteConditions | None:
        """What the routes with a condition that leave ``skill`` fire on (``None``: none)."""
        return self._conditions.get(skill)

    @functools.cached_property
    def _conditions(self) -> dict[str | None, RouteConditions]:
        out: dict[str | None, RouteConditions] = {}
        for r in self.graph.routes if self.graph is not None else ():
            if not r.conditional:
                continue
            c = out.setdefault(r.from_, RouteConditions(set(), set(), set(), False))
            if r.when is not None:
                c.when = True
            elif r.on_tool_return is not None and r.on_tool_status is not None:
                c.pairs.add((r.on_tool_return, r.on_tool_status))
            elif r.on_tool_return is not None:
                c.tools.add(r.on_tool_return)
            else:
                c.statuses.add(r.on_tool_status)
        return out

    @property
    def continuing(self) -> bool:
        """The cursor lasts the conversation (``continuity="conversation"``)."""
        return self.graph is not None and self.graph.continuity == "conversation"

    @property
    def hidden(self) -> frozenset[str]:
        return frozenset(s.id for s in self.skills.values() if s.hidden)

    @property
    def visible(self) -> list[str]:
        """The ids the model may be told, in declaration order."""
        return [s.id for s in self.skills.values() if not s.hidden]

    @property
    def tools(self) -> dict[str, Tool]:
        """Every skill's tools, by name (a tool two skills share once)."""
        out: dict[str, Tool] = {}
        for skill in self.skills.values():
            for t in skill.tools:
                out.setdefault(t.name, t)
        return out

    @functools.cached_property
    def data(self) -> dict[str, Any]:
        """:meth:`record`, made once (the law reads this plain data every call)."""
        return self.record()

    def record(self) -> dict[str, Any]:
        """What the record keeps: enough to serve and judge every call again without code."""
        return {
            "catalog": [
                {
                    "id": s.id,
                    "title": s.title,
                    "body": s.body,
                    "tools": [t.name for t in s.tools],
                    "hidden": s.hidden,
                }
                for s in self.skills.values()
            ],
            "instructions": {i.id: i.prompt for i in self.instructions.values()},
            "graph": None if self.graph is None else self.graph.record(),
            "scoped": self.scoped,
        }


def check_skillset(
    skills: Sequence[Skill],
    instructions: Sequence[Instruction],
    graph: SkillGraph | None,
    scoped: bool,
    static: Mapping[str, str],
    doors: Mapping[str, Tool],
) -> SkillSet:
    """The declarations checked together, each refusal naming what clashes and the fix.

    ``static``: the agent's other tools by name, each with where it came from."""
    by_id: dict[str, Skill] = {}
    for skill in skills:
        if skill.id in by_id:
            raise AgentBuildError(f"two skills have the id {skill.id!r}; skill ids are unique")
        by_id[skill.id] = skill
    declared: dict[str, Instruction] = {}
    for instruction in instructions:
        if instruction.id in declared:
            raise AgentBuildError(
                f"two instructions have the id {instruction.id!r}; instruction ids are unique"
            )
        if instruction.id in by_id:
            raise AgentBuildError(
                f"instruction {instruction.id!r} has the id of a skill; a lease names one "
                "or the other, so rename one of them"
            )
        if not callable(instruction.active_when):
            raise AgentBuildError(
                f"instruction {instruction.id!r}: active_when={instruction.active_when!r} "
                "is not callable; pass a function of the state (lambda state: False for one "
                "only a tool's lease serves)"
            )
        if inspect.iscoroutinefunction(instruction.active_when):
            raise AgentBuildError(
                f"instruction {instruction.id!r}: active_when is async; it reads committed "
                "state and must answer at once (a plain function)"
            )
        declared[instruction.id] = instruction
    owners: dict[str, list[str]] = {}
    tools: dict[str, Tool] = {}
    for skill in by_id.values():
        for t in skill.tools:
            if t.name in doors:
                raise AgentBuildError(
                    f"skill {skill.id!r} declares a tool named {t.name!r}, the name of a "
                    f"door ({', '.join(ALWAYS_SERVED_TOOLS)}); rename the tool"
                )
            if t.name in static:
                raise AgentBuildError(
                    f"tool {t.name!r} of skill {skill.id!r} clashes with the tool of that name "
                    f"from {static[t.name]}; rename one of them"
                )
            known = tools.get(t.name)
            if known is not None and known is not t:
                raise AgentBuildError(
                    f"skills {owners[t.name][0]!r} and {skill.id!r} declare different tools "
                    f"named {t.name!r}; share one Tool object or rename one"
                )
            tools[t.name] = t
            owners.setdefault(t.name, []).append(skill.id)
    for name in static:
        if name in doors and by_id:
            raise AgentBuildError(
                f"tool {name!r} from {static[name]} has the name of a door an agent with "
                f"skills serves ({', '.join(ALWAYS_SERVED_TOOLS)}); rename the tool"
            )
    if graph is not None:
        if not by_id:
            raise AgentBuildError("skill_graph(...) moves between skills: add them with .skill()")
        known_ids = ", ".join(by_id)
        for r in graph.routes:
            for end in (r.from_, r.to):
                if end not in by_id:
                    raise AgentBuildError(
                        f"route({r.from_!r}, {r.to!r}) names {end!r}, which is not a skill of "
                        f"this agent (skills: {known_ids})"
                    )
            if r.on_tool_return is not None and r.on_tool_return not in {**static, **tools}:
                raise AgentBuildError(
                    f"route({r.from_!r}, {r.to!r}, on_tool_return={r.on_tool_return!r}) names "
                    "a tool this agent does not have; name a tool from .tool() or a skill's"
                )
        for entry in graph.entry:
            if entry not in by_id:
                raise AgentBuildError(
                    f"skill_graph(entry=...) names {entry!r}, which is not a skill of this "
                    f"agent (skills: {known_ids})"
                )
    if scoped and not by_id:
        raise AgentBuildError(
            "skill_scoped_tools=True serves the active skill's tools: add skills with .skill()"
        )
    return SkillSet(
        skills=by_id,
        instructions=declared,
        graph=graph,
        scoped=scoped,
        decisions=LiveDecisions(list(declared.values()), graph),
        owners=owners,
        doors=dict(doors) if by_id else {},
    )
