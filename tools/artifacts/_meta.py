"""What is known about one stored artifact without reading its bytes, and the scope it is
kept under."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ARTIFACT_REF_PREFIX", "ArtifactMeta", "ArtifactScope"]

ARTIFACT_REF_PREFIX = "art_"


@dataclass(frozen=True)
class ArtifactScope:
    """Who may redeem an artifact: the run's tenant, principal and conversation (``None``
    where the run declared none). A ticket minted under one scope resolves to nothing
    under another."""

    tenant: str | None = None
    principal: str | None = None
    conversation: str | None = None


@dataclass(frozen=True)
class ArtifactMeta:
    """One artifact as its ticket names it: ``ref`` (``art_…``, what the model reads),
    ``kind`` (``"dataset/rows"``, or ``"tool-result/<tool>"`` by default), ``sha256`` of
    the bytes, ``size`` in bytes, ``media_type`` (``application/json``, ``text/plain``, …),
    ``created`` (an ISO 8601 instant in UTC) and the ``scope`` it was minted under."""

    ref: str
    kind: str
    sha256: str
    size: int
    media_type: str
    created: str
    scope: ArtifactScope

    def ticket(self) -> dict[str, Any]:
        """The ticket's fields a record keeps (never the bytes, the scope or the time)."""
        return {
            "ref": self.ref,
            "kind": self.kind,
            "sha256": self.sha256,
            "size": self.size,
            "media_type": self.media_type,
        }
