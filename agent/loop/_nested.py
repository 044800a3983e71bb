"""``ctx.tools.call(name, args)``: a tool calling another tool of its agent through the same
argument check (always enforced), gates and middleware as the model's calls, recorded as a
``nested`` row on the calling call's row (with the links' decisions), never on the ledger of
the model's calls: a replay serves the calling call's recorded outcome and runs none."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trackway.engine import thaw
from trackway.engine.run._scope import TrackedScope
from trackway.tools.define._errors import ToolCallRefusedError
from trackway.tools.results._outcome import argument_errors

from ..context._arg_check import ArgChecks
from ..context._config import AgentConfig

__all__ = ["MAX_DEPTH", "NestedTools", "ToolCallResult"]

MAX_DEPTH = 8
"""How deep tools may call tools (a tool that calls itself stops here, saying so)."""


class ToolCallResult(str):
    """What ``ctx.tools.call`` returns: the text the model would have read of the call (a
    ``str``), with its ``status`` (``success``, ``failure``, ``denied``...)."""

    status: str

    def __new__(cls, content: str, status: str) -> ToolCallResult:
        made = super().__new__(cls, content)
        made.status = status
        return made


class NestedTools:
    """``ctx.tools`` of one running call: ``await ctx.tools.call(name, args)`` returns the
    text the model would have read of that call (a :class:`ToolCallResult`: a ``str`` with
    its ``status``), or raises :class:`ToolCallRefusedError`."""

    __slots__ = ("_call", "_cfg", "_depth", "_iteration", "_scope", "rows")

    def __init__(
        self,
        cfg: AgentConfig,
        scope: TrackedScope,
        call: Mapping[str, Any],
        iteration: int,
        depth: int = 1,
    ) -> None:
        self._cfg, self._scope, self._call = cfg, scope, call
        self._iteration, self._depth = iteration, depth
        self.rows: list[dict[str, Any]] = []
        """One row per nested call, in call order (for the calling row's ``nested`` flag)."""

    async def call(self, name: str, args: Mapping[str, Any] | None = None) -> ToolCallResult:
        """Run tool ``name`` with ``args`` as the model's calls run (checks, gates,
        middleware, after-tool links) and return what the model would read of it."""
        from ._dispatch import _gated  # the dispatch runs tools, which build this
        from ._tool_doors import after_tool, before_tool
        from ._tool_run import execute

        cfg = self._cfg
        call_id = f"{self._call['id']}.{len(self.rows) + 1}"
        given = {} if args is None else thaw(args)
        call = {"id": call_id, "name": name, "args": given}
        row: dict[str, Any] = {"id": call_id, "name": name}
        self.rows.append(row)
        tool = cfg.tools.get(name)
        if tool is None or (cfg.skills is not None and name in cfg.skills.doors):
            names = ", ".join(cfg.tools) or "none"
            raise self._refused(row, f"there is no tool named {name!r} (tools: {names})")
        if self._depth >= MAX_DEPTH:
            raise self._refused(
                row,
                f"tools called tools {MAX_DEPTH} deep; call {name} from the model instead, or "
                "break the cycle",
            )
        if not isinstance(given, dict):
            raise self._refused(row, f"the arguments of {name} must be a dict, not {given!r}")
        if tool.asks is not None or tool.name in cfg.check_ins:
            raise self._refused(
                row,
                f"{name} waits for a person, and a nested call cannot wait: let the model call it",
            )
        checks = cfg.validators.get(name) or ArgChecks(tool)
        cfg.validators[name] = checks
        errors = argument_errors(checks.validator, given)
        if errors:
            raise self._refused(
                row,
                f"invalid arguments for {name}: {'; '.join(errors)}. Call it again with "
                "arguments that match its schema",
            )
        scope, iteration = self._scope, self._iteration
        decision = None
        if tool.gate is not None or cfg.gate is not None:
            decision = await _gated(cfg, tool, scope, call, iteration, given)
        if decision is not None:
            row["gate"] = decision.kind
            what = "asks a person" if decision.kind == "ask" else f"denied it: {decision.text}"
            raise self._refused(row, f"the gate of {name} {what}")
        decisions: list[dict[str, Any]] = []
        if cfg.links("before_tool"):
            walked = await before_tool(cfg, scope, call, tool, given, iteration)
            decisions.extend(walked.rows)
            row["decisions"] = decisions
            if walked.stopped is not None:
                row["middleware"] = walked.by
                what = "asks a person" if walked.stopped.kind == "ask" else "denied it"
                raise self._refused(row, f"middleware {walked.by!r} {what}: {walked.stopped.text}")
            given = dict(walked.args)
            if walked.sources:
                row["rewritten"] = dict(walked.sources)
        done = (await execute(cfg, tool, scope, call, iteration, given, self._depth + 1))[0]
        if cfg.links("after_tool"):
            done = await after_tool(cfg, scope, call, tool, done, iteration, into=decisions)
            row["decisions"] = decisions
        row["status"], row["chars"] = done.status, len(done.content)
        inner = (done.flags or {}).get("nested")
        if inner:  # what this call called in turn
            row["nested"] = inner
        return ToolCallResult(done.content, done.status)

    def _refused(self, row: dict[str, Any], why: str) -> ToolCallRefusedError:
        row["status"] = "refused"
        row["why"] = why
        return ToolCallRefusedError(f"ctx.tools.call did not run it: {why}")
