"""``Agent``: a ReAct loop declared as a flowchart, run by the engine.

The chart is ``seed → [system-prompt] → [tools] → call-llm → route → tool-calls (loops back)
| [wrap-up] (loops back) | [output-retry] (loops back) | final``; stages in brackets are
mounted only when configured. Every model request is assembled from committed state alone,
so it can be rebuilt from the log (``served_at``).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, cast

from pydantic import BaseModel, ValidationError

from trackway.engine import (
    Checkpoint,
    CheckpointClaimedError,
    Commit,
    Durability,
    Executor,
    FlowChart,
    Recorder,
    RedactionPolicy,
    RunError,
    RunResult,
    RunStartEvent,
    RunStore,
    Snapshot,
    StageError,
    flow_chart,
    run_sync,
    thaw,
)
from trackway.tools import Identity, Tool, ToolContext, define_tool

from ._conversation import Conversation
from ._errors import (
    AgentBuildError,
    AgentNotRunError,
    InvalidAnswerError,
    InvalidRunInputError,
    NoConversationError,
    OutputContractError,
    PendingQuestionError,
    ResumeIdentityConflictError,
    RunCheckpointError,
    RunInFlightError,
)
from ._events import EventBus, Listener
from ._messages import Message, is_said_by_person
from ._options import check_request_options, check_tool_choice
from ._paused import Paused
from ._person import answer_value
from ._provider import Provider, ProviderError
from ._result import AgentResult, result_of
from ._stages import CURRENT_SCOPE, AgentConfig, stage_functions

__all__ = ["Agent", "AgentBuilder"]

_M = TypeVar("_M", bound=BaseModel)


class _LiveLog(Recorder):
    """Keeps the commits of the run in flight, so ``agent.snapshot()`` is live."""

    name = "agent-live-log"

    def __init__(self) -> None:
        self.run_id = ""
        self.initial: dict[str, Any] = {}
        self.commits: list[Commit] = []

    def on_run_start(self, event: RunStartEvent) -> None:
        if event.seq == 0:
            self.commits = []
            self.initial = thaw(event.input)
        self.run_id = event.run_id

    def on_commit(self, commit: Commit) -> None:
        self.commits.append(commit)


class AgentBuilder:
    """Configures an :class:`Agent`; ``build()`` declares its chart."""

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
        self._runtime = _Runtime(
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
        cap = options.pop("max_tool_result_chars", None)
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
            raise AgentBuildError(
                f"Agent.create: max_tool_result_chars={cap!r}: use a positive whole number of "
                "characters, or None for no cap"
            )
        self._max_tool_result_chars = cap
        self._repeated_call_nudge = bool(options.pop("repeated_call_nudge", True))
        self._request_options = check_request_options(options, "Agent.create: ")
        self._options = options
        self._system: str | None = None
        self._tools: dict[str, Tool] = {}
        self._configures: list[Callable[[Mapping[str, Any]], Mapping[str, Any]]] = []
        self._output: tuple[type[BaseModel], int] | None = None
        self._recorders: list[object] = []
        self._check_ins: dict[str, str | None] = {}
        self._gate: Callable[[dict[str, Any], ToolContext], Any] | None = None

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
            tool = _tool_from_mapping(tool)
        if not isinstance(tool, Tool):
            raise AgentBuildError(
                f"tool(...) takes a Tool (define_tool(...) or @tool) or a mapping with name, "
                f"description, schema and execute; got {tool!r}"
            )
        if tool.name in self._tools:
            raise AgentBuildError(
                f"two tools are named {tool.name!r}; tool names must be unique per agent"
            )
        self._tools[tool.name] = tool
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

    def output_schema(self, model: type[_M], *, retries: int = 2) -> AgentBuilder:
        """Answers must be JSON matching ``model``; a failing answer is re-asked ``retries``
        times with the validator's message."""
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise AgentBuildError("output_schema(...) takes a pydantic BaseModel subclass")
        if retries < 0:
            raise AgentBuildError("retries must be >= 0")
        self._output = (model, retries)
        return self

    def recorder(self, recorder: object) -> AgentBuilder:
        """Attach a recorder to every run (e.g. ``narrative()``, ``jsonl(path)``)."""
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
        check_tool_choice(self._request_options.get("tool_choice"), self._tools, "Agent.create: ")
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
        cfg = AgentConfig(
            provider=self._provider,
            model=self._model,
            max_iterations=o["max_iterations"],
            options=dict(self._request_options),
            name=o["name"],
            system=self._system,
            tools=dict(self._tools),
            configure=self._configures[0] if self._configures else None,
            output_model=output_model,
            output_retries=retries,
            wrap_up=o["wrap_up_at_max_iterations"] and bool(self._tools),
            stream=o["stream"],
            check_ins=dict(self._check_ins),
            arg_validation=self._arg_validation,
            max_tool_result_chars=self._max_tool_result_chars,
            repeated_call_nudge=self._repeated_call_nudge,
            gate=self._gate,
        )
        return Agent(cfg, _chart(cfg), list(self._recorders), self._runtime)


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
    if cfg.system is not None or cfg.configure is not None:
        b = b.then("System prompt", fns["system-prompt"], id="system-prompt")
    if cfg.tools:
        b = b.then("Tools", fns["tools"], id="tools", description="Offer the tools")
    b = b.then("Call LLM", fns["call-llm"], id="call-llm", description="Ask the model")
    d = b.decider("Route", fns["route"], id="route", description="Tools, retry or answer")
    if cfg.tools:
        d = d.branch(
            "tool-calls",
            "Tool calls",
            fns["tool-calls"],
            id="tool-calls",
            loop_to="call-llm",
            on_resume=fns["tool-calls-resumed"] if cfg.asks_people else None,
        )
        if cfg.wrap_up:
            d = d.branch("wrap-up", "Wrap up", fns["wrap-up"], id="wrap-up", loop_to="call-llm")
    if cfg.output_model is not None and cfg.output_retries > 0:
        d = d.branch(
            "output-retry",
            "Output retry",
            fns["output-retry"],
            id="output-retry",
            loop_to="call-llm",
        )
    d = d.branch("final", "Final", fns["final"], id="final")
    return d.end().build(
        name=f"Agent {cfg.name}", chart_id=f"agent-{cfg.name}", description="ReAct loop"
    )


class Agent:
    """An LLM agent whose every step is a commit. Build with ``Agent.create(...)``."""

    @staticmethod
    def create(
        *,
        provider: Provider,
        model: str | None = None,
        max_iterations: int = 10,
        temperature: float | None = None,
        max_tokens: int | None = None,
        tool_choice: str | None = None,
        seed: int | None = None,
        top_p: float | None = None,
        stop: str | Sequence[str] | None = None,
        response_format: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        name: str = "agent",
        wrap_up_at_max_iterations: bool = True,
        stream: bool = True,
        store: RunStore | None = None,
        durability: Durability = "sync",
        redact: RedactionPolicy | None = None,
        tool_arg_validation: Literal["enforce", "warn", "off"] = "enforce",
        max_tool_result_chars: int | None = None,
        repeated_call_nudge: bool = True,
    ) -> AgentBuilder:
        """Start configuring an agent.

        The model is named once: on the provider (``openai("gpt-4o")``), or here with
        ``model=`` for a provider that names none (``mock(...)``, your own); both, when they
        differ, is refused. The request options (``temperature``, ``max_tokens``,
        ``tool_choice`` — ``"auto"``, ``"required"``, ``"none"`` or a tool's name —, ``seed``,
        ``top_p``, ``stop``, ``response_format``, ``extra_body``) go with every call; they are
        committed in ``settings``, so ``served_at`` and ``replay`` see them, and
        ``configure()`` may change them for one run. ``stream`` uses the provider's streaming
        when it has it.

        ``store``, ``durability`` and ``redact`` are the engine's (see ``Executor``): with a
        store every run is a stored run (``trackway runs`` lists it), and ``redact`` is the
        one redaction funnel (``conversation_redaction()`` hides what a conversation says).

        ``tool_arg_validation`` checks each call's arguments against its tool's schema before
        it runs: ``"enforce"`` (the model reads a correction naming each failing path and
        the tool does not run), ``"warn"`` (it runs; ``validation.args_invalid`` is
        emitted) or ``"off"``. Arguments that are not a JSON object never run.
        ``max_tool_result_chars`` cuts a longer tool result to a verbatim head and a line
        saying how much was cut (a tool's own ``result_ceiling`` refuses first).
        ``repeated_call_nudge``: the second time a call with the same arguments returns the
        same result in a run, one sentence tells the model so (once per distinct call).
        """
        return AgentBuilder(
            provider,
            model,
            max_iterations=max_iterations,
            temperature=temperature,
            max_tokens=max_tokens,
            tool_choice=tool_choice,
            seed=seed,
            top_p=top_p,
            stop=stop,
            response_format=response_format,
            extra_body=extra_body,
            name=name,
            wrap_up_at_max_iterations=wrap_up_at_max_iterations,
            stream=stream,
            store=store,
            durability=durability,
            redact=redact,
            tool_arg_validation=tool_arg_validation,
            max_tool_result_chars=max_tool_result_chars,
            repeated_call_nudge=repeated_call_nudge,
        )

    def __init__(
        self,
        cfg: AgentConfig,
        chart: FlowChart,
        recorders: Sequence[object],
        runtime: _Runtime | None = None,
    ) -> None:
        self._cfg = cfg
        self._chart = chart
        self._events = EventBus()
        self._live = _LiveLog()
        self._attached: list[object] = list(recorders)
        self._runtime = runtime or _Runtime()
        self._running = False
        self._last: Snapshot | None = None
        self._last_state: Mapping[str, Any] | None = None  # real values, even when redacted
        self._pending: Paused | None = None
        self._executor()  # a bad store, durability or redact= is refused at build

    def _executor(self) -> Executor:
        runtime = self._runtime
        return Executor(
            self._chart,
            recorders=[self._events, self._live, *self._attached],
            max_iterations=self._cfg.max_iterations + self._cfg.output_retries + 2,
            store=runtime.store,
            durability=runtime.durability,
            redact=runtime.redact,
        )

    def __repr__(self) -> str:
        return f"<Agent {self._cfg.name!r} model={self._cfg.model!r} tools={list(self._cfg.tools)}>"

    # -- introspection -------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self._cfg.name

    def spec(self) -> FlowChart:
        """The agent's chart."""
        return self._chart

    def snapshot(self) -> Snapshot:
        """The last run's snapshot; during a run, the commits so far."""
        if self._running:
            return Snapshot.from_commits(
                run_id=self._live.run_id,
                chart_id=self._chart.id,
                status="running",
                initial=self._live.initial,
                commits=list(self._live.commits),
            )
        if self._last is None:
            raise AgentNotRunError(
                f"agent {self._cfg.name!r} has not run yet, so it has no snapshot; call "
                "run(...) first"
            )
        return self._last

    def commit_count(self) -> int:
        if self._running:
            return len(self._live.commits)
        return 0 if self._last is None else len(self._last)

    def _state(self) -> Mapping[str, Any]:
        """The last run's state with real values (the snapshot may be redacted)."""
        if self._running or self._last_state is None:
            return self.snapshot().state
        return self._last_state

    def stopped_early(self) -> dict[str, Any] | None:
        """Why the last answer is not one the model finished (or ``None``): ``reason`` is
        ``"max-iterations"`` (the tool budget ran out) or ``"max-tokens"`` (cut at the token
        limit)."""
        value = self._state().get("stopped_early")
        return None if value is None else dict(thaw(value))

    def output_contract_unmet(self) -> dict[str, Any] | None:
        """How the last answer failed the output schema after every retry (or ``None``)."""
        value = self._state().get("output_contract_unmet")
        return None if value is None else dict(thaw(value))

    # -- events --------------------------------------------------------------------------

    def on(self, pattern: str, fn: Listener) -> Callable[[], None]:
        """Listen to agent events: an exact name, ``"domain.*"`` or ``"*"``."""
        return self._events.on(pattern, fn)

    def once(self, pattern: str, fn: Listener) -> Callable[[], None]:
        return self._events.once(pattern, fn)

    def off(self, pattern: str, fn: Listener | None = None) -> None:
        self._events.off(pattern, fn)

    # -- running -------------------------------------------------------------------------

    async def run(
        self,
        message: str | Mapping[str, Any],
        *,
        identity: Identity | Mapping[str, Any] | None = None,
        session_id: str | None = None,
        continue_from: Conversation | None = None,
        timeout: float | None = None,
    ) -> str | Paused:
        """Run one turn and return the final answer, or :class:`Paused` when the run waits
        for a person (``is_paused(outcome)``; continue with :meth:`resume`).

        ``message`` is a non-empty str (or ``{"message": ..., "identity": ...}``).
        ``identity`` (an :class:`Identity` or a dict of its fields) and ``session_id`` say
        who the run is for: they reach every tool (``ctx.identity``, ``ctx.session_id``)
        and ``configure()``, and are committed and stored with the run.
        ``continue_from`` continues a conversation (``agent.checkpoint()``).
        """
        initial = _run_input(message, continue_from, identity, session_id)
        self._refuse_if_busy()
        if self._pending is not None:
            raise PendingQuestionError(
                f"agent {self._cfg.name!r} is waiting for a person's answer to "
                f"{self._pending.question!r} (call {self._pending.call.get('id')!r}): resume it "
                "with agent.resume(paused.checkpoint, answer), or drop it with "
                "agent.abandon_pause() before a new run"
            )
        return await self._drive(lambda ex: ex.run(initial, timeout=timeout, raise_on_error=False))

    async def resume(
        self,
        checkpoint: Checkpoint | str | bytes,
        answer: Any,
        *,
        identity: Identity | Mapping[str, Any] | None = None,
        session_id: str | None = None,
        timeout: float | None = None,
    ) -> str | Paused:
        """Continue a run that waits for a person, with their ``answer``, in this process or
        any other (the same agent definition; with a store, the same store).

        For ``ask_human`` the answer is text; for ``request_input`` data matching its
        schema; for a check-in ``"approve"`` or ``"decline"`` (or ``{"decision": ...,
        "note": ...}``). An answer the question cannot take, or another ``identity`` than the
        paused run's, is refused before the checkpoint is used. A checkpoint resumes once
        (:class:`CheckpointClaimedError` the second time). Returns the answer, or
        :class:`Paused` if the run waits for a person again.
        """
        cp = as_checkpoint(checkpoint)
        payload = cp.payload
        if not isinstance(payload, Mapping) or payload.get("kind") not in QUESTION_KINDS:
            raise InvalidAnswerError(
                f"checkpoint {cp.checkpoint_id} is not a question an agent asked (its pause "
                f"payload is {payload!r}); resume a chart's own pause with Executor.resume"
            )
        _check_same_caller(payload, identity, session_id)
        value = answer_value(payload, answer)
        self._refuse_if_busy()
        return await self._drive(
            lambda ex: ex.resume(cp, value, timeout=timeout, raise_on_error=False)
        )

    def resume_sync(
        self,
        checkpoint: Checkpoint | str | bytes,
        answer: Any,
        *,
        identity: Identity | Mapping[str, Any] | None = None,
        session_id: str | None = None,
        timeout: float | None = None,
    ) -> str | Paused:
        """``resume`` for callers without an event loop."""
        call = functools.partial(
            self.resume,
            checkpoint,
            answer,
            identity=identity,
            session_id=session_id,
            timeout=timeout,
        )
        return run_sync(call, name="Agent.resume_sync", twin="await agent.resume(...)")

    async def abandon_pause(self) -> dict[str, Any] | None:
        """Drop the question this agent's last run waits on, on the record: the waiting call
        gets a result saying the question was withdrawn and the run ends. Returns what was
        dropped (``question``, ``id``, ``name``), or ``None`` when nothing was waiting."""
        pending = self._pending
        if pending is None:
            return None
        self._refuse_if_busy()
        try:
            await self._drive(
                lambda ex: ex.resume(pending.checkpoint, {"abandon": True}, raise_on_error=False)
            )
        except CheckpointClaimedError:
            self._pending = None  # answered elsewhere: nothing waits here any more
            raise
        return {
            "question": pending.question,
            "id": pending.call["id"],
            "name": pending.call["name"],
        }

    def abandon_pause_sync(self) -> dict[str, Any] | None:
        """``abandon_pause`` for callers without an event loop."""
        return run_sync(
            self.abandon_pause, name="Agent.abandon_pause_sync", twin="await agent.abandon_pause()"
        )

    def _with_checkpoint(self, error: Exception, state: Mapping[str, Any]) -> Exception:
        """A provider failure, carrying the conversation up to the last completed iteration
        (``resume_on_error`` retries from there)."""
        if not isinstance(error, ProviderError) or "history" not in state:
            return error
        history = [dict(m) for m in thaw(state["history"])]
        failed = cast(RunCheckpointError, _checkpointed(type(error))(*error.args))
        failed.__dict__.update(error.__dict__)
        failed.__cause__ = error.__cause__
        failed.checkpoint = Conversation(history=history, agent=self._cfg.name)
        failed.run_id = self._last.run_id if self._last is not None else ""
        failed.last_completed_iteration = max(0, int(state.get("iteration", 1)) - 1)
        if failed.stage_error is not None:  # the engine's record points at what was raised
            failed.stage_error.__cause__ = failed
        return failed

    async def resume_on_error(
        self,
        checkpoint: Conversation | str | bytes,
        *,
        identity: Identity | Mapping[str, Any] | None = None,
        session_id: str | None = None,
        timeout: float | None = None,
    ) -> str | Paused:
        """Retry a run that failed at its provider, from the conversation it carried
        (``err.checkpoint`` of a :class:`RunCheckpointError`, or its JSON), in any process.

        No new user message is added: the next model call is the one that failed. It is a
        new run (a new run id, a full ``max_iterations``); tool calls of the failed
        iteration were never answered, so the model may ask for them again.
        """
        if isinstance(checkpoint, (str, bytes)):
            checkpoint = Conversation.from_json(checkpoint)
        if not isinstance(checkpoint, Conversation) or not checkpoint.history:
            raise InvalidRunInputError(
                "resume_on_error takes the checkpoint of a RunCheckpointError (a Conversation "
                "with at least the person's message)"
            )
        said = [m for m in checkpoint.history if is_said_by_person(m)]
        if not said:
            raise InvalidRunInputError(
                "resume_on_error: the conversation holds no message from the person to answer"
            )
        initial = _run_input(str(said[-1]["content"]), checkpoint, identity, session_id)
        initial["retry"] = True
        self._refuse_if_busy()
        return await self._drive(lambda ex: ex.run(initial, timeout=timeout, raise_on_error=False))

    def resume_on_error_sync(
        self,
        checkpoint: Conversation | str | bytes,
        *,
        identity: Identity | Mapping[str, Any] | None = None,
        session_id: str | None = None,
        timeout: float | None = None,
    ) -> str | Paused:
        """``resume_on_error`` for callers without an event loop."""
        call = functools.partial(
            self.resume_on_error,
            checkpoint,
            identity=identity,
            session_id=session_id,
            timeout=timeout,
        )
        return run_sync(
            call, name="Agent.resume_on_error_sync", twin="await agent.resume_on_error(...)"
        )

    def _refuse_if_busy(self) -> None:
        if self._running:
            raise RunInFlightError(
                f"agent {self._cfg.name!r} is already running a turn; await it first (or use "
                "another Agent instance for concurrent turns)"
            )

    async def _drive(self, start: Callable[[Executor], Awaitable[RunResult]]) -> str | Paused:
        """Run or resume on a fresh executor and read the outcome: the answer, a pause, or
        the error raised as :func:`_surfaced` says."""
        self._running = True
        try:
            result = await start(self._executor())
        finally:
            self._running = False
        self._last = result.snapshot
        self._last_state = result.state
        self._pending = None
        if result.error is not None:
            raise self._with_checkpoint(_surfaced(result.error), result.state)
        if result.status == "paused":
            assert result.checkpoint is not None
            cp = result.checkpoint
            payload = cp.payload
            self._pending = Paused(
                question=str(payload["question"]),
                kind=str(payload["kind"]),
                call=dict(payload["call"]),
                checkpoint=cp,
                schema=payload.get("schema"),
            )
            return self._pending
        if "final_answer" not in result.state:  # ended by abandon_pause
            return ""
        return str(result.state["final_answer"])

    async def run_result(
        self,
        message: str | Mapping[str, Any],
        *,
        identity: Identity | Mapping[str, Any] | None = None,
        session_id: str | None = None,
        continue_from: Conversation | None = None,
        timeout: float | None = None,
    ) -> AgentResult:
        """Run one turn like :meth:`run`; the answer with its usage, messages and whether
        it stopped early (``max-iterations``, or ``max-tokens`` for a cut answer)."""
        outcome = await self.run(
            message,
            identity=identity,
            session_id=session_id,
            continue_from=continue_from,
            timeout=timeout,
        )
        assert self._last is not None and self._last_state is not None
        paused = outcome if isinstance(outcome, Paused) else None
        return result_of(self._last, self._last_state, paused)

    def run_sync(
        self,
        message: str | Mapping[str, Any],
        *,
        identity: Identity | Mapping[str, Any] | None = None,
        session_id: str | None = None,
        continue_from: Conversation | None = None,
        timeout: float | None = None,
    ) -> str | Paused:
        """``run`` for callers without an event loop."""
        call = functools.partial(
            self.run,
            message,
            identity=identity,
            session_id=session_id,
            continue_from=continue_from,
            timeout=timeout,
        )
        return run_sync(call, name="Agent.run_sync", twin="await agent.run(...)")

    async def run_typed(
        self, message: str | Mapping[str, Any], **kwargs: Any
    ) -> BaseModel | Paused:
        """Run and return the answer parsed into the output schema's model (or
        :class:`Paused` when the run waits for a person)."""
        if self._cfg.output_model is None:
            raise AgentBuildError("run_typed needs .output_schema(Model) on the builder")
        answer = await self.run(message, **kwargs)
        if isinstance(answer, Paused):
            return answer
        unmet = self.output_contract_unmet()
        if unmet is not None:
            raise OutputContractError(
                f"the answer did not match {self._cfg.output_model.__name__} after "
                f"{unmet['attempts']} attempt(s): {unmet['error']}",
                attempts=int(unmet["attempts"]),
                last_error=str(unmet["error"]),
                answer=answer,
            )
        return self._cfg.output_model.model_validate_json(answer)

    def checkpoint(self) -> Conversation:
        """The conversation so far, with the last answer appended: continue it anywhere."""
        state = self._state()
        history = [dict(m) for m in thaw(state["history"])]
        if "final_answer" in state:
            history.append({"role": "assistant", "content": state["final_answer"]})
        return Conversation(history=history, agent=self._cfg.name)

    async def follow_up(self, message: str | Mapping[str, Any], **kwargs: Any) -> str | Paused:
        """Continue this agent's last conversation with a new message.

        Before any run there is nothing to continue: :class:`NoConversationError` (a
        follow-up that quietly became a first turn would hide the mistake).
        """
        if self._last is None:
            raise NoConversationError(
                f"agent {self._cfg.name!r} has no conversation to follow up: call run(...) "
                "first, or pass continue_from= a Conversation you kept"
            )
        return await self.run(message, continue_from=self.checkpoint(), **kwargs)

    # -- runtime hooks -------------------------------------------------------------------

    def attach(self, recorder: object) -> Callable[[], None]:
        """Attach a recorder to every later run; returns the function that detaches it.
        Not idempotent: attaching the same recorder twice attaches it twice."""
        if self._running:
            raise RunInFlightError(
                f"agent {self._cfg.name!r} is running a turn; attach recorders between runs"
            )
        self._attached.append(recorder)

        def detach() -> None:
            if recorder in self._attached:
                self._attached.remove(recorder)

        return detach

    def emit(self, name: str, payload: Any = None) -> None:
        """Emit a custom event from inside a run (a tool, ``configure()``): it is recorded
        in the running stage's commit like any emit, and listeners hear it. Outside a run
        there is nothing to record it in: :class:`AgentNotRunError`."""
        scope = CURRENT_SCOPE.get()
        if scope is None or not self._running:
            raise AgentNotRunError(
                f"agent.emit({name!r}) records into a run: call it from a tool or from "
                "configure() while run(...) is in progress"
            )
        scope.emit(name, payload)

    def listener_count(self, pattern: str | None = None) -> int:
        """How many listeners are on ``pattern`` (on every pattern when ``None``)."""
        return self._events.listener_count(pattern)

    def remove_all_listeners(self) -> None:
        """Remove every listener (attached recorders stay: they detach themselves)."""
        self._events.remove_all()

    def shutdown(self) -> None:
        """Release what this agent holds between runs: every attached recorder with a
        ``close()`` is closed, and all are detached. The agent stays usable; listeners stay.
        Refused while a run is in flight (:class:`RunInFlightError`)."""
        if self._running:
            raise RunInFlightError(
                f"agent {self._cfg.name!r} is running a turn; shut it down after the run ends"
            )
        attached, self._attached = self._attached, []
        for recorder in attached:
            close = getattr(recorder, "close", None)
            if callable(close):
                close()


QUESTION_KINDS = ("ask_human", "request_input", "check_in")


def _tool_from_mapping(spec: Mapping[str, Any]) -> Tool:
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


def _checkpointed(kind: type[ProviderError]) -> type[ProviderError]:
    """The class raised for a provider failure of ``kind`` mid-run: both a
    :class:`RunCheckpointError` and ``kind`` (so ``except kind`` keeps working)."""
    made = _CHECKPOINTED.get(kind)
    if made is None:
        made = type("RunCheckpointError", (RunCheckpointError, kind), {"__module__": "trackway"})
        _CHECKPOINTED[kind] = made
    return made


def as_checkpoint(checkpoint: Checkpoint | str | bytes) -> Checkpoint:
    """A checkpoint given as the object or as its JSON."""
    if isinstance(checkpoint, Checkpoint):
        return checkpoint
    if isinstance(checkpoint, (str, bytes)):
        return Checkpoint.from_json(checkpoint)
    raise InvalidAnswerError(
        f"resume() takes the Paused outcome's checkpoint (or its JSON), got "
        f"{type(checkpoint).__name__}"
    )


def _check_same_caller(payload: Mapping[str, Any], identity: Any, session_id: Any) -> None:
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
class _Runtime:
    """Where an agent's runs are kept: the engine's store, durability and redaction."""

    store: RunStore | None = None
    durability: Durability = "sync"
    redact: RedactionPolicy | None = None


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


def _surfaced(error: RunError) -> Exception:
    """The error ``run`` raises: a provider failure or a ``configure()`` mistake as itself
    (``except ProviderError`` works), with the engine's :class:`StageError` kept on its
    ``stage_error``."""
    cause = error.__cause__
    if isinstance(error, StageError) and isinstance(cause, (ProviderError, AgentBuildError)):
        cause.stage_error = error
        return cause
    return error


def _run_input(
    message: Any,
    continue_from: Conversation | None,
    identity: Any = None,
    session_id: Any = None,
) -> dict[str, Any]:
    """Check the run input before anything runs; say what was wrong."""
    if isinstance(message, Mapping):
        if identity is not None and message.get("identity") is not None:
            raise InvalidRunInputError(
                "the identity is given twice (in the input dict and as identity=); give it once"
            )
        unknown = set(message) - {"message", "identity"}
        if unknown:
            raise InvalidRunInputError(
                f"run input has unknown keys {', '.join(sorted(map(repr, unknown)))}; allowed: "
                "'message', 'identity'"
            )
        if "message" not in message:
            raise InvalidRunInputError("run input dict needs a 'message'")
        identity = message.get("identity", identity)
        message = message["message"]
    if not isinstance(message, str):
        raise InvalidRunInputError(
            f"the message must be a str, got {type(message).__name__}; pass run('...') or "
            "run({'message': '...', 'identity': ...})"
        )
    if not message.strip():
        raise InvalidRunInputError("the message is empty; there is nothing to answer")
    initial: dict[str, Any] = {"message": message}
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
    return initial
