"""``AgentBuilder``: what ``Agent.create(...)`` returns; ``build()`` checks the definition and
declares the agent's chart (``seed → [memory-recall] → [system-prompt] → [tools] → [window] →
[offer] → call-llm → route → tool-calls | [wrap-up] | [output-retry] | [evidence-recheck] |
final → [memory-write]``; bracketed stages mounted only when configured, the back edges going to the
first per-call stage)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from trackway.engine import FlowChart, RunStore, flow_chart
from trackway.engine.core._keywords import checked_keywords
from trackway.engine.run._recorder import check_recorder
from trackway.tools import Tool, ToolContext
from trackway.tools.define._providers import ToolProvider

from ..artifacts._building import ArtifactsBuilding
from ..context._building import ContextBuilding
from ..context._compaction import (
    CompactionBuilding,
    check_keep_ledger_facts,
)
from ..context._cost import check_budget, check_pricing
from ..explain._building import ExplainBuilding
from ..grounding._evidence_building import GroundingBuilding
from ..grounding._validation_building import ValidationBuilding
from ..live._building import LiveBuilding
from ..loop._inputs import Runtime, tool_from_mapping
from ..loop._stages import AgentConfig, stage_functions
from ..messages._errors import AgentBuildError
from ..middleware._building import MiddlewareBuilding
from ..ontology._building import OntologyBuilding
from ..output._chain import fallback_stage
from ..providers._caching import take_cache_options, warn_moving_pieces
from ..providers._options import check_request_options, check_tool_choice
from ..providers._provider import Provider
from ..providers.thinking import ThinkingBuilding
from ..time._building import TimeBuilding
from ..time._layer import clock_resumed, clock_stage
from ._builder_memory import MemoryBuilding
from ._builder_skills import SkillsBuilding
from ._typed import TypedBuilding

if TYPE_CHECKING:
    from ._agent import Agent

__all__ = ["AgentBuilder"]


class AgentBuilder(
    SkillsBuilding,
    MiddlewareBuilding,
    MemoryBuilding,
    TypedBuilding,
    ExplainBuilding,
    GroundingBuilding,
    ValidationBuilding,
    ThinkingBuilding,
    LiveBuilding,
    ArtifactsBuilding,
    TimeBuilding,
    OntologyBuilding,
    CompactionBuilding,
    ContextBuilding,
):
    """Configures an :class:`Agent`; ``build()`` declares its chart."""

    def __getattr__(self, attr: str) -> None:
        from ._agent import Agent  # the agent module imports this one

        if not attr.startswith("_") and hasattr(Agent, attr):
            raise AttributeError(
                f"Agent.create(...) returns a builder, which has no .{attr}: finish it with "
                f".build() first, e.g. agent = Agent.create(...).tool(...).build(); "
                f"agent.{attr}(...)"
            )
        raise AttributeError(f"'AgentBuilder' object has no attribute {attr!r}")

    def __init__(self, provider: Provider, model: str | None, **options: Any) -> None:
        if not hasattr(provider, "complete"):
            raise AgentBuildError(
                f"provider {provider!r} has no complete(request); use mock(...), openai(...) "
                "or anthropic(...), or implement the Provider interface"
            )
        limit = options["max_iterations"]
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise AgentBuildError(f"max_iterations must be a positive int, got {limit!r}")
        self._provider = provider
        self._model = _one_model(provider, model)
        store = options.get("store")
        if store is not None and not isinstance(store, RunStore):
            raise AgentBuildError(
                f"Agent.create(store={store!r}): use a run store, e.g. SqliteStore('runs.db'), "
                "MemoryStore() or PostgresStore(dsn)"
            )
        self._runtime = Runtime(
            store=options.pop("store", None),
            durability=options.pop("durability", "sync"),
            redact=options.pop("redact", None),
        )
        validation = options.pop("tool_arg_validation", "enforce")
        if validation not in ("enforce", "warn", "off"):
            raise AgentBuildError(
                f"Agent.create: tool_arg_validation={validation!r}: use 'enforce' (refuse "
                "invalid arguments), 'warn' (run and emit an event) or 'off'"
            )
        self._arg_validation = validation
        self._wrap_up_off_unrecorded = False  # set by a replay of an older recording
        cap = options.pop("max_tool_result_chars", None)
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
            raise AgentBuildError(
                f"Agent.create: max_tool_result_chars={cap!r}: use a positive whole number of "
                "characters, or None for no cap"
            )
        self._max_tool_result_chars = cap
        self._repeated_call_nudge = bool(options.pop("repeated_call_nudge", True))
        parallel = options.pop("max_parallel_tool_calls", 4)
        if isinstance(parallel, bool) or not isinstance(parallel, int) or parallel < 1:
            raise AgentBuildError(
                f"Agent.create: max_parallel_tool_calls={parallel!r}: use a whole number >= 1 "
                "(1 runs the calls of one answer one after another)"
            )
        self._parallel_tool_calls = parallel
        facts = options.pop("keep_ledger_facts", None)
        self._create_facts = None if facts is None else check_keep_ledger_facts(facts, "create")
        self._pricing = check_pricing(options.pop("pricing_table", None))
        self._cost_budget = check_budget(options.pop("cost_budget", None), self._pricing)
        self._take_skill_options(options)
        self._take_middleware_options()
        self._take_memory_options()
        self._take_typed_options()
        self._take_grounding_options()
        self._take_validation_options()
        # the caching arguments decide the ``cache`` option (and a function, call by call)
        self._cache_policy = take_cache_options(options)
        self._request_options = check_request_options(options, "Agent.create: ")
        self._options = options
        self._system: str | None = None
        self._tools: dict[str, Tool] = {}
        self._providers: list[ToolProvider] = []
        self._provided: dict[str, tuple[Tool, ToolProvider]] = {}
        self._configures: list[Callable[[Mapping[str, Any]], Mapping[str, Any]]] = []
        self._recorders: list[object] = []
        self._check_ins: dict[str, str | None] = {}
        self._gate: Callable[[dict[str, Any], ToolContext], Any] | None = None
        self._limits_travel = False
        self._findings = False
        self._findings_facts: int | None = None
        self._ledger_facts_unrecorded = False  # set by a replay of an older recording
        self._findings_plan: Any = None
        self._window: tuple[Any, int] | None = None

    def system(self, prompt: str) -> AgentBuilder:
        """The system prompt."""
        if not isinstance(prompt, str):
            raise AgentBuildError("system(prompt) takes a str")
        self._system = prompt
        return self

    def tool(self, tool: Tool | Mapping[str, Any]) -> AgentBuilder:
        """Offer ``tool`` to the model: a :class:`Tool` (``define_tool``, ``@tool``) or a
        plain ``{"name", "description", "schema", "execute"}`` mapping. A second tool with
        the same name is refused."""
        if isinstance(tool, Mapping):
            tool = tool_from_mapping(tool)
        if not isinstance(tool, Tool):
            raise AgentBuildError(
                f"tool(...) takes a Tool (define_tool(...) or @tool) or a mapping with name, "
                f"description, schema and execute; got {tool!r}"
            )
        if tool.name in self._tools:
            first = self._tools[tool.name].source or ".tool()"
            raise AgentBuildError(
                f"two tools are named {tool.name!r} (from {first} and from "
                f"{tool.source or '.tool()'}); tool names must be unique per agent"
            )
        if tool.name in self._provided:
            raise AgentBuildError(
                f"tool {tool.name!r} from .tool() clashes with the tool of that name from "
                f"tools_from({self._provided[tool.name][1]!r}); rename one of them"
            )
        self._tools[tool.name] = tool
        return self

    def tools_from(self, provider: ToolProvider) -> AgentBuilder:
        """Let ``provider`` decide, before each model call, which of its tools are offered
        (``static_tools(...)``, ``gated_tools(when, ...)`` or your own
        :class:`~trackway.tools.ToolProvider`). A call to a tool not offered for that model
        call is refused; the tools actually served are committed, so receipts hash them."""
        if not isinstance(provider, ToolProvider):
            raise AgentBuildError(
                f"tools_from(...) takes a ToolProvider (static_tools, gated_tools, or an object "
                f"with `tools` and `offer(state)`), not {provider!r}"
            )
        for t in provider.tools:
            if not isinstance(t, Tool):
                raise AgentBuildError(f"tool provider {provider!r} lists {t!r}, not a Tool")
            if t.name in self._tools:
                raise AgentBuildError(
                    f"tool {t.name!r} from tools_from({provider!r}) clashes with the tool of "
                    "that name from .tool(); rename one of them"
                )
            if t.name in self._provided:
                raise AgentBuildError(
                    f"tool {t.name!r} from tools_from({provider!r}) clashes with the tool of "
                    f"that name from tools_from({self._provided[t.name][1]!r}); rename one"
                )
        for t in provider.tools:
            self._provided[t.name] = (t, provider)
        self._providers.append(provider)
        return self

    def tools(self, tools: Iterable[Tool]) -> AgentBuilder:
        for t in tools:
            self.tool(t)
        return self

    def gate(self, fn: Callable[[dict[str, Any], ToolContext], Any]) -> AgentBuilder:
        """Decide over every call: ``fn(call, ctx)`` returns ``allow()``, ``deny(reason)``
        (the model reads a ``denied`` result) or ``ask(question)`` (the run pauses for a
        person's decision). A tool's own ``gate=`` decides first. One gate per agent."""
        if not callable(fn):
            raise AgentBuildError("gate(fn) takes a function (call, ctx)")
        if self._gate is not None:
            raise AgentBuildError("an agent has one gate: combine the checks in one function")
        self._gate = fn
        return self

    @checked_keywords
    def check_in(self, tool_names: Iterable[str], *, question: str | None = None) -> AgentBuilder:
        """Calls to these tools wait for a person's decision before they run: the run pauses
        with ``question`` (default: one naming the call and its arguments), and
        ``agent.resume(checkpoint, "approve" | "decline")`` runs or refuses the call."""
        names = [tool_names] if isinstance(tool_names, str) else list(tool_names)
        if not names or not all(isinstance(n, str) and n for n in names):
            raise AgentBuildError("check_in(tool_names) takes tool names (a list of str)")
        if question is not None and (not isinstance(question, str) or not question.strip()):
            raise AgentBuildError(f"check_in(question={question!r}): use a non-empty str")
        for name in names:
            self._check_ins[name] = question
        return self

    def configure(self, fn: Callable[[Mapping[str, Any]], Mapping[str, Any]]) -> AgentBuilder:
        """Per-run settings: ``fn({"message", "identity"})`` returns a dict with any of
        ``model``, ``instructions`` and the request options of ``Agent.create`` (``None``
        drops one for the run); committed by ``seed`` before the first call."""
        if not callable(fn):
            raise AgentBuildError("configure(fn) takes a function")
        self._configures.append(fn)
        return self

    @checked_keywords
    def limits_travel_with_the_answer(self) -> AgentBuilder:
        """Append the limits the tools declared (``absent``, ``coverage``,
        ``described_result``, and arguments a tool's rule filled) to a prose answer, composed
        from the record so the model cannot drop them; a typed answer stays pure JSON and
        ``agent.answer_coverage()`` returns the same limits. The record keeps the
        statements either way."""
        self._limits_travel = True
        return self

    def recorder(self, recorder: object) -> AgentBuilder:
        """Attach a recorder to every run (e.g. ``narrative()``, ``jsonl(path)``)."""
        check_recorder(recorder)
        self._recorders.append(recorder)
        return self

    def build(self) -> Agent:
        o = self._options
        output_model, retries = self._output if self._output else (None, 0)
        if len(self._configures) > 1:
            names = " and ".join(getattr(f, "__qualname__", repr(f)) for f in self._configures)
            raise AgentBuildError(
                f"configure() was called twice ({names}); an agent has one configure function: "
                "merge them into one that returns every setting"
            )
        unknown = sorted(set(self._check_ins) - set(self._tools))
        if unknown:
            raise AgentBuildError(
                f"check_in names {unknown}, which are not tools of this agent; add them with "
                f".tool(...) first (tools: {', '.join(self._tools) or 'none'})"
            )
        check_tool_choice(
            self._request_options.get("tool_choice"),
            {**self._tools, **{t.name: t for s in self._skills for t in s.tools}},
            "Agent.create: ",
        )
        unsupported = [
            name
            for name in getattr(self._provider, "unsupported_options", ())
            if name in self._request_options
        ]
        if unsupported:
            name = getattr(self._provider, "name", type(self._provider).__name__)
            raise AgentBuildError(
                f"provider {name!r} cannot send {', '.join(unsupported)}: its API has no such "
                f"field. Drop {', '.join(f'{u}=' for u in unsupported)} from Agent.create, or "
                "pass the vendor's own field through extra_body="
            )
        explain, traced = self._explained()  # the trace tools of .self_explain(), if any
        static = {n: t.source or ".tool()" for n, t in {**self._tools, **traced}.items()}
        static.update({n: f"tools_from({p!r})" for n, (_, p) in self._provided.items()})
        tools = {**self._tools, **traced, **{n: t for n, (t, _) in self._provided.items()}}
        skillset = self._declared(static, tools, findings=self._findings)
        memories, memory_io = self._memory_plan()
        cfg = AgentConfig(
            provider=self._provider,
            model=self._model,
            max_iterations=o["max_iterations"],
            options=dict(self._request_options),
            name=o["name"],
            system=self._system,
            tools=tools,
            providers=list(self._providers),
            registered=(*self._tools, *traced),
            configure=self._configures[0] if self._configures else None,
            cache_policy=self._cache_policy,
            output_model=output_model,
            output_retries=retries,
            wrap_up=o["wrap_up_at_max_iterations"] and (bool(tools) or skillset is not None),
            wrap_up_off_recorded=not o["wrap_up_at_max_iterations"]
            and (bool(tools) or skillset is not None)
            and not self._wrap_up_off_unrecorded,
            stream=o["stream"],
            check_ins=dict(self._check_ins),
            arg_validation=self._arg_validation,
            max_tool_result_chars=self._max_tool_result_chars,
            repeated_call_nudge=self._repeated_call_nudge,
            parallel_tool_calls=self._parallel_tool_calls,
            gate=self._gate,
            limits_travel=self._limits_travel,
            findings=self._findings,
            findings_plan=self._findings_plan,
            pricing=self._pricing,
            cost_budget=self._cost_budget,
            window=None if self._window is None else self._window[0],
            keep_last_tool_results=2 if self._window is None else self._window[1],
            keep_ledger_facts=self._ledger_facts(),
            skills=skillset,
            tool_choice=self._tool_choice,
            middleware=tuple(self._middleware),
            credentials=self._checked_credentials(tools),
            memories=memories,
            memory_io=memory_io,
            typed=self._typed_plan(self._provider, self._request_options, tools),
            self_explain=explain,
            evidence=self._evidence,
            thinking_handler=self._thinking,
            artifacts=self._artifacts_plan(
                [*tools.values(), *(t for s in self._skills for t in s.tools)]
            ),
            time=self._time_layer,
            ontology=self._ontology_plan(
                {
                    *tools,
                    *(t.name for s in self._skills for t in s.tools),
                    *(skillset.doors if skillset is not None else ()),
                },
                self._skills,
            ),
            validation=self._validation_plan(
                {*tools, *(t.name for s in self._skills for t in s.tools)}
            ),
        )
        if self._findings and not cfg.tools:
            raise AgentBuildError(
                "findings() files what the model declares on its tool calls; this agent has no "
                "tools: add one with .tool(...) or .tools_from(...), or drop findings()"
            )
        warn_moving_pieces(
            cfg.options.get("cache"),
            tools_move=self._findings,
            system_moves=cfg.skills is not None or bool(cfg.memories),
        )
        from ._agent import Agent  # the agent module imports this one

        named = {*tools, *(t.name for s in self._skills for t in s.tools)}
        voice, live = self._live_plan(named, open_ended=bool(self._providers))
        agent = Agent(cfg, _chart(cfg), [*self._recorders, *live], self._runtime)
        return agent._give_voice(voice)  # type: ignore[no-any-return]


def _one_model(provider: Provider, model: str | None) -> str:
    """The agent's model, named in one place: ``Agent.create(model=)`` or the provider's own
    (``openai("gpt-4o")``); naming two different models is refused."""
    own = getattr(provider, "model", None)
    own = own if isinstance(own, str) and own else None
    if model is not None and (not isinstance(model, str) or not model):
        raise AgentBuildError(f"Agent.create(model={model!r}): use a model name (a non-empty str)")
    if model is None and own is None:
        raise AgentBuildError(
            f"no model named: provider {getattr(provider, 'name', provider)!r} names none, so "
            "pass Agent.create(..., model='...')"
        )
    if model is not None and own is not None and model != own:
        raise AgentBuildError(
            f"the model is named twice and differently: the provider says {own!r}, "
            f"Agent.create(model=) says {model!r}. Name it once, on the provider "
            f"(e.g. openai({model!r})), and leave model= out; configure() can still choose "
            "another model for one run"
        )
    return model if model is not None else own  # type: ignore[return-value]


def _chart(cfg: AgentConfig) -> FlowChart:
    fns = stage_functions(cfg)
    b = flow_chart("Seed", fns["seed"], id="seed", description="Take the message")
    if cfg.time is not None:  # the turn's clock, before anything reads the time
        b = b.then("Clock", clock_stage(cfg.time), id="clock", description="Declare the clock",
                   on_resume=clock_resumed if cfg.time.reads else None)  # fmt: skip
    if cfg.memories:  # once per turn, before the loop
        b = b.then("Memory recall", fns["memory-recall"], id="memory-recall", description="Recall")
    if cfg.system is not None or cfg.configure is not None or cfg.self_explain is not None:
        b = b.then("System prompt", fns["system-prompt"], id="system-prompt")
    if cfg.serves_tools:
        b = b.then("Tools", fns["tools"], id="tools", description="Offer the tools")
    per_call: list[str] = []  # every back edge targets the first per-call stage
    if cfg.window is not None:
        per_call.append("window")
        b = b.then("Window", fns["window"], id="window", description="Fit the context window")
    if cfg.skills is not None or cfg.offers_per_call or cfg.findings:
        # what each call is offered is decided per call: its tools and, with skills, the
        # skill cursor and the system pieces (one stage: a stage per call has a cost)
        per_call.append("offer")
        what = "pieces and tools" if cfg.skills is not None else "tools"
        b = b.then("Offer", fns["offer"], id="offer", description=f"Offer this call's {what}")
    first = per_call[0] if per_call else "call-llm"
    b = b.then("Call LLM", fns["call-llm"], id="call-llm", description="Ask the model")
    if cfg.thinking_handler is not None:  # the answer as the handler normalised it
        b = b.then("Thinking", fns["thinking"], id="thinking", description="Normalise reasoning")
    d = b.decider("Route", fns["route"], id="route", description="Tools, retry or answer")
    if cfg.serves_tools:
        d = d.branch(
            "tool-calls",
            "Tool calls",
            fns["tool-calls"],
            id="tool-calls",
            loop_to=first,
            on_resume=fns["tool-calls-resumed"] if cfg.asks_people else None,
        )
        if cfg.wrap_up:
            d = d.branch("wrap-up", "Wrap up", fns["wrap-up"], id="wrap-up", loop_to=first)
    if cfg.output_model is not None and cfg.output_retries > 0:
        d = d.branch(
            "output-retry",
            "Output retry",
            fns["output-retry"],
            id="output-retry",
            loop_to=first,
        )
    if cfg.evidence is not None and cfg.evidence.revises:  # guard, rails: one revision ask
        d = d.branch("evidence-recheck", "Evidence recheck", fns["evidence-recheck"],
                     id="evidence-recheck", loop_to=first)  # fmt: skip
    d = d.branch("final", "Final", fns["final"], id="final")
    b = d.end()
    if cfg.typed is not None and cfg.typed.chained:  # run_typed's chain, after the answer
        b = b.then("Output fallback", fallback_stage(cfg), id="output-fallback")
    if cfg.memories:  # after the answer: the turn is written
        b = b.then("Memory write", fns["memory-write"], id="memory-write", description="Remember")
    return b.build(name=f"Agent {cfg.name}", chart_id=f"agent-{cfg.name}", description="ReAct loop")
