"""Who a run is for: the caller's identity, as the caller gave it (never invented)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["Identity"]


class Identity(BaseModel):
    """The caller a run acts for. Every field is optional and is only what the caller said:
    trackway never fills one in. It reaches every tool (``ctx.identity``), is committed by
    the agent's ``seed`` stage and is stored with the run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant: str | None = None
    principal: str | None = None
    conversation_id: str | None = None
