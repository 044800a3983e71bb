"""Running the calls of one answer that may run: each with its own context and cancel scope,
``agent.emit`` pointed at the stage, the outcome the model reads (or a replay's recorded
one), and the results in call order (:class:`Ready`), run together when every tool is
async."""

from __future__ import annotations

import inspect
import logging
import weakref
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

import anyio

from trackway.engine import thaw
from trackway.engine.run._scope import TrackedScope
from trackway.tools import Identity, Tool, ToolContext
from trackway.tools.define._assume import Filling
from trackway.tools.define._define import built_context
from trackway.tools.results._coverage_items import DeclarationRefused
from trackway.tools.results._outcome import RecordedOutcome

from ..artifacts._redeem import redeem
from ..context._config import CURRENT_SCOPE, AgentConfig
from ..context._config import emit as _emit
from ..context._findings import peel
from ..messages._history_messages import args_copy
from ..messages._redaction import hidden_errors, stack_of
from ._arguments import filled, noted
from ._consent import MASK, fetch_credentials, mask
from ._nested import NestedTools
from ._nudge import nudged
from ._parallel_calls import run_together
from ._served import ROW_FLAGS, Outcome, served

if TYPE_CHECKING:
    from ._dispatch import Batch

_log = logging.getLogger("trackway.tools")

__all__ = ["Ready", "context", "execute", "run_one"]


def context(
    tool: Tool,
    scope: TrackedScope,
    call: Mapping[str, Any],
    iteration: int,
    cancel_scope: Any = None,
    on_progress: Any = None,
    on_session: Any = None,
    on_run: Any = None,
    tools: Any = None,
    on_redact: Any = None,
) -> ToolContext:
    """What a gate or a tool knows about the call (the rest: the call's cancel scope,
    progress channel and hooks, when it runs)."""
    identity = scope.get("identity")
    return built_context(
        {
            "call_id": call["id"],
            "tool_name": tool.name,
            "run_id": scope.run_id,
            "iteration": iteration,
            "extras": {},
            "identity": None if identity is None else Identity.model_validate(thaw(identity)),
            "session_id": scope.get("session_id"),
            "cancel_scope": cancel_scope,
            "on_progress": on_progress,
            "on_session": on_session,
            "on_run": on_run,
            "tools": tools,
            "credentials": _NO_CREDENTIALS,
            "on_redact": on_redact,
            "redaction": scope.redaction,
            "wanted": None,
        }
    )


class Ready:
    """The outcomes of one answer's calls, in call order: refusals and denials as they come,
    runnable calls held until :meth:`settle` runs them together (bounded by
    ``max_parallel_tool_calls``) and adds everything to the batch in call order."""

    def __init__(self, cfg: AgentConfig, scope: TrackedScope, iteration: int) -> None:
        self.cfg, self.scope, self.iteration = cfg, scope, iteration
        self.slots: list[tuple[Mapping[str, Any], Outcome | None]] = []
        self.jobs: list[tuple[int, Mapping[str, Any], Tool, Any, Filling | None]] = []
        self.marks: dict[int, dict[str, Any]] = {}
        """Row flags of calls the middleware rewrote, by slot (merged once they ran)."""

    def add(self, call: Mapping[str, Any], done: Outcome) -> None:
        self.slots.append((call, done))

    def run_later(
        self,
        call: Mapping[str, Any],
        tool: Tool,
        given: Any,
        filling: Filling | None,
        marks: dict[str, Any] | None = None,
    ) -> None:
        if marks:
            self.marks[len(self.slots)] = marks
        self.jobs.append((len(self.slots), call, tool, given, filling))
        self.slots.append((call, None))

    async def _finish(
        self, at: int, call: Mapping[str, Any], done: Outcome, into: list[dict[str, Any]]
    ) -> Outcome:
        """A ran call's outcome with the row flags of its rewrite, through the after-tool
        links."""
        from ._tool_doors import after_tool  # it builds contexts with this module

        marks = self.marks.pop(at, None)
        if marks:
            done = done._replace(flags={**(done.flags or {}), **marks})
        cfg = self.cfg
        if cfg.links("after_tool"):
            tool = cfg.tools.get(call["name"])
            assert tool is not None
            done = await after_tool(cfg, self.scope, call, tool, done, self.iteration, into=into)
        return done

    async def settle(self, batch: Batch) -> None:
        cfg, iteration, scope, jobs = self.cfg, self.iteration, self.scope, self.jobs
        # A sync tool blocks the event loop: running it "at once" would only reorder calls,
        # so an answer's calls run together only when every one of their tools is async.
        limit = cfg.parallel_tool_calls
        if len(jobs) > 1 and limit > 1 and all(j[2].is_async for j in jobs):
            await self._settle_together(batch, limit)
            return
        # one after another, as calls always ran (their events emitted as they came), then
        # every outcome added in call order
        slots = self.slots
        for at, call, tool, given, fill in jobs:
            done = await run_one(cfg, scope, call, iteration, tool, given, fill)
            if cfg.middleware:
                done = await self._finish(at, call, done, batch.decisions)
            slots[at] = (call, done)
        for call, outcome in slots:
            assert outcome is not None
            batch.add(scope, call, outcome)
        self.slots, self.jobs = [], []

    async def _settle_together(self, batch: Batch, limit: int) -> None:
        """The calls run at once (every tool async), then added to the batch in call order,
        each with its own events and the nudge judged in call order."""
        cfg, iteration, scope, jobs = self.cfg, self.iteration, self.scope, self.jobs
        replayed: list[list[bool]] = [[] for _ in jobs]

        def job(n: int) -> Any:
            _, call, tool, given, filling = jobs[n]
            return lambda sc: run_one(cfg, sc, call, iteration, tool, given, filling, replayed[n])

        ran = await run_together(scope, [job(n) for n in range(len(jobs))], limit)
        n = 0  # the jobs are in slot order
        for at, (call, outcome) in enumerate(self.slots):
            if outcome is None:
                outcome, held = ran[n]
                for name, payload in held:  # a call's own events, in call order
                    scope.emit(name, payload)
                flags = replayed[n]
                n += 1
                fresh = not (flags and flags[0])  # a replay serves the nudge as recorded
                if fresh and cfg.repeated_call_nudge and outcome.status == "success":
                    outcome = nudged(scope, call, outcome)  # judged in call order
                if cfg.middleware:
                    outcome = await self._finish(at, call, outcome, batch.decisions)
            batch.add(scope, call, outcome)
        self.slots, self.jobs = [], []


async def run_one(
    cfg: AgentConfig,
    scope: TrackedScope,
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
    if filling is None and tool.ask_or_assume:
        filling = filled(tool, call, answered)
    args = _args_of(call) if filling is None else filling.args
    token = CURRENT_SCOPE.set(scope)
    try:
        done, replayed = await execute(cfg, tool, scope, call, iteration, args)
    finally:
        CURRENT_SCOPE.reset(token)
    if replayed_into is not None:
        replayed_into.append(replayed)
    if filling is None or replayed:  # a replay serves the recorded note and row as they were
        return done
    return noted(scope, call, filling, answered, done)


async def execute(
    cfg: AgentConfig,
    tool: Tool,
    scope: TrackedScope,
    call: Mapping[str, Any],
    iteration: int,
    args: dict[str, Any],
    depth: int = 1,
) -> tuple[Outcome, bool]:
    """Run the tool on its own copy of ``args`` (the recorded call must not change); every
    failure becomes a result the model can read and act on. The flag: a replayed outcome.
    ``depth``: how deep tools called tools to get here (``ctx.tools.call``)."""
    result: Any = None
    hooks = _CallHooks(scope, call, tool.name, iteration, cfg.sessions)
    emit = hooks.emit
    sessions = cfg.sessions
    if sessions._live:  # the lazy sweep: idle and evicted sessions close before a call
        await sessions.close(sessions.due(), "idle", emit)
    inner: list[dict[str, Any]] = []
    # the call's own scope, entered around the await only: nothing else can be cancelled
    # (a sync tool runs to its end), so a sync call pays for none
    cancel_scope = scope.run_local(_CANCEL_SCOPE, _cancel_scope_type)()
    nested = NestedTools(cfg, scope, call, iteration, depth)
    ctx = context(
        tool,
        scope,
        call,
        iteration,
        cancel_scope=cancel_scope,
        on_progress=hooks.progress,
        on_session=hooks.on_session,
        on_run=inner.append,
        tools=nested,
        on_redact=hooks.redact,
    )
    # a weak reference: the context holds on_session, so a strong one would make a cycle
    # (the call's scope and everything it holds left for the garbage collector)
    hooks.context = weakref.ref(ctx)
    awaited = False  # a scope never entered caught no cancel: not asked below
    secrets: dict[str, str] = {}
    redeemed: dict[str, Any] | None = None  # the row's artifacts flag: tickets resolved
    if tool.wants and not _replaying(tool):
        refusal, redeemed = await redeem(cfg, tool, scope, call, iteration, args, ctx)
        if refusal is not None:  # the tool does not run: the model reads what would resolve
            return Outcome("invalid", refusal, (), {"artifacts": redeemed}), False
    if tool.needs and cfg.credentials is not None and not _replaying(tool):
        try:  # fetched for this call only: held by its context, written nowhere
            secrets = await fetch_credentials(cfg, tool, scope.get("identity"))
        except Exception as exc:
            text = f"Error: {tool.name} could not be given its credentials: {exc}"
            error = {"kind": "credentials", "type": type(exc).__name__, "message": str(exc)}
            return Outcome("failure", text, (), {"error": error}), False
        ctx.__dict__["credentials"] = secrets
    try:
        result = tool.execute(args, ctx)
        if type(result) is not str and inspect.isawaitable(result):
            awaited = True
            with cancel_scope:
                result = await result
    except DeclarationRefused as exc:  # a helper that cannot honour its declaration
        result = _Failed(f"refused: {exc}")
    except Exception as exc:
        said = str(exc) if not secrets else mask(str(exc), secrets)
        result = _Failed(
            f"Error: {tool.name} failed: {type(exc).__name__}: {said}",
            {"kind": "raised", "type": type(exc).__name__, "message": said},
        )
        marker = hidden_errors(scope)
        if marker is None and (secrets or hooks.redacted):  # the traceback could quote one
            marker = MASK if secrets else "[REDACTED]"
        if marker is None:
            _log.error(
                "tool %r raised %s in run %s (call %s); the model reads: %s",
                tool.name,
                type(exc).__name__,
                scope.run_id,
                call["id"],
                result.text,
                exc_info=exc,
            )
        else:  # the policy hides error text: the log says where, not what
            _log.error(
                "tool %r raised %s in run %s (call %s); its message is hidden by the "
                "redaction policy (errors=True)\n%s",
                tool.name,
                type(exc).__name__,
                scope.run_id,
                call["id"],
                stack_of(exc, marker),
            )
    if sessions._live:
        await sessions.close(sessions.due(call_id=call["id"]), "call_end", emit)
    runs = tuple(inner)
    calls: dict[str, Any] | None = {"nested": nested.rows} if nested.rows else None
    if hooks.redacted:  # the record hides what this call marked: it cannot rebuild requests
        calls = {**(calls or {}), "redacted": hooks.redacted}
    if isinstance(result, _Failed):
        flags = None if result.error is None else {"error": result.error}
        if calls:
            flags = {**(flags or {}), **calls}
        if redeemed is not None:
            flags = {**(flags or {}), "artifacts": redeemed}
        return Outcome("failure", result.text, (), flags, runs=runs), False
    if awaited and cancel_scope.cancelled_caught:
        cancelled = f"Error: {tool.name} was cancelled before it returned a result."
        return Outcome("failure", cancelled, runs=runs), False
    if isinstance(result, RecordedOutcome):  # a replay: served as recorded, nothing redone
        row = result.row
        flags = {k: v for k, v in row.items() if k in ROW_FLAGS}  # in the order recorded
        effects = tuple(row.get("effects", ()))
        recorded = Outcome(row["status"], result.content, effects, flags, result.declared)
        return recorded._replace(runs=result.runs), True
    done = served(cfg, tool, scope, call, iteration, result)
    if secrets:  # a result that quotes a credential never reaches the model or the record
        masked = mask(done.content, secrets)
        if masked != done.content:
            done = done._replace(content=masked, flags={**(done.flags or {}), "masked": True})
    if calls:
        done = done._replace(flags={**(done.flags or {}), **calls})
    if redeemed is not None:  # beside a placement of this call's own result, if any
        flags = done.flags or {}
        done = done._replace(
            flags={**flags, "artifacts": {**redeemed, **flags.get("artifacts", {})}}
        )
    return (done._replace(runs=runs) if runs else done), False


def _replaying(tool: Tool) -> bool:
    """Whether ``tool`` is a replay's stand-in (it serves the recorded outcome and reads no
    credential)."""
    return getattr(tool.execute, "replayed", False) is True


def _args_of(call: Mapping[str, Any]) -> dict[str, Any]:
    """The tool's own copy of a call's arguments."""
    args = call.get("args") or {}
    return args_copy(args) if type(args) is dict else thaw(args)


class _CallHooks:
    """What a tool's context calls back into while the call runs: progress events, the
    agent's events and its session registrations (one object per call, not three
    closures)."""

    __slots__ = ("call", "context", "iteration", "name", "redacted", "scope", "sessions")

    def __init__(
        self, scope: TrackedScope, call: Mapping[str, Any], name: str, iteration: int, sessions: Any
    ) -> None:
        self.scope, self.call, self.name, self.iteration = scope, call, name, iteration
        self.sessions = sessions
        self.context: weakref.ref[ToolContext] | None = None
        self.redacted = 0  # values the call marked hidden (ctx.redact)

    def redact(self, text: str) -> None:
        self.scope.hide_value(text)
        self.redacted += 1

    def progress(self, payload: Any) -> None:
        event = {"id": self.call["id"], "name": self.name, "iteration": self.iteration}
        try:
            self.scope.emit("stream.tool_progress", {**event, "payload": payload})
        except Exception as exc:  # never raises into the tool: the record says what was lost
            self.scope.emit("stream.tool_progress", {**event, "dropped": type(exc).__name__})

    def emit(self, name: str, payload: dict[str, Any]) -> None:
        _emit(self.scope, name, payload)

    def on_session(self, fn: Any, session_scope: str, key: str | None) -> None:
        # alive: it is the context whose on_teardown called this
        held = None if self.context is None else self.context()
        assert held is not None
        self.sessions.register(held, fn, session_scope, key, self.emit)


_CANCEL_SCOPE = "agent-cancel-scope-type"
_NO_CREDENTIALS: Mapping[str, str] = MappingProxyType({})


def _cancel_scope_type() -> Any:
    """The running backend's cancel scope class, found once per run (``anyio.CancelScope()``
    looks the backend up on every call)."""
    return type(anyio.CancelScope())


class _Failed(NamedTuple):
    text: str
    error: dict[str, str] | None = None
