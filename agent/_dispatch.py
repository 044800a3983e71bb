"""Running one turn's tool calls: checks, gates, the tool itself, what the model reads, and
the ``tool_results`` row of each call, written with the ``tool`` messages."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping
from typing import Any, NamedTuple

import anyio
import jsonschema

from trackway.engine import Scope, thaw
from trackway.tools import Identity, Tool, ToolContext
from trackway.tools._assume import Filling
from trackway.tools._coverage_items import DeclarationRefused
from trackway.tools._gate import GateDecision, gate_decision
from trackway.tools._outcome import RecordedOutcome, argument_errors, unparsed

from ._arguments import arguments_question, filled, noted
from ._config import CURRENT_SCOPE, AgentConfig
from ._config import emit as _emit
from ._coverage import coverage_row
from ._findings import file_declaration, peel, served_ids
from ._nudge import nudged
from ._parallel_calls import run_together
from ._person import question_for
from ._served import ROW_FLAGS, Outcome, served

_log = logging.getLogger("trackway.tools")

__all__ = ["NOT_RUN", "ROW_FLAGS", "WITHDRAWN", "Batch", "Outcome", "dispatch", "run_one"]


WITHDRAWN = "The person did not answer: the question was withdrawn."
NOT_RUN = "Not run: the turn ended when the question was withdrawn."


def _result(call: Mapping[str, Any], content: str) -> dict[str, Any]:
    return {"role": "tool", "content": content, "tool_call_id": call["id"], "name": call["name"]}


class Batch:
    """One turn's tool results on their way to the record: the messages the model reads
    (``history``), one row per call (``tool_results``) and one per coverage statement
    (``coverage_declared``), written together."""

    __slots__ = ("coverage", "iteration", "messages", "rows", "runs")

    def __init__(self, iteration: int) -> None:
        self.iteration = iteration
        self.messages: list[dict[str, Any]] = []
        self.rows: list[dict[str, Any]] = []
        self.coverage: list[dict[str, Any]] = []
        self.runs: list[dict[str, Any]] = []

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
            error = done.flags.get("error")
            if error is not None:  # a replay serves the recorded flag: the same event
                _emit(
                    scope,
                    "tools.error",
                    {"id": call["id"], "name": call["name"], "iteration": self.iteration, **error},
                )
        self.rows.append(row)
        for run in done.runs:
            self.runs.append(
                {"id": call["id"], "name": call["name"], "iteration": self.iteration, **run}
            )
        if done.declared is not None:
            declared = coverage_row(call, self.iteration, done.declared)
            name = "tools.absent" if declared["source"] == "absent" else "tools.coverage_declared"
            _emit(scope, name, declared)
            self.coverage.append(declared)

    def flush(self, scope: Scope) -> None:
        if self.messages:
            scope.extend("history", self.messages)
        if self.rows:
            scope.extend("tool_results", self.rows)
        if self.coverage:
            scope.extend("coverage_declared", self.coverage)
        if self.runs:
            scope.extend("tool_runs", self.runs)
        self.messages, self.rows, self.coverage, self.runs = [], [], [], []


async def dispatch(
    cfg: AgentConfig,
    scope: Scope,
    calls: list[dict[str, Any]],
    start: int,
    batch: Batch,
    answered: Mapping[str, Any] | None = None,
) -> None:
    """Run ``calls[start:]`` in order, then close the iteration. At a call that waits for a
    person, what the turn did so far is written and the run pauses (``tool_calls_resumed``
    picks up from there). ``answered``: the person's values for ruled arguments of
    ``calls[start]``."""
    iteration = scope["iteration"]
    ready = _Ready(cfg, scope, iteration)  # outcomes in call order; runnable calls wait here
    for index in range(start, len(calls)):
        call = calls[index]
        given = answered if index == start else None
        if cfg.findings:  # the reserved argument never reaches checks, gates or the tool
            call, declared = peel(call)
            if declared is not None and given is None:
                offered = served_ids(scope)
                file_declaration(
                    scope,
                    declared,
                    by=call["id"],
                    iteration=iteration,
                    offered=offered,
                    name=call["name"],
                )
        if given is None:
            _emit(
                scope,
                "stream.tool_start",
                {"id": call["id"], "name": call["name"], "args": call.get("args", {})},
            )
        tool, refused = _found(cfg, scope, call)
        filling = None if tool is None or refused else filled(tool, call, given)
        asked = None
        if filling is not None and filling.asks:  # asked before any check or gate runs
            assert tool is not None
            asked = arguments_question(tool, filling.asks)
        args = filling.args if filling is not None else call.get("args") or {}
        if tool is not None and refused is None and asked is None:
            refused = _invalid(cfg, scope, call, tool, args)
        decision = None
        if tool is not None and refused is None and asked is None:
            decision = await _gated(cfg, tool, scope, call, iteration, args)
        if decision is not None and decision.kind == "ask":
            asked = {"kind": "check_in", "question": decision.text, "gate": True}
        elif tool is not None and refused is None and decision is None and asked is None:
            asked = question_for(tool, call, cfg.check_ins)
        if asked is not None:
            await ready.settle(batch)  # the calls before this one, run and written in order
            batch.flush(scope)
            pending = {
                **asked,
                "call": {"id": call["id"], "name": call["name"], "args": call.get("args", {})},
                "iteration": iteration,
                "index": index,
            }
            if given:  # a later pause of the same call keeps the person's earlier answers
                pending["answered"] = dict(given)
            for key in ("identity", "session_id"):  # so a resume can check the caller
                if scope.get(key) is not None:
                    pending[key] = scope[key]
            scope["pending_question"] = pending
            _emit(scope, "agent.paused", {k: v for k, v in pending.items() if k != "index"})
            scope.pause(pending)
        if refused is not None:
            kind = "unknown_tool" if tool is None else "invalid_arguments"
            ready.add(
                call, Outcome("invalid", refused, (), {"error": _refusal(kind, call, refused)})
            )
        elif decision is not None and decision.kind == "deny":
            ready.add(call, Outcome("denied", f"Denied: {decision.text}", (), {"gate": "deny"}))
        else:
            assert tool is not None
            ready.run_later(call, tool, given, filling)
        if cfg.parallel_tool_calls == 1:  # one at a time: each call is written as it ends
            await ready.settle(batch)
    await ready.settle(batch)
    batch.flush(scope)
    if scope.get("pending_question") is not None:
        del scope["pending_question"]
    scope["iteration"] = iteration + 1
    _emit(scope, "agent.iteration_end", {"iteration": iteration, "tool_calls": len(calls)})


def _context(
    tool: Tool, scope: Scope, call: Mapping[str, Any], iteration: int, **extra: Any
) -> ToolContext:
    """What a gate or a tool knows about the call (``extra``: the call's cancel scope and
    progress channel)."""
    identity = scope.get("identity")
    return ToolContext(
        call_id=call["id"],
        tool_name=tool.name,
        run_id=scope.run_id,
        iteration=iteration,
        identity=None if identity is None else Identity.model_validate(thaw(identity)),
        session_id=scope.get("session_id"),
        **extra,
    )


async def _gated(
    cfg: AgentConfig,
    tool: Tool,
    scope: Scope,
    call: Mapping[str, Any],
    iteration: int,
    args: Mapping[str, Any],
) -> GateDecision | None:
    """What the gates decide about a valid call (with the arguments it would run with):
    ``None`` when none objects. The tool's own gate decides first; a denial or a question
    ends the asking."""
    gates = [g for g in (tool.gate, cfg.gate) if g is not None]
    if not gates:
        return None
    ctx = _context(tool, scope, call, iteration)
    view = {"id": call["id"], "name": tool.name, "args": thaw(args)}
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


def _found(
    cfg: AgentConfig, scope: Scope, call: Mapping[str, Any]
) -> tuple[Tool | None, str | None]:
    """The tool a call names and, when the call cannot run, what the model reads instead:
    a tool that does not exist or was not offered, or arguments a provider could not read
    as a JSON object (never run, in any mode)."""
    tool = cfg.tools.get(call["name"])
    offered = list(cfg.tools)
    if cfg.providers:  # only what this model call was offered may run
        offered = [spec["name"] for spec in scope.get("tools", ())]
        if tool is not None and tool.name not in offered:
            names = ", ".join(offered) or "none"
            return None, (
                f"Error: {tool.name} was not offered for this call, so it was not run. "
                f"Available tools: {names}."
            )
    if tool is None:
        names = ", ".join(offered) or "none"
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
    return tool, None


def _invalid(
    cfg: AgentConfig, scope: Scope, call: Mapping[str, Any], tool: Tool, args: Mapping[str, Any]
) -> str | None:
    """What the model reads instead of a run when ``args`` fail the tool's schema, as
    ``tool_arg_validation`` says: ``"enforce"`` refuses with a correction naming every
    failing path, ``"warn"`` runs and emits ``validation.args_invalid``, ``"off"`` skips."""
    if cfg.arg_validation == "off":
        return None
    validator = cfg.validators.get(tool.name)
    if validator is None:
        validator = cfg.validators[tool.name] = jsonschema.Draft202012Validator(
            dict(tool.input_schema)
        )
    errors = argument_errors(validator, thaw(args))
    if not errors:
        return None
    enforced = cfg.arg_validation == "enforce"
    paths = [e.split(": ", 1)[0] for e in errors]  # events name paths, never values
    _emit(
        scope,
        "validation.args_invalid",
        {"id": call["id"], "name": tool.name, "errors": paths, "enforced": enforced},
    )
    if not enforced:
        return None
    return (
        f"Error: invalid arguments for {tool.name}: {'; '.join(errors)}. "
        "Call the tool again with arguments that match its schema."
    )


class _Ready:
    """The outcomes of one answer's calls, in call order: refusals and denials as they come,
    runnable calls held until :meth:`settle` runs them together (bounded by
    ``max_parallel_tool_calls``) and adds everything to the batch in call order."""

    def __init__(self, cfg: AgentConfig, scope: Scope, iteration: int) -> None:
        self.cfg, self.scope, self.iteration = cfg, scope, iteration
        self.slots: list[tuple[Mapping[str, Any], Outcome | None]] = []
        self.jobs: list[tuple[int, Mapping[str, Any], Tool, Any, Filling | None]] = []

    def add(self, call: Mapping[str, Any], done: Outcome) -> None:
        self.slots.append((call, done))

    def run_later(
        self, call: Mapping[str, Any], tool: Tool, given: Any, filling: Filling | None
    ) -> None:
        self.jobs.append((len(self.slots), call, tool, given, filling))
        self.slots.append((call, None))

    async def settle(self, batch: Batch) -> None:
        cfg, iteration = self.cfg, self.iteration
        replayed: dict[int, list[bool]] = {n: [] for n in range(len(self.jobs))}

        def job(n: int) -> Any:
            _, call, tool, given, filling = self.jobs[n]
            return lambda sc: run_one(cfg, sc, call, iteration, tool, given, filling, replayed[n])

        # A sync tool blocks the event loop: running it "at once" would only reorder calls,
        # so an answer's calls run together only when every one of their tools is async.
        limit = cfg.parallel_tool_calls if all(j[2].is_async for j in self.jobs) else 1
        ran = await run_together(self.scope, [job(n) for n in range(len(self.jobs))], limit)
        finished: dict[int, tuple[Outcome, list[tuple[str, Any]]]] = {
            self.jobs[n][0]: ran[n] for n in range(len(self.jobs))
        }
        together = limit > 1 and len(self.jobs) > 1  # else each ran on the stage's scope
        nth = {self.jobs[n][0]: n for n in range(len(self.jobs))}
        for slot, (call, outcome) in enumerate(self.slots):
            if outcome is None:
                outcome, held = finished[slot]
                for name, payload in held:  # a call's own events, in call order
                    self.scope.emit(name, payload)
                flags = replayed[nth[slot]]
                fresh = not (flags and flags[0])  # a replay serves the nudge as recorded
                if together and fresh and cfg.repeated_call_nudge and outcome.status == "success":
                    outcome = nudged(self.scope, call, outcome)  # judged in call order
            batch.add(self.scope, call, outcome)
        self.slots, self.jobs = [], []


async def run_one(
    cfg: AgentConfig,
    scope: Scope,
    call: Mapping[str, Any],
    iteration: int,
    tool: Tool | None = None,
    answered: Mapping[str, Any] | None = None,
    filling: Filling | None = None,
    replayed_into: list[bool] | None = None,
) -> Outcome:
    """Run one checked call with ``agent.emit`` pointed at this stage (with the tool's
    ``ask_or_assume`` rules and the person's ``answered`` values applied; ``filling`` when
    the caller already worked it out). ``replayed_into`` gets whether the outcome was a
    replay's recorded one."""
    tool = tool if tool is not None else cfg.tools[call["name"]]
    if cfg.findings:
        call = peel(call)[0]
    if filling is None:
        filling = filled(tool, call, answered)
    args = thaw(call.get("args") or {}) if filling is None else filling.args
    token = CURRENT_SCOPE.set(scope)
    try:
        done, replayed = await _execute(cfg, tool, scope, call, iteration, args)
    finally:
        CURRENT_SCOPE.reset(token)
    if replayed_into is not None:
        replayed_into.append(replayed)
    if filling is None or replayed:  # a replay serves the recorded note and row as they were
        return done
    return noted(scope, call, filling, answered, done)


async def _execute(
    cfg: AgentConfig,
    tool: Tool,
    scope: Scope,
    call: Mapping[str, Any],
    iteration: int,
    args: dict[str, Any],
) -> tuple[Outcome, bool]:
    """Run the tool on its own copy of ``args`` (the recorded call must not change); every
    failure becomes a result the model can read and act on. The flag: a replayed outcome."""
    result: Any = None

    def progress(payload: Any) -> None:
        event = {"id": call["id"], "name": tool.name, "iteration": iteration}
        try:
            scope.emit("stream.tool_progress", {**event, "payload": payload})
        except Exception as exc:  # never raises into the tool: the record says what was lost
            scope.emit("stream.tool_progress", {**event, "dropped": type(exc).__name__})

    def emit(name: str, payload: dict[str, Any]) -> None:
        _emit(scope, name, payload)

    sessions = cfg.sessions
    if len(sessions):  # the lazy sweep: idle and evicted sessions close before a call
        await sessions.close(sessions.due(), "idle", emit)

    def on_session(fn: Any, session_scope: str, key: str | None) -> None:
        sessions.register(ctx, fn, session_scope, key, emit)

    inner: list[dict[str, Any]] = []

    with anyio.CancelScope() as cancel_scope:
        ctx = _context(
            tool,
            scope,
            call,
            iteration,
            cancel_scope=cancel_scope,
            on_progress=progress,
            on_session=on_session,
            on_run=inner.append,
        )
        try:
            result = tool.execute(args, ctx)
            if inspect.isawaitable(result):
                result = await result
        except DeclarationRefused as exc:  # a helper that cannot honour its declaration
            result = _Failed(f"refused: {exc}")
        except Exception as exc:
            result = _Failed(
                f"Error: {tool.name} failed: {type(exc).__name__}: {exc}",
                {"kind": "raised", "type": type(exc).__name__, "message": str(exc)},
            )
            _log.error(
                "tool %r raised %s in run %s (call %s); the model reads: %s",
                tool.name,
                type(exc).__name__,
                scope.run_id,
                call["id"],
                result.text,
                exc_info=exc,
            )
    if len(sessions):
        await sessions.close(sessions.due(call_id=call["id"]), "call_end", emit)
    runs = tuple(inner)
    if isinstance(result, _Failed):
        flags = None if result.error is None else {"error": result.error}
        return Outcome("failure", result.text, (), flags, runs=runs), False
    if cancel_scope.cancelled_caught:
        cancelled = f"Error: {tool.name} was cancelled before it returned a result."
        return Outcome("failure", cancelled, runs=runs), False
    if isinstance(result, RecordedOutcome):  # a replay: served as recorded, nothing redone
        row = result.row
        flags = {k: v for k, v in row.items() if k in ROW_FLAGS}  # in the order recorded
        effects = tuple(row.get("effects", ()))
        recorded = Outcome(row["status"], result.content, effects, flags, result.declared)
        return recorded._replace(runs=result.runs), True
    return served(cfg, tool, scope, call, iteration, result)._replace(runs=runs), False


class _Failed(NamedTuple):
    text: str
    error: dict[str, str] | None = None


def _refusal(kind: str, call: Mapping[str, Any], text: str) -> dict[str, str]:
    """The ``error`` flag of a call that never ran: what kind, and what the model read."""
    _log.warning(
        "tool call %s (%r) was not run: %s", call["id"], call["name"], text.removeprefix("Error: ")
    )
    label = "UnknownTool" if kind == "unknown_tool" else "InvalidArguments"
    return {"kind": kind, "type": label, "message": text.removeprefix("Error: ")}
