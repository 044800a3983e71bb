"""``Agent``: a ReAct loop declared as a flowchart, run by the engine.

The chart is ``seed → [system-prompt] → [tools] → [window] → [offer] → call-llm →
route → tool-calls (loops back) | [wrap-up] (loops back) | [output-retry] (loops back) |
final``; stages in brackets are
mounted only when configured. Every model request is assembled from committed state alone,
so it can be rebuilt from the log (``served_at``).

``Agent`` is one object with one state machine (idle, running, paused); this module holds
that machine. The parts with seams of their own live beside it: the last run's record
(``_agent_record``), the conversation going on after a run (``_agent_continue``), listeners,
recorders and tool sessions (``_agent_hooks``), the sync twins (``_agent_sync``), being
driven by a worker (``_worker_target``), the builder (``_builder``), input and caller checks
(``_inputs``), the stages (``_stages``, ``_dispatch``).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Literal, cast

import anyio
from pydantic import BaseModel

from trackway.engine import (
    Checkpoint,
    Durability,
    Executor,
    FlowChart,
    RedactionPolicy,
    RunResult,
    RunStore,
    Snapshot,
)
from trackway.engine.core._keywords import checked_keywords
from trackway.tools import Identity
from trackway.tools.define._sessions import run_end_reason

from ..artifacts._building import ArtifactsReading
from ..explain._explaining import Explaining
from ..grounding._gate import withheld_error
from ..grounding._validation_building import AnswerRecord
from ..live._building import Voiced
from ..loop._inputs import (
    QUESTION_KINDS,
    Runtime,
    as_checkpoint,
    check_same_caller,
    run_input,
    surfaced,
)
from ..loop._person import answer_value
from ..loop._stages import AgentConfig
from ..messages._conversation import Conversation
from ..messages._errors import AgentBuildError, InvalidAnswerError
from ..messages._paused import Paused
from ..middleware._message_doors import DENIED_KEY, denied_error
from ..providers._caching import CachePolicy
from ..providers._model_string import provider_for
from ..providers._provider import Provider
from ..time._asks import TimeAnswerRefusedError, refused_ask
from ..time._layer import check_clock, resume_value
from ..time._record import TimeRecord
from ._agent_continue import Continuing
from ._agent_hooks import Hooks
from ._agent_record import LiveLog, RunRecord
from ._agent_sync import AgentSyncTwins
from ._builder import AgentBuilder
from ._events import EventBus
from ._result import AgentResult, result_of
from ._stream import Streaming
from ._typed import TypedAnswers
from ._worker_target import Workable

__all__ = ["Agent"]


class Agent(
    Hooks,
    RunRecord,
    Continuing,
    AgentSyncTwins,
    Streaming,
    Workable,
    TypedAnswers,
    Explaining,
    AnswerRecord,
    Voiced,
    ArtifactsReading,
    TimeRecord,
):
    """An LLM agent whose every step is a commit. Build with ``Agent.create(...)``."""

    @staticmethod
    @checked_keywords
    def create(
        *,
        provider: Provider | None = None,
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
        thinking_budget: int | Literal["low", "medium", "high"] | None = None,
        name: str = "agent",
        wrap_up_at_max_iterations: bool = True,
        stream: bool = True,
        store: RunStore | None = None,
        durability: Durability = "sync",
        redact: RedactionPolicy | None = None,
        tool_arg_validation: Literal["enforce", "warn", "off"] = "enforce",
        max_tool_result_chars: int | None = None,
        repeated_call_nudge: bool = True,
        max_parallel_tool_calls: int = 4,
        pricing_table: Mapping[str, Mapping[str, float]] | None = None,
        cost_budget: tuple[float, Literal["warn", "halt"]] | None = None,
        skill_scoped_tools: bool = False,
        react_mode: Literal["dynamic", "classic"] = "dynamic",
        system_prompt_cache_policy: Literal["always", "never"] | CachePolicy | None = None,
        cache_strategy: Literal["prefix", "conversation"] | None = None,
        caching_disabled: bool | None = None,
        cache: Sequence[str] | None = None,
        keep_ledger_facts: int | bool | None = None,
    ) -> AgentBuilder:
        """Start configuring an agent.

        The model is named once: on the provider (``openai("gpt-4o")``), or here with
        ``model=`` for a provider that names none (``mock(...)``, your own); both, when they
        differ, is refused. The request options (``temperature``, ``max_tokens``,
        ``tool_choice`` — ``"auto"``, ``"required"``, ``"none"`` or a tool's name —, ``seed``,
        ``top_p``, ``stop``, ``response_format``, ``extra_body``) go with every call; they are
        committed in ``settings``, so ``served_at`` and ``replay`` see them, and
        ``configure()`` may change them for one run. ``stream`` uses the provider's streaming
        when it has it. ``thinking_budget`` (tokens, or ``"low"``/``"medium"``/``"high"``) asks
        for reasoning (docs/guide/providers.md, Thinking).

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
        ``max_parallel_tool_calls``: the calls of one answer that need nobody run at once,
        this many at a time; their results are served and recorded in call order (``1``:
        one after another).

        ``pricing_table={model: {"input": ..., "output": ..., "cache_read": ...,
        "cache_write": ...}}`` (USD per million tokens) prices every call in the ``cost``
        ledger; ``cost_budget=(usd, "warn" | "halt")`` records the call that goes over it and,
        under ``"halt"``, stops the run before its next call (``stopped_early`` reason
        ``cost-budget``).

        ``skill_scoped_tools=True`` serves a skill's tools only while that skill is active
        (the agent's own ``.tool()`` tools and the doors are always served).
        ``react_mode``: ``"dynamic"`` (the default) decides what each call is offered before
        it when a feature needs that; ``"classic"`` promises one tool list for the whole run
        and refuses at ``build()`` every feature that would change it per call.
        ``"dynamic-grouped"`` is refused by name: the chart already declares each part of a
        model call as its own stage, so there is nothing to group.

        ``keep_ledger_facts``: the ceiling of ``.findings()``'s fact hold (its own wins).

        Prompt caching (``cache=`` breakpoints, or the three caching arguments): see
        ``docs/guide/providers.md``; unset, no marker is sent.

        Without ``provider=``, ``model="openai:gpt-4o-mini"`` (or ``"anthropic:..."``) picks
        the provider from the prefix, configured from the environment as the vendors' SDKs
        are (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``; ``ANTHROPIC_...``).
        """
        if provider is None:
            if model is None:
                raise AgentBuildError(
                    "Agent.create() needs a model: provider=openai('gpt-4o-mini') (or "
                    "anthropic(...), mock(...), your own), or model='openai:gpt-4o-mini'"
                )
            provider, model = provider_for(model), None
        caching: dict[str, Any] = {"system_prompt_cache_policy": system_prompt_cache_policy}
        caching |= {
            "cache": cache,
            "cache_strategy": cache_strategy,
            "caching_disabled": caching_disabled,
        }
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
            thinking_budget=thinking_budget,
            name=name,
            wrap_up_at_max_iterations=wrap_up_at_max_iterations,
            stream=stream,
            store=store,
            durability=durability,
            redact=redact,
            tool_arg_validation=tool_arg_validation,
            max_tool_result_chars=max_tool_result_chars,
            repeated_call_nudge=repeated_call_nudge,
            max_parallel_tool_calls=max_parallel_tool_calls,
            pricing_table=pricing_table,
            cost_budget=cost_budget,
            skill_scoped_tools=skill_scoped_tools,
            react_mode=react_mode,
            keep_ledger_facts=keep_ledger_facts,
            **{k: v for k, v in caching.items() if v is not None},
        )

    def __init__(
        self,
        cfg: AgentConfig | None = None,
        chart: FlowChart | None = None,
        recorders: Sequence[object] = (),
        runtime: Runtime | None = None,
        **given: Any,
    ) -> None:
        if given or not isinstance(cfg, AgentConfig) or chart is None:
            raise AgentBuildError(
                "Agent(...) is not called directly: build an agent with "
                "Agent.create(provider=..., model=...).tool(...).build() "
                "(see docs/guide/agent.md)"
            )
        self._cfg = cfg
        self._chart = chart
        self._events = EventBus()
        self._live = LiveLog()
        self._attached: list[object] = list(recorders)
        self._runtime = runtime or Runtime()
        self._running = False  # some run is in flight (the count is _in_flight)
        self._in_flight = 0
        self._last: Snapshot | None = None
        self._last_state: Mapping[str, Any] | None = None  # real values, even when redacted
        self._pending: Paused | None = None
        self._made: tuple[Runtime, FlowChart, int, Executor] | None = None
        self._executor()  # a bad store, durability or redact= is refused at build

    def _executor(self, live: LiveLog | None = None) -> Executor:
        """A fresh executor for one run: its own live log, so concurrent runs never share
        state (an ``Agent`` serves many runs at once, as a web server needs). Built once
        and copied with each run's recorders while the chart, the runtime (store,
        durability, redaction) and the iteration limit stay what they were."""
        runtime = self._runtime
        limit = self._cfg.max_iterations + self._cfg.output_retries + 2
        recorders = (self._events, live or self._live, *self._attached)
        made = self._made
        if made is not None and made[0] is runtime and made[1] is self._chart and made[2] == limit:
            return made[3]._with_recorders(recorders, checked=2)  # its bus and live log
        executor = Executor(
            self._chart,
            recorders=recorders,
            max_iterations=limit,
            store=runtime.store,
            durability=runtime.durability,
            redact=runtime.redact,
        )
        self._made = (runtime, self._chart, limit, executor)
        return executor

    def __repr__(self) -> str:
        return f"<Agent {self._cfg.name!r} model={self._cfg.model!r} tools={list(self._cfg.tools)}>"

    # -- introspection -------------------------------------------------------------------

    @property
    def model(self) -> str:
        """The model every call names (from the provider, or ``Agent.create(model=)``)."""
        return self._cfg.model

    @property
    def name(self) -> str:
        return self._cfg.name

    @property
    def system_prompt_cache_policy(self) -> str | CachePolicy | None:
        """The function deciding per call, else ``"always"`` or ``"never"`` (whether the
        system prompt has a breakpoint); None when no caching is configured."""
        cache = self._cfg.options.get("cache")
        if self._cfg.cache_policy is not None or cache is None:
            return cast("CachePolicy | None", self._cfg.cache_policy)
        return "always" if "system" in cache else "never"

    def spec(self) -> FlowChart:
        """The agent's chart."""
        return self._chart

    # -- running -------------------------------------------------------------------------

    async def run(
        self,
        message: str | Mapping[str, Any],
        *,
        identity: Identity | Mapping[str, Any] | None = None,
        session_id: str | None = None,
        continue_from: Conversation | None = None,
        timeout: float | None = None,
        time: Any = None,
    ) -> str | Paused:
        """Run one turn and return the final answer, or :class:`Paused` when the run waits
        for a person (``is_paused(outcome)``; continue with :meth:`resume`).

        ``message`` is a non-empty str (or ``{"message": ..., "identity": ...}``).
        ``identity`` (an :class:`Identity` or a dict of its fields) and ``session_id`` say
        who the run is for: they reach every tool (``ctx.identity``, ``ctx.session_id``)
        and ``configure()``, and are committed and stored with the run.
        ``continue_from`` continues a conversation (``agent.checkpoint()``). ``time``:
        the run's clock under ``.time()`` (``{"now", "zone"}`` or ``Clock``; docs/guide/time.md).

        With middleware (``.input_middleware``, ``.message_middleware``, ``act(...)``): a
        message an input link refuses raises :class:`InputRefusedError` (no model was
        called); an answer an output link denies raises :class:`AnswerDeniedError`. Both
        runs are recorded, the decision and the refusal in them.
        """
        initial = run_input(message, continue_from, identity, session_id, time)
        check_clock(self._cfg.time, initial.get("time"), "run")
        return await self._drive(lambda ex: ex.run(initial, timeout=timeout, raise_on_error=False))

    async def resume(
        self,
        checkpoint: Checkpoint | str | bytes,
        answer: Any,
        *,
        identity: Identity | Mapping[str, Any] | None = None,
        session_id: str | None = None,
        timeout: float | None = None,
        time: Any = None,
    ) -> str | BaseModel | Paused:
        """Continue a run that waits for a person, with their ``answer``, in this process or
        any other (the same agent definition; with a store, the same store). A run
        ``run_typed`` started answers typed: the output schema's model.

        For ``ask_human`` the answer is text; for ``request_input`` data matching its
        schema; for a check-in ``"approve"`` or ``"decline"`` (or ``{"decision": ...,
        "note": ...}``). An answer the question cannot take, or another ``identity`` than the
        paused run's, is refused before the checkpoint is used. A checkpoint resumes once
        (:class:`CheckpointClaimedError` the second time). Returns the answer, or
        :class:`Paused` if the run waits for a person again. ``checkpoint`` may also be the
        paused run's id (or its checkpoint id) in the agent's store.
        """
        kept: list[RunResult] = []
        try:
            start = self._resuming(checkpoint, answer, identity, session_id, timeout, time)
        except TimeAnswerRefusedError as refused:  # the same ask again; nothing ran
            return refused.paused
        return self._typed(await self._drive(start, kept), kept[0].state)

    def _resuming(
        self,
        checkpoint: Checkpoint | str | bytes,
        answer: Any,
        identity: Identity | Mapping[str, Any] | None,
        session_id: str | None,
        timeout: float | None,
        time: Any = None,
    ) -> Callable[[Executor], Awaitable[RunResult]]:
        """Check a resume (question, caller, answer) before any claim; how to start it."""
        runtime = self._runtime
        cp = as_checkpoint(checkpoint, runtime.store, opened=runtime.redact is not None)
        payload = cp.payload
        if not isinstance(payload, Mapping) or payload.get("kind") not in QUESTION_KINDS:
            raise InvalidAnswerError(
                f"checkpoint {cp.checkpoint_id} is not a question an agent asked (its pause "
                f"payload is {payload!r}); resume a chart's own pause with Executor.resume"
            )
        check_same_caller(payload, identity, session_id)
        refused_ask(self._cfg.time, cp, answer)  # a time ask's answer, checked first
        value = answer_value(payload, answer)  # (claimed once, whoever resumes it)
        value = resume_value(self._cfg.time, value, time)  # .time(): the resume's clock
        return lambda ex: ex.resume(cp, value, timeout=timeout, raise_on_error=False)

    async def _drive(
        self,
        start: Callable[[Executor], Awaitable[RunResult]],
        kept: list[RunResult] | None = None,
    ) -> str | Paused:
        """Run or resume on a fresh executor and read the outcome: the answer, a pause, or
        the error raised as :func:`surfaced` says. ``kept`` receives this run's result (the
        agent's "last run" may be another's by then: runs may be concurrent)."""
        live = self._live = LiveLog()  # snapshot() during runs shows the latest started
        self._in_flight += 1
        self._running = True
        try:
            try:
                result = await start(self._executor(live))
            except BaseException as exc:
                # cancelled by the caller (a cancel scope, a stream left early), let go by a
                # worker, or failed outside any stage: the run is over here all the same
                if live.run_id and len(self._cfg.sessions):
                    await self._close_run_sessions(live.run_id, run_end_reason(exc))
                raise
            if result.status != "paused" and len(self._cfg.sessions):
                reason = "run_error" if result.error is not None else "run_end"
                await self._close_run_sessions(result.run_id, reason)
        finally:
            self._in_flight -= 1
            self._running = self._in_flight > 0
        if kept is not None:
            kept.append(result)
        self._last = result.snapshot
        self._last_state = result.state
        self._bind_explained(result)  # .self_explain(): evidence binds as a run ends
        self._pending = None
        if result.error is not None:
            raise self._with_checkpoint(surfaced(result.error), result.state)
        if DENIED_KEY in result.state:  # a middleware link refused the message or the answer
            raise denied_error(result.state[DENIED_KEY], result.run_id)
        withheld = withheld_error(result.state, result.run_id)  # the evidence gate's 'rails'
        if withheld is not None:
            raise withheld
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
                format=payload.get("format"),
                choices=payload.get("choices"),
            )
            return self._pending
        if "final_answer" not in result.state:  # ended by abandon_pause
            return ""
        return str(result.state["final_answer"])

    async def _close_run_sessions(self, run_id: str, reason: str) -> None:
        """Close the run- and call-scoped tool sessions ``run_id`` leaves, shielded: a
        cancelled caller still gets its sandboxes, sockets and processes closed."""
        sessions = self._cfg.sessions
        heard = functools.partial(self._heard, run_id=run_id)
        with anyio.CancelScope(shield=True):
            await sessions.close(sessions.of_run(run_id), reason, heard)

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
        initial = run_input(message, continue_from, identity, session_id)
        check_clock(self._cfg.time, initial.get("time"), "run")  # .time()
        kept: list[RunResult] = []
        outcome = await self._drive(
            lambda ex: ex.run(initial, timeout=timeout, raise_on_error=False), kept
        )
        (result,) = kept
        paused = outcome if isinstance(outcome, Paused) else None
        return result_of(result.snapshot, result.state, paused)

    def override(
        self, *, provider: Provider, model: str | None = None
    ) -> AbstractContextManager[None]:
        """Run this agent on ``provider`` (and ``model``) inside a ``with`` block, restored
        after it, also on error: ``with agent.override(provider=TestModel()): ...``.

        The model inside: ``model``, else the one ``provider`` names, else the agent's own.
        Refused while the agent is running a turn (:class:`RunInFlightError`).
        """
        from ._override import override

        return override(self._cfg, self._running, provider, model)
