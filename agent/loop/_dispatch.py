"""Running one turn's tool calls: checks, gates, the calls that may run (run by
:mod:`._tool_run`), what the model reads, and the ``tool_results`` row of each call, written
with the ``tool`` messages."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping
from typing import Any

from trackway.engine import thaw
from trackway.engine.run._scope import TrackedScope
from trackway.tools import Tool
from trackway.tools.define._assume import Filling
from trackway.tools.define._gate import GateDecision, gate_decision
from trackway.tools.results._outcome import argument_errors, unparsed

from ..context._arg_check import ArgChecks
from ..context._config import AgentConfig, extend_built
from ..context._config import emit as _emit
from ..context._findings import file_declaration, peel, served_ids
from ..grounding._contingent import contingent_at_dispatch
from ..messages._redaction import hidden_errors
from ..messages._tool_ids import unique_calls
from ..middleware._ledger import record_decisions
from ..offer._offered import offered_now
from ..time._layer import call_dispatched, person_zone, resumed_clock
from ._arguments import arguments_question, filled
from ._consent import consent_needed, consented
from ._coverage import coverage_row, period_said
from ._person import outcome_of, question_for
from ._served import ROW_FLAGS, Outcome
from ._skill_doors import door_outcome
from ._tool_doors import before_tool, rewritten_rows
from ._tool_run import Ready, context, run_one

_log = logging.getLogger("trackway.tools")

__all__ = [
    "NOT_RUN",
    "ROW_FLAGS",
    "WITHDRAWN",
    "Batch",
    "Outcome",
    "dispatch",
    "resumed",
    "run_one",
]


WITHDRAWN = "The person did not answer: the question was withdrawn."
NOT_RUN = "Not run: the turn ended when the question was withdrawn."


class Batch:
    """One turn's tool results on their way to the record: the messages the model reads
    (``history``), one row per call (``tool_results``) and one per coverage statement
    (``coverage_declared``), written together."""

    __slots__ = ("coverage", "decisions", "iteration", "messages", "plain_rows", "rows", "runs")

    def __init__(self, iteration: int) -> None:
        self.iteration = iteration
        self.messages: list[dict[str, Any]] = []
        self.rows: list[dict[str, Any]] = []
        self.plain_rows = True  # no row holds effects or flags (values a tool or rule gave)
        self.coverage: list[dict[str, Any]] = []
        self.runs: list[dict[str, Any]] = []
        self.decisions: list[dict[str, Any]] = []
        """The tool doors' middleware decisions, in the order made (one ledger write)."""

    def add(
        self, scope: TrackedScope, call: Mapping[str, Any], done: Outcome, *, announce: bool = True
    ) -> None:
        if announce:
            scope._emit_built(
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
            self.plain_rows = False
        if done.flags:
            row.update(done.flags)
            self.plain_rows = False
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
        declared = None
        if done.declared is not None:
            declared = coverage_row(call, self.iteration, done.declared)
            name = "tools.absent" if declared["source"] == "absent" else "tools.coverage_declared"
            _emit(scope, name, declared)
            self.coverage.append(declared)
        if declared is not None or done.flags:  # a period's verdict (or its silence)
            period_said(scope, call, self.iteration, declared, done.flags)

    def flush(self, scope: TrackedScope) -> None:
        if self.messages:  # built here of str fields and the committed calls: plain JSON
            extend_built(scope, "history", self.messages)
        if self.rows and self.plain_rows:  # ids and names the model gave, counts, statuses
            extend_built(scope, "tool_results", self.rows)
        elif self.rows:
            scope.extend("tool_results", self.rows)
        if self.coverage:
            scope.extend("coverage_declared", self.coverage)
        if self.runs:
            scope.extend("tool_runs", self.runs)
        if self.decisions:
            record_decisions(scope, self.decisions)
            self.decisions = []
        self.messages, self.rows, self.coverage, self.runs = [], [], [], []
        self.plain_rows = True


async def dispatch(
    cfg: AgentConfig,
    scope: TrackedScope,
    calls: list[dict[str, Any]],
    start: int,
    batch: Batch,
    answered: Mapping[str, Any] | None = None,
    approved: Mapping[str, Any] | None = None,
) -> None:
    """Run ``calls[start:]`` in order, then close the iteration. At a call that waits for a
    person, what the turn did so far is written and the run pauses (``tool_calls_resumed``
    picks up from there). ``answered``: the person's values for ruled arguments of
    ``calls[start]``; ``approved``: the question a person approved about ``calls[start]``,
    with the door it stopped at (``stage``: ``links``, the next link on from ``link``;
    ``question``, a check-in; ``consent``, a credential), the ``args`` the person saw and
    where rewritten ones came from: the call goes on from that door."""
    iteration = scope["iteration"]
    ready = Ready(cfg, scope, iteration)  # outcomes in call order; runnable calls wait here
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
            if given is None:  # a value built on a result the model set aside: filed
                contingent_at_dispatch(cfg, scope, calls, call)
        if given is None:
            scope._emit_built(
                "stream.tool_start",
                {"id": call["id"], "name": call["name"], "args": call.get("args", {})},
            )
            if cfg.time is not None and (index != start or approved is None):
                call_dispatched(cfg.time, scope, call)  # .time(): its dispatch-time row
        tool, refused = _found(cfg, scope, call)
        filling = (
            None if tool is None or refused or not tool.ask_or_assume else filled(tool, call, given)
        )
        asked = None
        if filling is not None and filling.asks:  # asked before any check or gate runs
            assert tool is not None
            asked = arguments_question(tool, filling.asks)
        args = filling.args if filling is not None else call.get("args") or {}
        carried = approved if index == start else None
        if tool is not None and refused is None and asked is None and carried is None:
            refused = _invalid(cfg, scope, call, tool, args)
        decision = None
        door = cfg.skills is not None and tool is not None and tool.name in cfg.skills.doors
        gated = not door and tool is not None and (tool.gate is not None or cfg.gate is not None)
        if gated and refused is None and asked is None and carried is None:
            assert tool is not None
            decision = await _gated(cfg, tool, scope, call, iteration, args)
        if decision is not None and decision.kind == "ask":
            asked = {"kind": "check_in", "question": decision.text, "gate": True}
        stage = None if carried is None else carried.get("stage", "links")
        sources: dict[str, str] = {} if carried is None else dict(carried.get("sources", {}))
        marks: dict[str, Any] | None = None
        if carried is not None:  # the arguments as the person saw them
            args = carried["args"]
            if sources:
                marks = rewritten_rows(sources, args)
                filling = _refilled(filling, args, sources)
        open_ = not door and tool is not None and refused is None and asked is None
        if open_ and decision is None and stage in (None, "links") and cfg.links("before_tool"):
            assert tool is not None
            first = 0 if carried is None else carried["link"] + 1
            walked = await before_tool(
                cfg, scope, call, tool, args, iteration, first, into=batch.decisions
            )
            if walked.sources:  # what runs is what the links made of the call: checked again
                sources.update(walked.sources)
                args = walked.args
                refused = _invalid(cfg, scope, call, tool, args)
                marks = rewritten_rows(sources, args)
                filling = _refilled(filling, args, sources)
            stop = walked.stopped
            if stop is not None and stop.kind == "ask" and refused is None:
                asked = {"kind": "check_in", "question": stop.text, "middleware": walked.by}
                asked.update(_carried("links", args, sources, link=walked.at))
            elif stop is not None and stop.kind == "deny":
                decision = stop
                marks = {**(marks or {}), "middleware": walked.by}
        open_ = open_ and refused is None and asked is None and decision is None
        if open_ and stage in (None, "links"):
            assert tool is not None
            if tool.asks is not None or tool.name in cfg.check_ins:
                asked = question_for(tool, call, cfg.check_ins)
                if asked is not None and asked["kind"] == "check_in" and (sources or tool.needs):
                    asked.update(_carried("question", args, sources))
        if open_ and asked is None and tool is not None and tool.needs:
            asked, denied = consent_needed(cfg, scope, tool, call)
            if asked is not None:
                asked.update(_carried("consent", args, sources))
            elif denied is not None:
                ready.add(call, denied)
                if cfg.parallel_tool_calls == 1:
                    await ready.settle(batch)
                continue
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
            if cfg.time is not None and asked.get("format"):  # the person's zone checks it
                pending["zone"] = person_zone(cfg.time, scope)
            scope["pending_question"] = pending
            _emit(scope, "agent.paused", {k: v for k, v in pending.items() if k != "index"})
            scope.pause(pending)
        if refused is not None:
            kind = "unknown_tool" if tool is None else "invalid_arguments"
            ready.add(
                call,
                Outcome("invalid", refused, (), {"error": _refusal(scope, kind, call, refused)}),
            )
        elif decision is not None and decision.kind == "deny":
            flags = {"middleware": marks["middleware"]} if marks else {"gate": "deny"}
            ready.add(call, Outcome("denied", f"Denied: {decision.text}", (), flags))
        elif cfg.skills is not None and tool is not None and tool.name in cfg.skills.doors:
            ready.add(call, door_outcome(cfg, scope, call))  # library code: answered here
        else:
            assert tool is not None
            if marks is not None and filling is None:  # the links' arguments run
                call = {**call, "args": args}
            ready.run_later(call, tool, given, filling, marks)
        if cfg.parallel_tool_calls == 1:  # one at a time: each call is written as it ends
            await ready.settle(batch)
    await ready.settle(batch)
    batch.flush(scope)
    if scope.get("pending_question") is not None:
        del scope["pending_question"]
    scope["iteration"] = iteration + 1
    scope._emit_built("agent.iteration_end", {"iteration": iteration, "tool_calls": len(calls)})


async def resumed(cfg: AgentConfig, scope: TrackedScope, value: Any) -> None:
    """The person answered the question the turn paused on: the waiting call gets its
    result (or goes on from the door where it stopped), then the rest of the answer's calls
    run; an abandoned question withdraws them all and ends the turn."""
    pending = thaw(scope["pending_question"])
    calls = unique_calls(scope["response"]["tool_calls"])[0]
    index = pending["index"]
    call = calls[index]
    value = thaw(value)
    _emit(scope, "agent.resumed", {"id": call["id"], "name": call["name"], **value})
    if cfg.time is not None:  # a resume that brings another clock: a row says so
        resumed_clock(cfg.time, scope, value)
    if value.get("abandon"):
        batch = Batch(scope["iteration"])
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
    if pending["kind"] == "arguments":  # checked, gated and run with the person's values
        await dispatch(cfg, scope, calls, index, Batch(iteration), value["answer"])
        return
    if pending["kind"] == "consent":  # the answer is a row; the value is never kept
        consented(scope, pending, status == "run")
    if pending.get("stage") is not None and status == "run":  # on from where it stopped
        await dispatch(cfg, scope, calls, index, Batch(iteration), None, pending)
        return
    if status == "run":
        done = await run_one(cfg, scope, call, iteration, answered=pending.get("answered"))
    else:
        assert text is not None
        done = Outcome(status, text)
    if pending.get("gate"):  # a gate asked: the row says so, for replay and readers
        done = done._replace(flags={**(done.flags or {}), "gate": "ask"})
    elif pending.get("middleware") is not None:  # declined: the link that asked
        done = done._replace(flags={**(done.flags or {}), "middleware": pending["middleware"]})
    elif pending["kind"] == "consent":  # declined: the credential refused
        done = done._replace(flags={**(done.flags or {}), "consent": pending["credential"]})
    batch = Batch(iteration)
    batch.add(scope, call, done)
    await dispatch(cfg, scope, calls, index + 1, batch)


async def _gated(
    cfg: AgentConfig,
    tool: Tool,
    scope: TrackedScope,
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
    ctx = context(tool, scope, call, iteration)
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
    cfg: AgentConfig, scope: TrackedScope, call: Mapping[str, Any]
) -> tuple[Tool | None, str | None]:
    """The tool a call names and, when the call cannot run, what the model reads instead:
    a tool that does not exist or was not offered, or arguments a provider could not read
    as a JSON object (never run, in any mode)."""
    tool = cfg.tools.get(call["name"])
    doors = {} if cfg.skills is None else cfg.skills.doors
    if tool is None and doors:
        tool = doors.get(call["name"])
    offered: list[str] | None = None
    if cfg.offers_per_call:  # only what this model call was offered may run
        offered = offered_now(scope, id(cfg))[1]
        if tool is not None and tool.name not in offered:
            names = ", ".join(offered) or "none"
            _emit(  # said, then answered (a narrowed call's miss, a gated or scoped tool)
                scope,
                "tools.answered_off_wire",
                {"id": call["id"], "name": tool.name, "offered": len(offered)},
            )
            return None, (
                f"Error: {tool.name} was not offered for this call, so it was not run. "
                f"Available tools: {names}."
            )
    if tool is None:
        names = ", ".join([*cfg.tools, *doors] if offered is None else offered) or "none"
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
    cfg: AgentConfig,
    scope: TrackedScope,
    call: Mapping[str, Any],
    tool: Tool,
    args: Mapping[str, Any],
) -> str | None:
    """What the model reads instead of a run when ``args`` fail the tool's schema, as
    ``tool_arg_validation`` says: ``"enforce"`` refuses with a correction naming every
    failing path, ``"warn"`` runs and emits ``validation.args_invalid``, ``"off"`` skips."""
    if cfg.arg_validation == "off":
        return None
    checks = cfg.validators.get(tool.name)
    if checks is None:
        checks = cfg.validators[tool.name] = ArgChecks(tool)
    quick = checks.quick
    if quick is not None and quick(args):  # plainly valid (the validator would agree)
        return None
    errors = argument_errors(checks.validator, thaw(args))
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
    if cfg.skills is not None and tool.name in cfg.skills.doors:
        # a door's check names paths only: a guessed hidden skill's id is never said back
        return (
            f"Error: invalid arguments for {tool.name}: {', '.join(paths)} not as its schema "
            "says (the values are not repeated). Call it again with arguments that match "
            "its schema."
        )
    return (
        f"Error: invalid arguments for {tool.name}: {'; '.join(errors)}. "
        "Call the tool again with arguments that match its schema."
    )


def _carried(
    stage: str, args: Mapping[str, Any], sources: Mapping[str, str], link: int | None = None
) -> dict[str, Any]:
    """What a pause keeps so its approval goes on where it stopped: after which door
    (``stage``), with the arguments the person saw and where rewritten ones came from."""
    out: dict[str, Any] = {"stage": stage, "args": thaw(args)}
    if link is not None:
        out["link"] = link
    if sources:
        out["sources"] = dict(sources)
    return out


def _refilled(
    filling: Filling | None, args: Mapping[str, Any], sources: Mapping[str, str]
) -> Filling | None:
    """The arguments layer's filling once links rewrote ``args``: a filled value a link
    replaced is named nowhere (not in the note, not among the assumed)."""
    if filling is None:
        return None
    kept = [a for a in filling.assumed if a["argument"] not in sources]
    sent = [a for a in filling.defaults_sent if a["argument"] not in sources]
    return Filling(dict(args), kept, [], sent)


def _refusal(scope: TrackedScope, kind: str, call: Mapping[str, Any], text: str) -> dict[str, str]:
    """The ``error`` flag of a call that never ran: what kind, and what the model read (a
    schema check quotes the arguments: under ``errors=True`` the log leaves it out)."""
    marker = hidden_errors(scope)
    said = text.removeprefix("Error: ") if marker is None else f"{kind}: {marker}"
    _log.warning("tool call %s (%r) was not run: %s", call["id"], call["name"], said)
    label = "UnknownTool" if kind == "unknown_tool" else "InvalidArguments"
    return {"kind": kind, "type": label, "message": text.removeprefix("Error: ")}
