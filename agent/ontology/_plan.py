"""What an agent built with ``.ontology(map, ask=)`` runs with: the map, the ask and the skill
join; the run seed's writes (the run constant ``ontology`` and ``settings["ontology"]``) and the
``ontology.served`` event's payload."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from ._spec import Ontology

__all__ = ["OntologyPlan"]


@dataclass(frozen=True)
class OntologyPlan:
    """The map, the ask (``"use-the-map"`` or ``"none"``) and ``tools``: tool -> the ids of
    the skills that declare it, for every via tool some skill declares (``None``: none)."""

    ontology: Ontology
    ask: str
    tools: Mapping[str, tuple[str, ...]] | None = None

    def record(self) -> dict[str, Any]:
        """The run constant ``ontology``: ``{id, version, hash, spec}``, and ``tools`` (the
        skill join) when some via tool is a skill's. Everything a served piece, its rebuild
        and a replay need."""
        o = self.ontology
        out: dict[str, Any] = {"id": o.id, "version": o.version, "hash": o.hash, "spec": o.spec()}
        if self.tools:
            out["tools"] = {tool: list(skills) for tool, skills in self.tools.items()}
        return out

    def __post_init__(self) -> None:  # encoded once, at build: a run parses a fresh copy
        object.__setattr__(self, "_record_bytes", orjson.dumps(self.record()))

    def seed(self, scope: Any, settings: dict[str, Any]) -> None:
        """The run seed's part: the ask in the settings (calls read the piece only where the
        settings say so) and the map, once, as the run constant (a fresh plain copy per run,
        handed over as built: encoded once, never decoded back)."""
        settings["ontology"] = {"ask": self.ask}
        record = orjson.loads(self._record_bytes)  # type: ignore[attr-defined]
        setter = getattr(scope, "_set_built", None)
        if setter is not None:
            setter("ontology", record)
        else:  # pragma: no cover - every engine scope has it
            scope["ontology"] = record

    def served(self, k: int) -> dict[str, Any]:
        """The ``ontology.served`` payload of call ``k``: identities and counts only."""
        o = self.ontology
        return {
            "k": k,
            "id": o.id,
            "version": o.version,
            "hash": o.hash,
            "nodes": len(o.nodes),
            "sources": len(o.sources),
            "edges": len(o.edges),
        }
