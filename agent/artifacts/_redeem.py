"""Redemption: before a tool that ``wants`` artifacts runs (before its credentials and its
code, at every door: the answer's calls, resumed calls and ``ctx.tools.call``), each ticket
it was given is resolved under the run's scope and kind-checked. The data goes into the
tool's arguments (decoded by media type) and the tickets into ``ctx.wanted``; a ticket that
does not resolve stops the call with a refusal that lists what would."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import anyio

from trackway.engine.run._scope import TrackedScope
from trackway.tools import Tool, ToolContext
from trackway.tools.artifacts import ArtifactMeta, ArtifactScope, artifact_value

from ..context._config import AgentConfig
from ..context._config import emit as _emit
from ._place import meta_row
from ._plan import run_scope

__all__ = ["LIVE_LISTED", "redeem"]

LIVE_LISTED = 10
"""How many live tickets a refusal lists at most (newest first)."""


async def redeem(
    cfg: AgentConfig,
    tool: Tool,
    scope: TrackedScope,
    call: Mapping[str, Any],
    iteration: int,
    args: dict[str, Any],
    ctx: ToolContext,
) -> tuple[str | None, dict[str, Any]]:
    """Resolve the tickets of ``tool``'s ``wants`` in ``args`` (in place; the store is read
    in a worker thread, so a large artifact never blocks the other calls) and set
    ``ctx.wanted``. Returns ``(refusal, flag)``: the text the model reads when a ticket does
    not resolve (the tool does not run), else ``None``; and the row's ``artifacts`` flag."""
    store = None if cfg.artifacts is None else cfg.artifacts.store
    where = {"id": call["id"], "name": tool.name, "iteration": iteration}
    at = run_scope(scope)
    wanted: dict[str, ArtifactMeta] = {}
    rows: list[dict[str, Any]] = []
    for arg, kind in (tool.wants or {}).items():
        if arg not in args:  # an optional ticket not given: nothing to redeem
            continue
        ref = args[arg]
        reason, why = await anyio.to_thread.run_sync(_resolve, store, at, ref, kind)
        if isinstance(why, tuple):
            meta, data = why
            try:
                args[arg] = artifact_value(meta, data)
            except ValueError as exc:
                reason, why = "undecodable", f"its bytes are not {meta.media_type} ({exc})"
            else:
                wanted[arg] = meta
                rows.append({"arg": arg, **meta_row(meta)})
                _emit(scope, "artifacts.resolved", {**where, "arg": arg, "via": "get", **rows[-1]})
                continue
        said = ref[:64] if isinstance(ref, str) else repr(ref)[:64]
        refused = {"arg": arg, "ref": said, "kind": kind, "reason": reason}
        _emit(scope, "artifacts.refused", {**where, "op": "dispatch", **refused})
        text = await anyio.to_thread.run_sync(_refusal, store, at, tool, arg, kind, said, str(why))
        return text, {"refused": refused}
    ctx.__dict__["wanted"] = MappingProxyType(wanted)
    return None, {"redeemed": rows}


def _resolve(store: Any, at: ArtifactScope, ref: Any, kind: str) -> tuple[str, Any]:
    """``("ok", (meta, data))``, or a reason and what the model is told of it."""
    if not isinstance(ref, str) or not ref.startswith("art_"):
        return "not_a_ticket", "that is not an artifact ticket (an art_... string)"
    if store is None:  # a tool added where build() could not check it
        return "no_store", "this agent has no artifact store to redeem tickets from"
    try:
        found = store.get(ref, at)
    except Exception as exc:  # the store failed: the ticket may be good
        return "store_failed", (
            f"the artifact store failed to read it ({type(exc).__name__}: {exc}); the ticket "
            "may be good: try again later"
        )
    if found is None:
        return "unknown", "no such ticket here (unknown, expired, or another scope's)"
    meta, data = found
    if meta.kind != kind:
        return "wrong_kind", f"that ticket is of kind {meta.kind!r}, not {kind!r}"
    return "ok", (meta, data)


def _refusal(
    store: Any, at: ArtifactScope, tool: Tool, arg: str, kind: str, ref: str, why: str
) -> str:
    """The teaching refusal: what was wrong and the live tickets that would resolve."""
    try:
        live = [] if store is None else store.list(at, kind, LIVE_LISTED)
    except Exception as exc:
        listed = f"The live tickets could not be listed ({type(exc).__name__})."
    else:
        listed = (
            "Live tickets of that kind: "
            + "; ".join(f"{m.ref} ({m.size} bytes, {m.created})" for m in live)
            + "."
            if live
            else f"There is no live ticket of kind {kind!r}: call the tool that makes one first."
        )
    return (
        f"Not run: {tool.name} takes in {arg!r} an artifact ticket of kind {kind!r}, and "
        f"{ref!r} cannot be used: {why}. {listed}"
    )
