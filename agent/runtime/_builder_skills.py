"""The part of the agent's builder that declares behaviour: skills, instructions, the skill
graph and tool choice, with ``skill_scoped_tools`` and ``react_mode``; ``_declared`` checks
them together at ``build()``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Self

from trackway.engine.core._keywords import checked_keywords
from trackway.tools import Tool

from ..messages._errors import AgentBuildError
from ..offer._tool_choice import ToolChoice
from ..skills._declare import Instruction, Skill, SkillGraph
from ..skills._doors import door_tools
from ..skills._skillset import Decisions, SkillSet, check_skillset

__all__ = ["SkillsBuilding"]


class SkillsBuilding:
    """``.skill()``, ``.instruction()``, ``.skill_graph()`` and ``.tool_choice()``."""

    _skills: list[Skill]
    _instructions: list[Instruction]
    _graph: SkillGraph | None
    _tool_choice: ToolChoice | None
    _decisions: Decisions | None
    _skill_scoped: bool
    _react_mode: str
    _providers: list[Any]

    def _take_skill_options(self, options: dict[str, Any]) -> None:
        self._skill_scoped = bool(options.pop("skill_scoped_tools", False))
        self._react_mode = _react_mode(options.pop("react_mode", "dynamic"))
        self._skills = []
        self._instructions = []
        self._graph = None
        self._tool_choice = None
        self._decisions = None  # a replay's: what the record decided

    def skill(self, skill: Skill) -> Self:
        """Add a skill (``define_skill``): the model takes it up through the ``read_skill``
        door (or the graph moves it there); its body is served while it is active and its
        tools join the agent's. An agent with skills serves the doors to every call."""
        if not isinstance(skill, Skill):
            raise AgentBuildError(f"skill(...) takes define_skill(...), got {skill!r}")
        self._skills.append(skill)
        return self

    def skills(self, skills: Iterable[Skill]) -> Self:
        for s in skills:
            self.skill(s)
        return self

    def instruction(self, instruction: Instruction) -> Self:
        """Add an instruction (``define_instruction``): served to each model call while its
        ``active_when(state)`` holds, or while a tool's ``require_instruction`` lease does."""
        if not isinstance(instruction, Instruction):
            raise AgentBuildError(
                f"instruction(...) takes define_instruction(...), got {instruction!r}"
            )
        self._instructions.append(instruction)
        return self

    def skill_graph(self, graph: SkillGraph) -> Self:
        """How the cursor moves between the skills (``skill_graph(route(...), ...)``). One
        graph per agent."""
        if not isinstance(graph, SkillGraph):
            raise AgentBuildError(f"skill_graph(...) takes skill_graph(...), got {graph!r}")
        if self._graph is not None:
            raise AgentBuildError("an agent has one skill graph: skill_graph() was called twice")
        self._graph = graph
        return self

    @checked_keywords
    def tool_choice(
        self, *, classifier: Any, serve: Any = "all", always_serve: Iterable[str] = ()
    ) -> Self:
        """Before each model call, ask ``classifier`` which of the tools about to be served
        fits (each by its description, over the user's message and the active skill) and
        file the answer on ``tool_choices``. ``serve="all"`` only advises; ``serve={"top":
        N}`` serves the top N plus the doors and ``always_serve`` (the full set when the
        classifier failed or ranked fewer than N, when fewer than N + 1 were offered, after
        a call that missed, and on the wrap-up; the row says which)."""
        if self._tool_choice is not None:
            raise AgentBuildError("an agent has one tool_choice(...): it was called twice")
        self._tool_choice = ToolChoice.checked(classifier, serve, always_serve)
        return self

    def _declared(
        self, static: Mapping[str, str], tools: dict[str, Tool], *, findings: bool
    ) -> SkillSet | None:
        """The skills, instructions and graph checked together (``static``: the agent's
        other tools, each with where it came from), the skill tools added to ``tools``, and
        tool choice and ``react_mode`` checked against them."""
        skillset = None
        if self._skills or self._instructions or self._graph or self._skill_scoped:
            visible = [s.id for s in self._skills if not s.hidden]
            skillset = check_skillset(
                self._skills,
                self._instructions,
                self._graph,
                self._skill_scoped,
                static,
                door_tools(visible),
            )
            if self._decisions is not None:
                skillset.decisions = self._decisions
            tools.update(skillset.tools)
        if self._tool_choice is not None:
            doors = {} if skillset is None else skillset.doors
            for name in self._tool_choice.always_serve:
                if name not in tools and name not in doors:
                    raise AgentBuildError(
                        f"tool_choice(always_serve=[{name!r}]) names a tool this agent does not "
                        f"have (tools: {', '.join(tools) or 'none'})"
                    )
        if self._react_mode == "classic":
            per_call = [
                label
                for label, on in (
                    (".findings()", findings),
                    (".tool_choice(...)", self._tool_choice is not None),
                    ("skill_scoped_tools=True", self._skill_scoped),
                    (".tools_from(...)", bool(self._providers)),
                )
                if on
            ]
            if per_call:
                raise AgentBuildError(
                    f"react_mode='classic' serves one tool list for the whole run, and "
                    f"{', '.join(per_call)} changes it per call; drop react_mode='classic' "
                    "(the default 'dynamic' decides each call's tools before it)"
                )
        return skillset


def _react_mode(mode: Any) -> str:
    """``react_mode`` checked: ``dynamic`` or ``classic``; ``dynamic-grouped`` is refused by
    name, with why."""
    if mode == "dynamic-grouped":
        raise AgentBuildError(
            "react_mode='dynamic-grouped' groups a model call's parts into one subflow for a "
            "viewer; a trackway agent's chart already declares each part (skills, offer, "
            "call-llm) as its own stage, so there is nothing to group: use 'dynamic'"
        )
    if mode not in ("dynamic", "classic"):
        raise AgentBuildError(
            f"Agent.create(react_mode={mode!r}): use 'dynamic' (the default) or 'classic'"
        )
    return str(mode)
