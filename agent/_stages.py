"""The agent's stages. Each reads committed state and writes what it did; nothing else is
kept. A feature that is not configured mounts no stage and writes no key.

State keys: ``user_message``, ``history`` (the conversation sent to the model, grown by
appends), ``settings`` (model and the request options: temperature, max_tokens, tool_choice,
seed, top_p, stop, response_format, extra_body), ``iteration``, ``max_iterations``,
``system_prompt``, ``tools``, ``response`` (the last model answer), ``receipts`` (one per
call), ``usage_total``, ``wrap_up_asked``, ``stopped_early``, ``output_attempts``,
``output_error``, ``output_contract_unmet``, ``final_answer``.
"""

from __future__ import annotations

import hashlib
import inspect
import math
from collections.abc import Callable, Mapping
from contextlib import aclosing
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import anyio
import jsonschema
import orjson
from pydantic import BaseModel, ValidationError

from trackway.engine import Decision, Scope, StagePath, thaw
from trackway.tools import Identity, Tool, ToolContext
from trackway.tools._gate import GateDecision, gate_decision
from trackway.tools._outcome import RecordedOutcome, argument_errors, read_envelope, unparsed

from ._errors import AgentBuildError
from ._messages import LLMResponse, StreamDelta
from ._options import REQUEST_OPTIONS, check_request_options, check_tool_choice
from ._person import outcome_of, question_for
from ._provider import Provider, ProviderResponseError
from ._request import MessageCache, assemble, receipt_for
from ._tool_ids import call_repairs, unique_calls
from ._usage import usage_reported, via

__all__ = [
    "CONFIGURABLE",
    "CURRENT_SCOPE",
    "WRAP_UP_PROMPT",
    "AgentConfig",
    "apply_configured",
    "stage_functions",
]

WRAP_UP_PROMPT = (
    "You have reached the limit of tool calls for this request. Do not call any tools. "
    "Give your best final answer now from what you already know, and say what you could "
    "not find out."
)


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
    validators: dict[str, Any] = field(default_factory=dict)
    """One argument validator per tool (part of the definition, not of a run)."""
    arg_validation: str = "enforce"
    """``tool_arg_validation``: ``"enforce"``, ``"warn"`` or ``"off"``."""
    max_tool_result_chars: int | None = None
    """Cut longer tool results to this many characters (saying so)."""
    repeated_call_nudge: bool = True
    """Tell the model when a call repeats an earlier one's arguments and result."""
    gate: Callable[[dict[str, Any], ToolContext], Any] | None = None
    """The agent's gate over every call (a tool's own ``gate`` decides first)."""
    check_ins: dict[str, str | None] = field(default_factory=dict)
    """Tools whose calls wait for a person's approval, with the question (``None``: a
    default naming the call)."""

    @property
    def asks_people(self) -> bool:
        """Some call may wait for a person (a tool that asks one, a check-in, a gate)."""
        return (
            bool(self.check_ins)
            or self.gate is not None
            or any(t.asks is not None or t.gate is not None for t in self.tools.values())
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


def _emit(scope: Scope, name: str, payload: Any) -> None:
    scope.emit(name, payload)


def stage_functions(cfg: AgentConfig) -> dict[str, Callable[..., Any]]:
    """The stage functions of one agent, closed over its configuration."""

    def seed(scope: Scope) -> None:
        message = scope["message"]
        prior = thaw(scope.get("prior_history", []))
        settings: dict[str, Any] = {"model": cfg.model, **cfg.options}
        if cfg.arg_validation != "enforce":  # what the model reads of bad arguments changes
            settings["tool_arg_validation"] = cfg.arg_validation
        if cfg.max_tool_result_chars is not None:
            settings["max_tool_result_chars"] = cfg.max_tool_result_chars
        if not cfg.repeated_call_nudge:
            settings["repeated_call_nudge"] = False
        identity = scope.get("identity")
        if identity is not None:  # who the run is for, as the caller said (never invented)
            scope["identity"] = identity
        if scope.get("session_id") is not None:
            scope["session_id"] = scope["session_id"]
        if cfg.configure is not None:
            context = {
                "message": message,
                "identity": None if identity is None else Identity.model_validate(thaw(identity)),
                "run_id": scope.run_id,
                "defaults": {"model": cfg.model, "instructions": cfg.system, **cfg.options},
            }
            token = CURRENT_SCOPE.set(scope)
            try:
                chosen = dict(cfg.configure(context))
            finally:
                CURRENT_SCOPE.reset(token)
            apply_configured(cfg, chosen, settings)
            if "instructions" in chosen:
                scope["resolved_instructions"] = chosen["instructions"]
        scope["settings"] = settings
        scope["user_message"] = message
        scope["iteration"] = 1
        scope["max_iterations"] = cfg.max_iterations
        if scope.get("retry"):  # resume_on_error: the failed call is asked again as it was
            scope.extend("history", prior)
        else:
            scope.extend("history", [*prior, {"role": "user", "content": message}])
        _emit(scope, "agent.turn_start", {"message": message, "agent": cfg.name})

    def system_prompt(scope: Scope) -> None:
        text = scope.get("resolved_instructions", cfg.system)
        if text is not None:
            scope["system_prompt"] = text

    def tools(scope: Scope) -> None:
        scope["tools"] = [tool.spec() for tool in cfg.tools.values()]
        if cfg.asks_people:  # which calls wait for a person: replay needs no code for it
            scope["people"] = {
                "asks": {n: dict(t.asks) for n, t in cfg.tools.items() if t.asks is not None},
                "check_ins": dict(cfg.check_ins),
                "gated": cfg.gate is not None
                or any(t.gate is not None for t in cfg.tools.values()),
            }

    async def call_llm(scope: Scope) -> None:
        state = _Reader(scope)
        # one cache per run and per mounted copy of the chart; it dies with the run
        mount = StagePath.parse(scope.stage_path).parent
        cache = scope.run_local(("agent-messages", id(cfg), mount), MessageCache)
        assembled = assemble(state, cache)
        k = len(scope.get("receipts", [])) + 1
        iteration = scope["iteration"]
        _emit(scope, "agent.iteration_start", {"iteration": iteration})
        _emit(scope, "stream.llm_start", {"k": k, "model": assembled.request.model})
        response, streamed = await _call(cfg, scope, assembled.request)
        # the answer is committed as the model gave it; the calls are acted on with one id
        # each (unique_calls, applied again by every stage that reads them)
        repairs = call_repairs(response.tool_calls)
        usage = None if response.usage is None else response.usage.model_dump(exclude_none=True)
        receipt = receipt_for(k, assembled, usage, response.stop_reason)
        described = via(cfg.provider, streamed)
        if described is not None:
            receipt["via"] = described
        if repairs:
            receipt["tool_call_repairs"] = repairs
            _emit(scope, "agent.tool_calls_repaired", {"k": k, "repairs": repairs})
        scope.append("receipts", receipt)
        scope["response"] = response.model_dump(mode="json", exclude_none=True)
        # the sum of what providers reported; a call that reported nothing has usage None in
        # its receipt and is not counted as zero (RunUsage.unreported_calls)
        totals = dict(scope.get("usage_total", {"input_tokens": 0, "output_tokens": 0}))
        if usage:
            for key in ("input_tokens", "output_tokens"):
                totals[key] = totals.get(key, 0) + (usage.get(key) or 0)
            scope["usage_total"] = totals
        _emit(
            scope,
            "stream.llm_end",
            {
                "k": k,
                "tool_calls": len(response.tool_calls),
                "usage": usage,
                "stop_reason": response.stop_reason,
            },
        )
        _emit(
            scope,
            "cost.tick",
            {"k": k, "usage": usage, "reported": usage_reported(usage), "total": totals},
        )

    def route(scope: Scope) -> Decision:
        response = scope["response"]
        calls = response.get("tool_calls") or ()
        iteration = scope["iteration"]
        limit = scope["max_iterations"]
        evidence: dict[str, Any] = {
            "tool_calls": len(calls),
            "iteration": iteration,
            "max_iterations": limit,
        }
        if calls and cfg.tools:
            if iteration < limit:
                return Decision("tool-calls", {**evidence, "chosen": "tool-calls"})
            if cfg.wrap_up and not scope.get("wrap_up_asked"):
                return Decision(
                    "wrap-up",
                    {
                        **evidence,
                        "chosen": "wrap-up",
                        "why": "max_iterations reached with tool calls",
                    },
                )
            return Decision("final", {**evidence, "chosen": "final", "why": "cut short"})
        if cfg.output_model is not None:
            error = _output_error(cfg.output_model, response.get("content", ""))
            if error is not None:
                scope["output_error"] = error
                attempts = scope.get("output_attempts", 0)
                if attempts < cfg.output_retries:
                    return Decision(
                        "output-retry", {**evidence, "chosen": "output-retry", "error": error}
                    )
            elif "output_error" in scope:
                del scope["output_error"]
        return Decision("final", {**evidence, "chosen": "final"})

    async def tool_calls(scope: Scope) -> None:
        response = scope["response"]
        calls = unique_calls(response["tool_calls"])[0]
        batch = _Batch(scope["iteration"])
        batch.messages.append(
            {"role": "assistant", "content": response.get("content", ""), "tool_calls": calls}
        )
        await _dispatch(cfg, scope, calls, 0, batch)

    async def tool_calls_resumed(scope: Scope, value: Any) -> None:
        """The person answered: the waiting call gets its result, then the rest run."""
        pending = thaw(scope["pending_question"])
        calls = unique_calls(scope["response"]["tool_calls"])[0]
        index = pending["index"]
        call = calls[index]
        value = thaw(value)
        _emit(scope, "agent.resumed", {"id": call["id"], "name": call["name"], **value})
        if value.get("abandon"):
            batch = _Batch(scope["iteration"])
            batch.add(scope, call, Outcome("denied", WITHDRAWN), announce=False)
            for later in calls[index + 1 :]:
                batch.add(scope, later, Outcome("denied", NOT_RUN), announce=False)
            batch.flush(scope)
            scope["abandoned_question"] = pending
            del scope["pending_question"]
            scope.break_()
            return
        status, text = outcome_of(pending, value)
        iteration = scope["iteration"]
        if status == "run":
            done = await _run_one(cfg, scope, call, iteration)
        else:
            assert text is not None
            done = Outcome(status, text)
        if pending.get("gate"):  # a gate asked: the row says so, for replay and readers
            done = done._replace(flags={**(done.flags or {}), "gate": "ask"})
        batch = _Batch(iteration)
        batch.add(scope, call, done)
        await _dispatch(cfg, scope, calls, index + 1, batch)

    def wrap_up(scope: Scope) -> None:
        response = scope["response"]
        iteration = scope["iteration"]
        scope.append("history", {"role": "user", "content": WRAP_UP_PROMPT, "origin": "library"})
        scope["wrap_up_asked"] = True
        pending = unique_calls(response.get("tool_calls"))[0]
        stopped = {
            "reason": "max-iterations",
            "iteration": iteration,
            "limit": scope["max_iterations"],
            "pending_tool_calls": pending,
            "pending_count": len(pending),
            "wrapped_up": True,
        }
        scope["stopped_early"] = stopped
        scope["iteration"] = iteration + 1
        _emit(scope, "agent.budget_exhausted", {**stopped, "action": "wrapped-up"})
        _emit(scope, "agent.iteration_end", {"iteration": iteration, "tool_calls": 0})

    def output_retry(scope: Scope) -> None:
        response = scope["response"]
        error = scope["output_error"]
        attempts = scope.get("output_attempts", 0) + 1
        scope.extend(
            "history",
            [
                {"role": "assistant", "content": response.get("content", "")},
                {
                    "role": "user",
                    "content": "Your answer did not match the required output "
                    f"schema: {error}. Answer again with JSON that matches it exactly.",
                    "origin": "library",
                },
            ],
        )
        scope["output_attempts"] = attempts
        scope["iteration"] = scope["iteration"] + 1
        _emit(scope, "agent.output_retry", {"attempt": attempts, "error": error})

    def final(scope: Scope) -> None:
        response = scope["response"]
        answer = response.get("content", "")
        calls = response.get("tool_calls") or []
        if calls and cfg.tools and not scope.get("wrap_up_asked"):
            pending = unique_calls(calls)[0]
            stopped = {
                "reason": "max-iterations",
                "iteration": scope["iteration"],
                "limit": scope["max_iterations"],
                "pending_tool_calls": pending,
                "pending_count": len(pending),
                "wrapped_up": False,
            }
            scope["stopped_early"] = stopped
            _emit(scope, "agent.budget_exhausted", {**stopped, "action": "cut-short"})
        if response.get("stop_reason") == "max_tokens":
            k = len(scope.get("receipts", []))
            earlier = scope.get("stopped_early")
            settings = scope["settings"]
            if earlier is None:
                cut = {
                    "reason": "max-tokens",
                    "iteration": scope["iteration"],
                    "k": k,
                    "limit": settings.get("max_tokens"),
                    "pending_count": 0,
                }
            else:  # a wrap-up answer that was cut as well: both are said
                cut = {**thaw(earlier), "answer_cut_at_max_tokens": True, "k": k}
            scope["stopped_early"] = cut
            _emit(
                scope,
                "agent.answer_truncated",
                {"k": k, "iteration": scope["iteration"], "max_tokens": settings.get("max_tokens")},
            )
        if cfg.output_model is not None:
            # also when the turn was cut short: the answer may never have been judged
            error = scope.get("output_error") or _output_error(cfg.output_model, answer)
            if error is not None:
                scope["output_contract_unmet"] = {
                    "error": error,
                    "attempts": scope.get("output_attempts", 0) + 1,
                }
        scope["final_answer"] = answer
        stopped_early = scope.get("stopped_early")
        if stopped_early is not None:  # whether the answer handed back has any text at all
            stopped_early = {**thaw(stopped_early), "empty_answer": not answer.strip()}
            scope["stopped_early"] = stopped_early
        usage = scope.get("usage_total")
        _emit(
            scope,
            "agent.turn_end",
            {
                "answer": answer,
                "iterations": scope["iteration"],
                "usage": thaw(usage) if usage else None,
                "stopped_early": None
                if stopped_early is None
                else {
                    key: stopped_early.get(key)
                    for key in ("reason", "limit", "pending_count", "empty_answer")
                },
            },
        )

    return {
        "seed": seed,
        "system-prompt": system_prompt,
        "tools": tools,
        "call-llm": call_llm,
        "route": route,
        "tool-calls": tool_calls,
        "tool-calls-resumed": tool_calls_resumed,
        "wrap-up": wrap_up,
        "output-retry": output_retry,
        "final": final,
    }


class _Reader(Mapping[str, Any]):
    """Committed state as ``assemble`` sees it: tracked reads through the scope."""

    _KEYS = ("history", "settings", "system_prompt", "tools", "wrap_up_asked")

    def __init__(self, scope: Scope) -> None:
        self._scope = scope

    def __getitem__(self, key: str) -> Any:
        return self._scope[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self._scope.get(key, default)

    def __iter__(self) -> Any:
        return iter(self._KEYS)

    def __len__(self) -> int:
        return len(self._KEYS)


async def _call(cfg: AgentConfig, scope: Scope, request: Any) -> tuple[LLMResponse, bool]:
    """The provider's answer to ``request``, and whether it was streamed."""
    stream = getattr(cfg.provider, "stream", None)
    if cfg.stream and stream is not None:
        final: LLMResponse | None = None
        pieces = stream(request)
        async with aclosing(pieces):  # closed here if the run stops mid-stream
            async for piece in pieces:
                if isinstance(piece, StreamDelta):
                    if piece.text:
                        scope.emit("stream.token", {"text": piece.text})
                else:
                    final = piece
        if final is None:
            name = getattr(cfg.provider, "name", type(cfg.provider).__name__)
            raise ProviderResponseError(
                f"provider {name!r} ended a stream without its final response; the stream was "
                "cut short (the server or the connection dropped it): retry the call"
            )
        return final, True
    return await cfg.provider.complete(request), False


WITHDRAWN = "The person did not answer: the question was withdrawn."
NOT_RUN = "Not run: the turn ended when the question was withdrawn."


def _result(call: Mapping[str, Any], content: str) -> dict[str, Any]:
    return {"role": "tool", "content": content, "tool_call_id": call["id"], "name": call["name"]}


class Outcome(NamedTuple):
    """What one call came to: its status, what the model reads, any declared effects, and
    flags for its row (``refused``, ``truncated``)."""

    status: str
    content: str
    effects: tuple[Any, ...] = ()
    flags: dict[str, Any] | None = None


class _Batch:
    """One turn's tool results on their way to the record: the messages the model reads
    (``history``) and one row per call (``tool_results``), written together."""

    __slots__ = ("iteration", "messages", "rows")

    def __init__(self, iteration: int) -> None:
        self.iteration = iteration
        self.messages: list[dict[str, Any]] = []
        self.rows: list[dict[str, Any]] = []

    def add(
        self, scope: Scope, call: Mapping[str, Any], done: Outcome, *, announce: bool = True
    ) -> None:
        if announce:
            _emit(
                scope,
                "stream.tool_end",
                {
                    "id": call["id"],
                    "name": call["name"],
                    "iteration": self.iteration,
                    "status": done.status,
                    "result": done.content,
                },
            )
        self.messages.append(
            {
                "role": "tool",
                "content": done.content,
                "tool_call_id": call["id"],
                "name": call["name"],
            }
        )
        row: dict[str, Any] = {
            "id": call["id"],
            "name": call["name"],
            "iteration": self.iteration,
            "status": done.status,
            "chars": len(done.content),
        }
        if done.effects:
            row["effects"] = list(done.effects)
        if done.flags:
            row.update(done.flags)
        self.rows.append(row)

    def flush(self, scope: Scope) -> None:
        if self.messages:
            scope.extend("history", self.messages)
        if self.rows:
            scope.extend("tool_results", self.rows)
        self.messages, self.rows = [], []


async def _dispatch(
    cfg: AgentConfig, scope: Scope, calls: list[dict[str, Any]], start: int, batch: _Batch
) -> None:
    """Run ``calls[start:]`` in order, then close the iteration. At a call that waits for a
    person, what the turn did so far is written and the run pauses (``tool_calls_resumed``
    picks up from there)."""
    iteration = scope["iteration"]
    for index in range(start, len(calls)):
        call = calls[index]
        _emit(
            scope,
            "stream.tool_start",
            {"id": call["id"], "name": call["name"], "args": call.get("args", {})},
        )
        tool, refused = _checked(cfg, scope, call)
        decision = None
        if tool is not None and refused is None:
            decision = await _gated(cfg, tool, scope, call, iteration)
        asked = None
        if decision is not None and decision.kind == "ask":
            asked = {"kind": "check_in", "question": decision.text, "gate": True}
        elif tool is not None and refused is None and decision is None:
            asked = question_for(tool, call, cfg.check_ins)
        if asked is not None:
            batch.flush(scope)
            pending = {
                **asked,
                "call": {"id": call["id"], "name": call["name"], "args": call.get("args", {})},
                "iteration": iteration,
                "index": index,
            }
            for key in ("identity", "session_id"):  # so a resume can check the caller
                if scope.get(key) is not None:
                    pending[key] = scope[key]
            scope["pending_question"] = pending
            _emit(scope, "agent.paused", {k: v for k, v in pending.items() if k != "index"})
            scope.pause(pending)
        if refused is not None:
            done = Outcome("invalid", refused)
        elif decision is not None and decision.kind == "deny":
            done = Outcome("denied", f"Denied: {decision.text}", (), {"gate": "deny"})
        else:
            assert tool is not None
            done = await _run_one(cfg, scope, call, iteration, tool)
        batch.add(scope, call, done)
    batch.flush(scope)
    if scope.get("pending_question") is not None:
        del scope["pending_question"]
    scope["iteration"] = iteration + 1
    _emit(scope, "agent.iteration_end", {"iteration": iteration, "tool_calls": len(calls)})


def _output_error(model: type[BaseModel], content: str) -> str | None:
    try:
        model.model_validate_json(content)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        return f"{loc + ': ' if loc else ''}{first['msg']}"
    return None


async def _gated(
    cfg: AgentConfig, tool: Tool, scope: Scope, call: Mapping[str, Any], iteration: int
) -> GateDecision | None:
    """What the gates decide about a valid call: ``None`` when none objects (it runs).
    The tool's own gate decides first; a denial or a question ends the asking."""
    gates = [g for g in (tool.gate, cfg.gate) if g is not None]
    if not gates:
        return None
    identity = scope.get("identity")
    ctx = ToolContext(
        call_id=call["id"],
        tool_name=tool.name,
        run_id=scope.run_id,
        iteration=iteration,
        identity=None if identity is None else Identity.model_validate(thaw(identity)),
        session_id=scope.get("session_id"),
    )
    view = {"id": call["id"], "name": tool.name, "args": thaw(call.get("args") or {})}
    for gate in gates:
        verdict = gate(view, ctx)
        if inspect.isawaitable(verdict):
            verdict = await verdict
        decision = gate_decision(verdict, f"the gate of {tool.name}")
        if decision.kind != "allow":
            _emit(
                scope,
                "tools.gate",
                {
                    "id": call["id"],
                    "name": tool.name,
                    "decision": decision.kind,
                    "why": decision.text,
                },
            )
            return decision
    return None


def _checked(
    cfg: AgentConfig, scope: Scope, call: Mapping[str, Any]
) -> tuple[Tool | None, str | None]:
    """The tool a call names and, when the call cannot run, what the model reads instead.

    Arguments a provider could not read as a JSON object never run, in any mode. Otherwise
    ``tool_arg_validation`` decides: ``"enforce"`` refuses with a correction naming every
    failing path, ``"warn"`` runs and emits ``validation.args_invalid``, ``"off"`` skips.
    """
    tool = cfg.tools.get(call["name"])
    if tool is None:
        names = ", ".join(cfg.tools) or "none"
        return None, f"Error: there is no tool named {call['name']!r}. Available tools: {names}."
    args = call.get("args") or {}
    if unparsed(args):
        _emit(
            scope,
            "validation.args_invalid",
            {"id": call["id"], "name": tool.name, "errors": ["unparsed"], "enforced": True},
        )
        return tool, (
            f"Error: the arguments for {tool.name} could not be read as a JSON object (the "
            "call was malformed or cut off), so it was not run. Call the tool again with "
            "complete JSON arguments."
        )
    if cfg.arg_validation == "off":
        return tool, None
    validator = cfg.validators.get(tool.name)
    if validator is None:
        validator = cfg.validators[tool.name] = jsonschema.Draft202012Validator(
            dict(tool.input_schema)
        )
    errors = argument_errors(validator, args)
    if not errors:
        return tool, None
    enforced = cfg.arg_validation == "enforce"
    paths = [e.split(": ", 1)[0] for e in errors]  # events name paths, never values
    _emit(
        scope,
        "validation.args_invalid",
        {"id": call["id"], "name": tool.name, "errors": paths, "enforced": enforced},
    )
    if not enforced:
        return tool, None
    return tool, (
        f"Error: invalid arguments for {tool.name}: {'; '.join(errors)}. "
        "Call the tool again with arguments that match its schema."
    )


async def _run_one(
    cfg: AgentConfig,
    scope: Scope,
    call: Mapping[str, Any],
    iteration: int,
    tool: Tool | None = None,
) -> Outcome:
    """Run one checked call with ``agent.emit`` pointed at this stage."""
    tool = tool if tool is not None else cfg.tools[call["name"]]
    token = CURRENT_SCOPE.set(scope)
    try:
        return await _execute(cfg, tool, scope, call, iteration)
    finally:
        CURRENT_SCOPE.reset(token)


async def _execute(
    cfg: AgentConfig, tool: Tool, scope: Scope, call: Mapping[str, Any], iteration: int
) -> Outcome:
    """Run the tool; every failure becomes a result the model can read and act on."""
    args = thaw(call.get("args") or {})  # the tool's own copy: the recorded call must not change
    identity = scope.get("identity")
    result: Any = None

    def progress(payload: Any) -> None:
        event = {"id": call["id"], "name": tool.name, "iteration": iteration}
        try:
            scope.emit("stream.tool_progress", {**event, "payload": payload})
        except Exception as exc:  # never raises into the tool: the record says what was lost
            scope.emit("stream.tool_progress", {**event, "dropped": type(exc).__name__})

    with anyio.CancelScope() as cancel_scope:
        ctx = ToolContext(
            call_id=call["id"],
            tool_name=tool.name,
            run_id=scope.run_id,
            iteration=iteration,
            identity=None if identity is None else Identity.model_validate(thaw(identity)),
            session_id=scope.get("session_id"),
            cancel_scope=cancel_scope,
            on_progress=progress,
        )
        try:
            result = tool.execute(args, ctx)
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:
            return Outcome("failure", f"Error: {tool.name} failed: {type(exc).__name__}: {exc}")
    if cancel_scope.cancelled_caught:
        return Outcome("failure", f"Error: {tool.name} was cancelled before it returned a result.")
    if isinstance(result, RecordedOutcome):  # a replay: served as recorded, nothing redone
        row = result.row
        flags = {k: row[k] for k in ROW_FLAGS if k in row}
        return Outcome(row["status"], result.content, tuple(row.get("effects", ())), flags)
    status, effects = "success", ()
    try:
        envelope = read_envelope(tool.name, result)
    except ValueError as exc:
        return Outcome("failure", f"Error: {exc}")
    if envelope is not None:
        result, declared, listed = envelope
        status, effects = declared or "success", tuple(listed)
    if isinstance(result, str):
        text = result
    else:
        try:
            dumped = orjson.dumps(result, default=thaw)
            faithful = orjson.loads(dumped) == thaw(result) and _finite(result)
        except (TypeError, orjson.JSONEncodeError, ValueError) as exc:
            return Outcome(
                "failure", f"Error: {tool.name} returned a value that is not JSON ({exc})"
            )
        if not faithful:  # e.g. NaN would silently become null
            return Outcome(
                "failure", f"Error: {tool.name} returned a value JSON cannot hold exactly"
            )
        text = dumped.decode()
    return _measured(cfg, tool, scope, call, iteration, Outcome(status, text, effects))


def _finite(value: Any) -> bool:
    """No NaN or infinity anywhere in ``value`` (JSON would turn them into null)."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, Mapping):
        return all(_finite(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return all(_finite(v) for v in value)
    return True


ROW_FLAGS = ("refused", "truncated", "chars_returned", "nudged", "gate")
"""Row keys a replay takes from the recording as they were."""


def _measured(
    cfg: AgentConfig,
    tool: Tool,
    scope: Scope,
    call: Mapping[str, Any],
    iteration: int,
    done: Outcome,
) -> Outcome:
    """The tool's own ceiling first (refuse, never cut), then the agent's cap (cut, saying
    so). Neither measures when it is not set."""
    size = len(done.content)
    ceiling = tool.result_ceiling
    if ceiling is not None and size > ceiling["max_chars"]:
        limit = ceiling["max_chars"]
        narrow = ceiling.get("narrow_by")
        how = " — e.g. pass " + ", ".join(repr(n) for n in narrow) if narrow else ""
        refusal = (
            f"Result too large: {tool.name} returned {size} chars, over its declared "
            f"{limit}-char ceiling. Narrow the request and call again{how}. No data was "
            "returned."
        )
        event: dict[str, Any] = {
            "id": call["id"],
            "name": tool.name,
            "iteration": iteration,
            "size_chars": size,
            "max_chars": limit,
        }
        if narrow:
            event["narrow_by"] = list(narrow)
        if done.status != "success":
            event["declared_status"] = done.status
        _emit(scope, "tools.result_refused", event)  # sizes only: the payload goes nowhere
        done = Outcome("invalid", refusal, done.effects, {"refused": True, "chars_returned": size})
        size = len(refusal)
    cap = cfg.max_tool_result_chars
    if cap is not None and size > cap:
        cut = size - cap
        text = (
            f"{done.content[:cap]}\n[truncated: the first {cap} of {size} characters are "
            f"shown; {cut} were cut]"
        )
        _emit(
            scope,
            "tools.result_truncated",
            {"id": call["id"], "name": tool.name, "iteration": iteration, "size_chars": size},
        )
        flags = {**(done.flags or {}), "truncated": True, "chars_returned": size}
        done = Outcome(done.status, text, done.effects, flags)
    if cfg.repeated_call_nudge and done.status == "success":
        done = _nudged(scope, call, done)
    return done


REPEATED = (
    " (You called {name} with these same arguments earlier in this turn and got this same "
    "result: calling it again will not change it.)"
)


def _fingerprint(data: Any) -> str:
    return hashlib.sha256(orjson.dumps(data, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


class _CallMemo:
    """The successful calls of this run by fingerprint (name and arguments) and what they
    returned, for the repeated-call nudge. Rebuilt from the record when a run resumes in a
    fresh process, so a resumed run nudges exactly as an uninterrupted one."""

    __slots__ = ("built", "nudged", "seen")

    def __init__(self) -> None:
        self.built = False
        self.seen: dict[str, str] = {}
        self.nudged: set[str] = set()

    def rebuild(self, scope: Scope) -> None:
        self.built = True
        rows = thaw(scope.get("tool_results", []))
        if not rows:
            return
        args: dict[str, Any] = {}
        served: dict[str, str] = {}
        for message in thaw(scope["history"]):
            for call in message.get("tool_calls") or ():
                args[call["id"]] = (call["name"], call.get("args", {}))
            if message.get("role") == "tool":
                served[message["tool_call_id"]] = message["content"]
        for row in rows:
            if row["status"] != "success" or row["id"] not in args:
                continue
            text = served.get(row["id"], "")
            key = _fingerprint(args[row["id"]])
            if row.get("nudged"):
                self.nudged.add(key)
                text = text.removesuffix(REPEATED.format(name=row["name"]))
            self.seen.setdefault(key, _fingerprint(text))


def _nudged(scope: Scope, call: Mapping[str, Any], done: Outcome) -> Outcome:
    """The second time a call returns what it returned before in this turn, one sentence
    says so (once per distinct call); ``tools.repeated_call`` carries fingerprints only."""
    mount = StagePath.parse(scope.stage_path).parent
    memo = scope.run_local(("agent-call-memo", mount), _CallMemo)
    if not memo.built:
        memo.rebuild(scope)
    key = _fingerprint((call["name"], call.get("args", {})))
    result = _fingerprint(done.content)
    before = memo.seen.get(key)
    if before is None:
        memo.seen[key] = result
        return done
    if before != result or key in memo.nudged:
        return done
    memo.nudged.add(key)
    _emit(
        scope,
        "tools.repeated_call",
        {"id": call["id"], "name": call["name"], "call": key, "result": result},
    )
    note = REPEATED.format(name=call["name"])
    return Outcome(
        done.status, done.content + note, done.effects, {**(done.flags or {}), "nudged": True}
    )
