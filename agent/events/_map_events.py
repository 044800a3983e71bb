"""The events of the map and the patterns: ``ontology.*`` (the served map) and the
``composition.*`` events of ``swarm``, ``map_reduce`` and ``tree_of_thoughts``.

Adding an event: a TypedDict of its payload and one ``event(...)`` line.
"""

from typing import Literal, TypedDict

from ._registry import event

__all__: list[str] = []


class OntologyServed(TypedDict):
    k: int
    id: str
    version: str
    hash: str
    nodes: int
    sources: int
    edges: int


Handoff = TypedDict("Handoff", {"from": str, "to": str, "hop": int})

HandoffRefused = TypedDict(
    "HandoffRefused",
    {
        "from": str,
        "hop": int,
        "reason": Literal["unknown_member", "not_declared", "max_hops"],
        "max_hops": int,
    },
)


class Split(TypedDict):
    items: int
    ran: int
    dropped: int
    max_items: int
    by: Literal["function", "member"]


class Beam(TypedDict):
    level: int
    candidates: int
    kept: int
    unscored: int
    best: int | None
    best_score: float | None


# ontology
event("ontology.served", OntologyServed, "The map's piece was served to a model call.")
# composition patterns
event("composition.handoff", Handoff, "A swarm member handed the turn to another member.")
event(
    "composition.handoff_refused",
    HandoffRefused,
    "A swarm handoff was refused (unknown or undeclared member, or past max_hops).",
)
event("composition.split", Split, "A map-reduce split its input into items (drops counted).")
event("composition.beam", Beam, "A tree-of-thoughts level kept its best candidates.")
