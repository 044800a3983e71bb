"""The part of the agent's builder that declares the map: ``.ontology(map, ask=)``, checked at
``build()`` against the agent's tool registry (its tools, its skills' tools, the doors)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Self

from ..messages._errors import AgentBuildError
from ._piece import ONTOLOGY_ASKS, OntologyAsk
from ._plan import OntologyPlan
from ._spec import Ontology

__all__ = ["OntologyBuilding"]


class OntologyBuilding:
    """``.ontology(...)``."""

    _ontology: tuple[Ontology, str] | None = None

    def ontology(self, map: Ontology, *, ask: OntologyAsk = "use-the-map") -> Self:
        """Serve every model call one fixed system piece describing ``map`` (a
        :func:`define_ontology` declaration): its terms, the sources that hold them, the tools
        that read them there and how terms relate. ``ask="use-the-map"`` (the default) serves
        :data:`ONTOLOGY_INSTRUCTION` before it; ``"none"`` the piece alone. Once per agent;
        every ``via`` tool must be one this agent has (checked at ``build()``)."""
        if self._ontology is not None:
            raise AgentBuildError(
                f"ontology(...) was called twice ({self._ontology[0].id!r}, then "
                f"{getattr(map, 'id', map)!r}); an agent has one map: merge them into one "
                "define_ontology(...)"
            )
        if not isinstance(map, Ontology):
            raise AgentBuildError(
                f"ontology({map!r}): pass a map made by define_ontology(id=, version=, "
                "nodes=, sources=, edges=) (or from_skos(...) then define_ontology)"
            )
        if ask not in ONTOLOGY_ASKS:
            raise AgentBuildError(
                f"ontology(ask={ask!r}): use 'use-the-map' (serve the library's ask) or "
                "'none' (the piece alone; write your own ask with .system(...))"
            )
        self._ontology = (map, ask)
        return self

    def _ontology_plan(
        self, registry: Collection[str], skills: Sequence[Any]
    ) -> OntologyPlan | None:
        """The plan ``build()`` hands the stages: every via tool checked against
        ``registry`` (tool names the agent can serve), joined to the ``skills`` declaring it."""
        if self._ontology is None:
            return None
        onto, ask = self._ontology
        for nid, node in onto.nodes.items():
            for held in node.get("sources", ()):
                for tool in held.get("via", ()):
                    if tool not in registry:
                        raise AgentBuildError(
                            f"ontology {onto.id!r}: node {nid!r} is read from source "
                            f"{held['source']!r} via tool {tool!r}, which this agent does not "
                            "have; register it with .tool(...) or a skill that declares it, or "
                            f"drop it from via (tools: {', '.join(sorted(registry)) or 'none'})"
                        )
        join: dict[str, tuple[str, ...]] = {}
        for tool in onto.tools():
            declaring = tuple(s.id for s in skills if any(t.name == tool for t in s.tools))
            if declaring:
                join[tool] = declaring
        return OntologyPlan(onto, ask, join or None)
