"""``ontology_piece``: the one system piece every model call of an agent with ``.ontology()`` is
served, composed from the declaration alone (pure: no clock, no per-call byte, so an unchanged
map serves unchanged bytes), and ``ONTOLOGY_INSTRUCTION``, the ask served before it under
``ask="use-the-map"``."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Literal

import orjson

from trackway.engine.core._values import to_plain

from ._spec import Ontology

__all__ = [
    "ONTOLOGY_ASKS",
    "ONTOLOGY_INSTRUCTION",
    "ONTOLOGY_INSTRUCTION_ID",
    "ONTOLOGY_PIECE_LIMITS",
    "OntologyAsk",
    "ontology_piece",
    "served_ontology",
]

OntologyAsk = Literal["use-the-map", "none"]
ONTOLOGY_ASKS: tuple[str, ...] = ("use-the-map", "none")
"""``"use-the-map"`` (the default) serves :data:`ONTOLOGY_INSTRUCTION` before the piece;
``"none"`` serves the piece alone, for an application that writes its own ask."""

ONTOLOGY_INSTRUCTION_ID = "ontology"

ONTOLOGY_INSTRUCTION = (
    "Read the question in the terms and aliases listed below. Where a term is held by a "
    "declared source, the tool named beside it is where to look; a relation is the way from a "
    "term you already hold to the term you need. When the tool results do not meet a need, say "
    "which declared source, tool or neighbouring term would help further — as a proposal, "
    "never as a claim that the data exists there. Never invent a value from these "
    "declarations: they describe where data may be held, they hold none. Report a term that is "
    "known but held nowhere here as such. A tool marked [skill: id] is declared by that skill: "
    "read_skill takes that id. Speak to the person of sources, tools and terms, never of a map "
    "or an ontology."
)
"""The ask served (under ``ask="use-the-map"``) right before the piece."""

ONTOLOGY_PIECE_LIMITS: Mapping[str, int] = MappingProxyType(
    {"nodes": 200, "sources": 50, "held_by": 200, "relations": 200, "known_not_held": 200}
)
"""The most lines each section of the piece shows (``known_not_held``: ids on its one line);
the rest is stated as a count, never dropped silently."""

_HEADER = (
    "Domain terms ({id}, version {version}): what each term means and its unit, which source "
    "holds it and which tool reads it from there, and how terms relate. Each line quotes the "
    "application's declaration."
)


def _shown_tools(
    via: Sequence[str], tools: Mapping[str, Sequence[str]], hidden: Collection[str]
) -> list[str]:
    """The via tools as served: a skill's tool with the ids of its visible skills beside it;
    a tool every declaring skill of which is hidden is left out whole; a static tool is never
    filtered."""
    out: list[str] = []
    for tool in via:
        skills = tools.get(tool)
        if skills is None:
            out.append(tool)
            continue
        shown = [s for s in skills if s not in hidden]
        if not shown:
            continue
        mark = "skill" if len(shown) == 1 else "skills"
        out.append(f"{tool} [{mark}: {', '.join(shown)}]")
    return out


def _capped(title: str, lines: list[str], cap: int, what: str) -> list[str]:
    if not lines:
        return []
    out = [f"{title}:", *lines[:cap]]
    if len(lines) > cap:
        out.append(f"- … {len(lines) - cap} more {what} not shown")
    return out


def ontology_piece(
    ontology: Ontology | Mapping[str, Any],
    *,
    tools: Mapping[str, Sequence[str]] | None = None,
    hidden_skill_ids: Collection[str] = (),
) -> str:
    """The system piece for ``ontology`` (an :class:`Ontology` or its ``spec()``): a header,
    then the sections ``nodes`` (sorted by id), ``sources`` (sorted by id), ``held by``,
    ``relations`` (in declaration order) and ``known, not held here`` (the nodes no source
    holds). Each section is capped by :data:`ONTOLOGY_PIECE_LIMITS` with the overflow stated;
    an empty section is left out. ``tools`` (tool -> ids of the skills that declare it) marks
    a skill's tool; ``hidden_skill_ids`` are never named (a tool only hidden skills declare is
    left out whole)."""
    spec = ontology.spec() if isinstance(ontology, Ontology) else ontology
    join = tools or {}
    hidden = frozenset(hidden_skill_ids)
    nodes: Mapping[str, Any] = spec["nodes"]
    sources: Mapping[str, Any] = spec.get("sources") or {}
    limits = ONTOLOGY_PIECE_LIMITS
    node_lines, held_lines, unheld = [], [], []
    for nid in sorted(nodes):
        node = nodes[nid]
        line = f"- {nid} — {node['meaning']}"
        if node.get("unit"):
            line += f" ({node['unit']})"
        if node.get("aliases"):
            line += f" · aliases: {', '.join(node['aliases'])}"
        node_lines.append(line)
        held = node.get("sources") or ()
        if not held:
            unheld.append(nid)
        for h in held:
            row = f"- {nid} ← {h['source']}"
            shown = _shown_tools(h.get("via") or (), join, hidden)
            if shown:
                row += f" via {', '.join(shown)}"
            if h.get("coverage"):
                row += f" · {h['coverage']}"
            held_lines.append(row)
    source_lines = []
    for sid in sorted(sources):
        source = sources[sid]
        line = f"- {sid} — {source['meaning']}"
        if source.get("aliases"):
            line += f" · aliases: {', '.join(source['aliases'])}"
        if source.get("coverage"):
            line += f" · coverage: {source['coverage']}"
        if source.get("configured") is not None:
            line += f" · configured: {'yes' if source['configured'] else 'no'}"
        source_lines.append(line)
    relation_lines = []
    for edge in spec.get("edges") or ():
        line = f"- {edge['from']} —{edge['relation']}→ {edge['to']}"
        if edge.get("meaning"):
            line += f" · {edge['meaning']}"
        relation_lines.append(line)
    parts = [_HEADER.format(id=spec["id"], version=spec["version"])]
    sections = [
        _capped("nodes", node_lines, limits["nodes"], "nodes"),
        _capped("sources", source_lines, limits["sources"], "sources"),
        _capped("held by", held_lines, limits["held_by"], "holdings"),
        _capped("relations", relation_lines, limits["relations"], "relations"),
    ]
    if unheld:
        cap = limits["known_not_held"]
        line = ", ".join(unheld[:cap])
        if len(unheld) > cap:
            line += f" (… {len(unheld) - cap} more not shown)"
        sections.append(["known, not held here:", line])
    parts += ["\n".join(s) for s in sections if s]
    return "\n\n".join(parts)


_SERVED: dict[tuple[Any, ...], str] = {}
"""Texts already composed, by (the spec's canonical bytes, ask, join, hidden ids): a memo of
a pure function, so a run of a map served before composes nothing."""


def served_ontology(record: Mapping[str, Any], ask: str, skills: Any = None) -> str:
    """The text a call is served for the run constant ``record`` (``{id, version, hash, spec,
    tools?}``): :data:`ONTOLOGY_INSTRUCTION` (under ``"use-the-map"``) then the piece, with
    the hidden skills of the committed ``skills`` declarations never named."""
    join = record.get("tools")
    hidden: tuple[str, ...] = ()
    if join and skills is not None:
        hidden = tuple(s["id"] for s in skills.get("catalog", ()) if s.get("hidden"))
    tools = None if not join else tuple((t, tuple(ids)) for t, ids in join.items())
    spec = orjson.dumps(record["spec"], default=to_plain, option=orjson.OPT_SORT_KEYS)
    key = (spec, ask, tools, hidden)
    text = _SERVED.get(key)
    if text is None:
        piece = ontology_piece(record["spec"], tools=join, hidden_skill_ids=hidden)
        text = piece if ask == "none" else f"{ONTOLOGY_INSTRUCTION}\n\n{piece}"
        if len(_SERVED) >= 64:  # a bounded memo: many maps in one process start it over
            _SERVED.clear()
        _SERVED[key] = text
    return text
