"""What an agent's stages need that is not state: its definition (:class:`AgentConfig`),
what ``configure()`` may set for one run, and the scope running user code (for
``agent.emit``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from trackway.engine import Scope
from trackway.engine.run._scope import TrackedScope
from trackway.tools import Tool, ToolContext
from trackway.tools.define._providers import ToolProvider
from trackway.tools.define._sessions import ToolSessions

from ..messages._errors import AgentBuildError
from ..providers._options import REQUEST_OPTIONS, check_request_options, check_tool_choice
from ..providers._provider import Provider
from ._arg_check import ArgChecks

__all__ = [
    "CONFIGURABLE",
    "CURRENT_SCOPE",
    "AgentConfig",
    "apply_configured",
    "emit",
    "extend_built",
]


@dataclass
class AgentConfig:
    """Everything the stages need that is not state (the agent's definition)."""

    provider: Provider
    model: str
    max_iterations: int
    options: dict[str, Any]
    """The request options (``_options.REQUEST_OPTIONS``) that are set, as plain JSON."""
    name: str
    system: str | None
    tools: dict[str, Tool]
    configure: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None
    output_model: type[BaseModel] | None
    output_retries: int
    wrap_up: bool
    stream: bool
    validators: dict[str, ArgChecks] = field(default_factory=dict)
    """One tool's argument checks per tool name (part of the definition, not of a run)."""
    arg_validation: str = "enforce"
    """``tool_arg_validation``: ``"enforce"``, ``"warn"`` or ``"off"``."""
    max_tool_result_chars: int | None = None
    """Cut longer tool results to this many characters (saying so)."""
    repeated_call_nudge: bool = True
    """Tell the model when a call repeats an earlier one's arguments and result."""
    wrap_up_off_recorded: bool = False
    """``wrap_up_at_max_iterations=False`` turned off a wrap-up that would apply: ``seed``
    records it in settings, since a run that ends at its limit without one may leave no
    other trace of it (a recording made before this is replayed without the key)."""
    parallel_tool_calls: int = 4
    """``max_parallel_tool_calls``: how many calls of one answer run at once."""
    gate: Callable[[dict[str, Any], ToolContext], Any] | None = None
    """The agent's gate over every call (a tool's own ``gate`` decides first)."""
    providers: list[ToolProvider] = field(default_factory=list)
    """``.tools_from(...)``: each decides which of its tools a model call is offered (their
    tools are in ``tools`` too, so any offered one can be dispatched)."""
    registered: tuple[str, ...] = ()
    """The tools offered to every call (``.tool()``), in order; with providers, ``tools``
    also holds theirs."""
    window: Any = None
    """``.window(strategy)``: the :class:`~._window.WindowStrategy` of the ``window`` stage."""
    keep_last_tool_results: int = 2
    """The planner holds the latest this many results of each tool (0: none)."""
    keep_ledger_facts: int | None = None
    """Under ``.findings()``: the ceiling of fact turns the planner holds beyond the kept
    turns (0: off); ``None`` without ``.findings()`` (the window reads no ledger)."""
    pricing: dict[str, dict[str, float]] | None = None
    """``pricing_table``: USD per million tokens by model and kind."""
    cost_budget: dict[str, Any] | None = None
    """``cost_budget``: ``{"usd": limit, "action": "warn" | "halt"}``."""
    findings: bool = False
    """``.findings()``: the reserved ``_findings`` argument and the findings ledger."""
    findings_plan: Any = None
    """``.findings(serve=, answer_ask=, judge=)``: the checked
    :class:`~trackway.agent.context._findings_plan.FindingsPlan`."""
    limits_travel: bool = False
    """``.limits_travel_with_the_answer()``: the tools' declared limits go with the answer."""
    sessions: ToolSessions = field(default_factory=ToolSessions)
    """The tool sessions live in this agent (``ctx.on_teardown``)."""
    skills: Any = None
    """``.skill()`` / ``.instruction()`` / ``.skill_graph()``: the checked
    :class:`~trackway.agent.skills._skillset.SkillSet` of the ``offer`` stage."""
    tool_choice: Any = None
    """``.tool_choice(...)``: the :class:`~trackway.agent.offer._tool_choice.ToolChoice` of the
    ``offer`` stage."""
    credentials: Any = None
    """``.credentials(provider)``: ``provider(name, identity) -> str`` (or a mapping of
    names to values) for the tools' ``needs``; asked for a value only for a call the person
    consented to."""
    _links: dict[str, tuple[Any, ...]] = field(default_factory=dict, repr=False)
    """``links(door)``, worked out once per door."""
    middleware: tuple[Any, ...] = ()
    """``.middleware(...)``: the :class:`~trackway.agent.middleware._links.Middleware` links,
    in the order given."""
    check_ins: dict[str, str | None] = field(default_factory=dict)
    """Tools whose calls wait for a person's approval, with the question (``None``: a
    default naming the call)."""
    cache_policy: Any = None
    """A ``system_prompt_cache_policy`` function, asked before each call (else None)."""
    thinking_handler: Any = None
    """``.thinking_handler(fn)``: the ``ThinkingHandler`` of the ``thinking`` stage."""
    memories: tuple[Any, ...] = ()
    """``.memory(...)``: the :class:`~trackway.agent.memory.MemoryDefinition` s of the
    ``memory-recall`` and ``memory-write`` stages, in declaration order."""
    memory_io: Any = None
    """Where those stages read and write (the stores; a replay's recorded rows)."""
    typed: Any = None
    """``output_schema(strategy="native")`` / ``.output_fallback(...)``: the
    :class:`~trackway.agent.output._plan.TypedPlan` (``None``: instruct, no fallback)."""
    self_explain: Any = None
    """``.self_explain()``: the :class:`~trackway.agent.explain._tools.SelfExplain` whose
    guide follows the system prompt and whose trace tools are among ``tools``."""
    evidence: Any = None
    """``.names_and_numbers_from_evidence(...)``: the
    :class:`~trackway.agent.grounding._gate.EvidenceGate` judged in ``route``."""
    artifacts: Any = None
    """``.artifacts(store, ...)``: the :class:`~trackway.agent.artifacts._plan.ArtifactsPlan`
    (placement and redemption; ``None``: no artifacts)."""
    time: Any = None
    """``.time(...)``: the :class:`~trackway.agent.time.TimeLayer` of the ``clock`` stage."""
    ontology: Any = None
    """``.ontology(map, ask=)``: the :class:`~trackway.agent.ontology.OntologyPlan` (the map
    served to every call; ``None``: no map)."""
    validation: Any = None
    """``.answer_validation(...)``: the :class:`~trackway.agent.grounding.AnswerValidation`
    the ``final`` stage runs on the answer."""

    @property
    def serves_tools(self) -> bool:
        """Some tool may be served: the agent's, a skill's, or the doors of its skills."""
        return bool(self.tools) or (self.skills is not None and bool(self.skills.doors))

    @property
    def offers_per_call(self) -> bool:
        """What a model call is offered is decided before it (only that may run)."""
        return (
            bool(self.providers)
            or self.tool_choice is not None
            or (self.skills is not None and self.skills.scoped)
        )

    def links(self, door: str) -> tuple[Any, ...]:
        """The middleware links standing at ``door``, in order (none: the door is open)."""
        known = self._links.get(door)
        if known is None:
            known = self._links[door] = tuple(
                m for m in self.middleware if getattr(m, door) is not None
            )
        return known

    @property
    def asks_people(self) -> bool:
        """Some call may wait for a person (a tool that asks one, a check-in, a gate)."""
        return (
            bool(self.check_ins)
            or self.gate is not None
            or any(m.before_tool is not None for m in self.middleware)
            or any(t.needs for t in self.tools.values())
            or any(
                t.asks is not None
                or t.gate is not None
                or any("ask" in rule for rule in (t.ask_or_assume or {}).values())
                for t in self.tools.values()
            )
        )


CURRENT_SCOPE: ContextVar[Scope | None] = ContextVar("trackway_agent_scope", default=None)
"""The scope of the agent stage running user code (``configure()``, a tool), for
``agent.emit``."""

CONFIGURABLE = ("model", "instructions", *REQUEST_OPTIONS)
"""What ``configure()`` may return for one run."""


def apply_configured(cfg: AgentConfig, chosen: Mapping[str, Any], settings: dict[str, Any]) -> None:
    """Apply what ``configure()`` returned to this run's ``settings`` (an option set to
    ``None`` is dropped); anything it cannot take is refused, naming the key."""
    unknown = sorted(set(chosen) - set(CONFIGURABLE))
    if unknown:
        raise AgentBuildError(
            f"configure() returned {unknown}, which it cannot set; it may return "
            f"{', '.join(CONFIGURABLE)}"
        )
    if "model" in chosen:
        if not isinstance(chosen["model"], str) or not chosen["model"]:
            raise AgentBuildError(
                f"configure() returned model={chosen['model']!r}; return a model name "
                "(a non-empty str), or leave 'model' out to keep the agent's model"
            )
        settings["model"] = chosen["model"]
    options = check_request_options(chosen, "configure() returned ")
    check_tool_choice(options.get("tool_choice"), cfg.tools, "configure() returned ")
    for name in REQUEST_OPTIONS:
        if name in options:
            settings[name] = options[name]
        elif name in chosen:  # returned as None: this run goes without it
            settings.pop(name, None)


def emit(scope: Scope, name: str, payload: Any) -> None:
    """An agent event: in the stage's commit, heard by listeners."""
    scope.emit(name, payload)


def extend_built(scope: Scope, key: str, items: list[Any]) -> None:
    """``scope.extend(key, items)`` for items the loop built of plain JSON only and hands
    over (``TrackedScope._extend_built``, on the scope the engine gives a stage)."""
    if type(scope) is TrackedScope:
        scope._extend_built(key, items)
    else:
        scope.extend(key, items)
