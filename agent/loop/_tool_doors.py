"""The tool doors of the middleware chain: before a call runs (after its arguments are
checked and filled, before a person is asked, credentials are fetched or the tool runs) and
after it ran (before the model reads the result). Each link's decision is a row: on the
ledger for the model's own calls, on the calling row for a tool's nested call."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from trackway.engine import thaw
from trackway.engine.run._scope import TrackedScope
from trackway.tools import Tool
from trackway.tools.define._gate import UNCHANGED, GateDecision

from ..context._config import AgentConfig
from ..messages._errors import MiddlewareError
from ..middleware._ledger import decision_row
from ..middleware._links import decide
from ._served import Outcome
from ._tool_run import context

__all__ = ["Walked", "after_tool", "before_tool", "rewritten_rows"]


class Walked(NamedTuple):
    """Where the before-tool chain left a call: the arguments it runs with, the link that
    stopped it (``deny`` or ``ask``) and that link's index, the rewritten arguments with
    where each came from, and the rows of every decision."""

    args: Mapping[str, Any]
    stopped: GateDecision | None
    at: int
    by: str
    sources: dict[str, str]
    rows: list[dict[str, Any]]


async def before_tool(
    cfg: AgentConfig,
    scope: TrackedScope,
    call: Mapping[str, Any],
    tool: Tool,
    args: Mapping[str, Any],
    iteration: int,
    start: int = 0,
    *,
    into: list[dict[str, Any]] | None = None,
) -> Walked:
    """Walk the before-tool links from ``start`` in order; a ``deny`` or ``ask`` stops the
    walk, a rewriting ``allow`` hands the next link the new arguments. ``into``: the list
    the rows go to on their way to the ledger (the turn's batch); without it they are only
    returned (a nested call keeps them on its calling row)."""
    links = cfg.links("before_tool")
    rows: list[dict[str, Any]] = []
    sources: dict[str, str] = {}
    ctx = context(tool, scope, call, iteration)
    current: Mapping[str, Any] = args
    stopped: GateDecision | None = None
    at, by = len(links), ""
    for index in range(start, len(links)):
        link = links[index]
        view = {"id": call["id"], "name": tool.name, "args": thaw(current)}
        decision = await decide(link, "before_tool", view, ctx)
        changed = decision.value is not UNCHANGED and decision.value != thaw(current)
        if decision.kind == "allow" and changed:
            if not isinstance(decision.value, Mapping):
                raise MiddlewareError(
                    f"middleware {link.name!r} at the before_tool door rewrote the arguments of "
                    f"{tool.name} to {decision.value!r}; give allow(new_args) a dict of the "
                    "tool's arguments"
                )
            new = dict(decision.value)
            for arg in sorted(set(new) | set(current)):
                if new.get(arg, _GONE) != current.get(arg, _GONE):
                    sources[arg] = decision.source.get(arg, f"middleware {link.name}")
            current = new
        row = decision_row(
            link.name, "before_tool", iteration, decision, changed=changed, call=call
        )
        rows.append(row)
        if decision.kind in ("deny", "ask"):
            stopped, at, by = decision, index, link.name
            break
    if into is not None:
        into.extend(rows)
    return Walked(current, stopped, at, by, sources, rows)


async def after_tool(
    cfg: AgentConfig,
    scope: TrackedScope,
    call: Mapping[str, Any],
    tool: Tool,
    done: Outcome,
    iteration: int,
    *,
    into: list[dict[str, Any]],
) -> Outcome:
    """Walk the after-tool links backwards over a result that ran: ``withhold`` replaces
    what the model reads with the reason and stops the walk; ``scrub(fn)`` rewrites the
    words (what it scrubbed away is kept nowhere). A withheld or scrubbed result files no
    coverage statement: the record never quotes a word the model was not served."""
    links = cfg.links("after_tool")
    if not links:
        return done
    own = into  # the rows, in the order made, on their way to the ledger or a nested row
    ctx = context(tool, scope, call, iteration)
    view = {"id": call["id"], "name": tool.name, "args": thaw(call.get("args") or {})}
    for link in reversed(links):
        result = {"status": done.status, "content": done.content}
        decision = await decide(link, "after_tool", view, result, ctx)
        changed = False
        if decision.kind == "withhold":
            text = f"Withheld: the result of {tool.name} is not shown to you. {decision.text}"
            flags = {**(done.flags or {}), "middleware": link.name, "withheld": True}
            done = done._replace(status="denied", content=text, flags=flags, declared=None)
            changed = True
        elif decision.kind == "scrub":
            assert decision.fn is not None
            text = decision.fn(done.content)
            if not isinstance(text, str):
                raise MiddlewareError(
                    f"middleware {link.name!r}: its scrub(fn) returned {type(text).__name__}; "
                    "return the text the model reads (a str)"
                )
            flags = {**(done.flags or {}), "scrubbed": True}
            done = done._replace(content=text, flags=flags, declared=None)
            changed = True
        own.append(
            decision_row(link.name, "after_tool", iteration, decision, changed=changed, call=call)
        )
        if decision.kind == "withhold":
            break
    return done


def rewritten_rows(sources: Mapping[str, str], args: Mapping[str, Any]) -> dict[str, Any]:
    """The row flags of arguments a link rewrote: each with where it came from; one that
    does not say reads as assumed (its source names the link)."""
    rewritten = [
        {"argument": a, "value": thaw(args.get(a)), "source": s} for a, s in sources.items()
    ]
    flags: dict[str, Any] = {"rewritten": rewritten}
    assumed = [r for r in rewritten if r["source"].startswith("middleware ")]
    if assumed:
        flags["assumed"] = assumed
    return flags


_GONE = object()
