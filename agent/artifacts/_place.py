"""Placement: a result over ``max_inline_chars`` is put in the artifact store and the model
reads its ticket instead (after the tool's own ceiling, before the agent's cap). A store
that fails to keep it never loses the result: it is served inline (the cap then applies) and
the row says what happened."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trackway.engine.run._scope import TrackedScope
from trackway.tools import Tool
from trackway.tools.artifacts import ArtifactMeta
from trackway.tools.define._wants import result_kind_of

from ..context._config import AgentConfig
from ..context._config import emit as _emit
from ._plan import run_scope

__all__ = ["meta_row", "placed", "ticket_text"]


def meta_row(meta: ArtifactMeta) -> dict[str, Any]:
    """What the record keeps of a ticket (never the bytes)."""
    return meta.ticket()


def placed(
    cfg: AgentConfig,
    tool: Tool,
    scope: TrackedScope,
    call: Mapping[str, Any],
    iteration: int,
    content: str,
    media_type: str,
) -> tuple[str, dict[str, Any]]:
    """The text the model reads of ``content`` and the row's ``artifacts`` flag: the ticket
    once stored, or the content itself (with the failure) when the store failed."""
    plan = cfg.artifacts
    kind = result_kind_of(tool)
    where = {"id": call["id"], "name": tool.name, "iteration": iteration}
    try:
        meta = plan.store.put(
            content.encode("utf-8"), kind=kind, media_type=media_type, scope=run_scope(scope)
        )
    except Exception as exc:  # served inline, and said: never a lost result
        failed = f"{type(exc).__name__}: {exc}"
        _emit(scope, "artifacts.place_failed", {**where, "kind": kind, "error": failed})
        return content, {"place_failed": {"kind": kind, "error": failed}}
    row = meta_row(meta)
    _emit(scope, "artifacts.placed", {**where, **row})
    return ticket_text(cfg, meta, len(content)), {"placed": row}


def ticket_text(cfg: AgentConfig, meta: ArtifactMeta, chars: int) -> str:
    """What the model reads instead of a placed result: the ticket, its kind and size, which
    tools redeem it."""
    takers = [
        f"`{arg}` of {t.name}"
        for t in cfg.tools.values()
        for arg, kind in (t.wants or {}).items()
        if kind == meta.kind
    ]
    use = (
        f'To work on it, pass "{meta.ref}" as ' + ", or as ".join(takers) + "."
        if takers
        else "No tool of this agent takes this kind; to read it, ask for less."
    )
    return (
        f"[artifact {meta.ref}] The result ({chars} characters, over the "
        f"{cfg.artifacts.max_inline_chars} shown inline) is stored as artifact {meta.ref}: "
        f"kind {meta.kind}, {meta.media_type}, {meta.size} bytes. {use}"
    )
