"""``define_ontology``: a domain map declared once — what each term is, how terms relate,
which source holds a term (with the author's coverage sentence) and which registered tool
reads it from there. Validated (every fault refused by name), detached, deep-frozen and
hashed (:func:`ontology_hash`). It is a map only: nothing is fetched or inferred from it."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence, Sized
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ..messages._errors import AgentError
from ..messages._messages import canonical_json, sha256

__all__ = [
    "ONTOLOGY_LIMITS",
    "Ontology",
    "OntologyError",
    "define_ontology",
    "ontology_hash",
]

ONTOLOGY_LIMITS: Mapping[str, int] = MappingProxyType(
    {
        "nodes": 500,
        "sources": 100,
        "edges": 2000,
        "aliases": 20,
        "node_sources": 20,
        "via": 20,
        "id_chars": 64,
        "text_chars": 500,
        "label_chars": 80,
    }
)
"""The most a declaration may hold: counts (nodes, sources, edges; aliases per node or source,
sources per node, tools per source), an id's length, a meaning's or coverage sentence's
length (``text_chars``) and an alias's, unit's, relation's or version's (``label_chars``)."""

_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*\Z")
_TOOL = re.compile(r"[A-Za-z0-9_.-]+\Z")
_NODE_KEYS = frozenset({"meaning", "unit", "aliases", "sources"})
_HELD_KEYS = frozenset({"source", "via", "coverage"})
_SOURCE_KEYS = frozenset({"meaning", "coverage", "configured", "aliases"})
_EDGE_KEYS = frozenset({"from", "to", "relation", "meaning"})


class OntologyError(AgentError, ValueError):
    """A declaration ``define_ontology`` (or ``from_skos``) cannot take: an id that is not
    identifier-safe, an edge to an undeclared node, a node held by an undeclared source, an
    empty or over-long text, a repeated alias, via or edge, or a count past
    ``ONTOLOGY_LIMITS``. ``.ontology`` is the map's id and ``.path`` where the fault is."""

    def __init__(self, ontology: str, path: str, problem: str) -> None:
        super().__init__(f"ontology {ontology!r}: {path}: {problem}")
        self.ontology = ontology
        self.path = path


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return MappingProxyType({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


@dataclass(frozen=True, slots=True, eq=False)
class Ontology:
    """A validated, deep-frozen domain map (made by :func:`define_ontology`). ``nodes``,
    ``sources`` and ``edges`` are read-only views of the declaration as normalised (absent
    optional fields left out, ``edges`` always present); ``hash`` is :func:`ontology_hash`."""

    id: str
    version: str
    nodes: Mapping[str, Mapping[str, Any]]
    sources: Mapping[str, Mapping[str, Any]]
    edges: tuple[Mapping[str, Any], ...]
    hash: str

    def spec(self) -> dict[str, Any]:
        """The declaration as plain JSON data (a fresh copy): what ``define_ontology`` takes
        back and what the run constant records."""
        return {
            "id": self.id,
            "version": self.version,
            "nodes": _plain(self.nodes),
            "sources": _plain(self.sources),
            "edges": _plain(self.edges),
        }

    def tools(self) -> list[str]:
        """Every tool a node's ``via`` names, in declaration order, once each."""
        out: dict[str, None] = {}
        for node in self.nodes.values():
            for held in node.get("sources", ()):
                out.update(dict.fromkeys(held.get("via", ())))
        return list(out)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Ontology) and other.hash == self.hash

    def __hash__(self) -> int:
        return hash(self.hash)

    def __repr__(self) -> str:
        return (
            f"Ontology(id={self.id!r}, version={self.version!r}, nodes={len(self.nodes)}, "
            f"sources={len(self.sources)}, edges={len(self.edges)})"
        )


def ontology_hash(spec: Mapping[str, Any] | Ontology) -> str:
    """The declaration's fingerprint: SHA-256 of the canonical JSON (sorted keys) of its five
    fields — id, version, nodes, sources, edges. Key order never moves it; edge order is part
    of the identity. A raw mapping is validated and normalised first."""
    if isinstance(spec, Ontology):
        return spec.hash
    return define_ontology(**dict(spec)).hash


def _check_id(onto: str, path: str, value: Any, what: str) -> str:
    if not isinstance(value, str) or not _ID.match(value):
        raise OntologyError(
            onto,
            path,
            f"{what} {value!r} is not identifier-safe: use letters, digits, '_', '.' or '-', "
            "starting with a letter or '_'",
        )
    if len(value) > ONTOLOGY_LIMITS["id_chars"]:
        raise OntologyError(
            onto, path, f"{what} {value!r} is longer than {ONTOLOGY_LIMITS['id_chars']} characters"
        )
    return value


def _check_text(onto: str, path: str, value: Any, limit: str = "text_chars") -> str:
    if not isinstance(value, str) or not value.strip():
        raise OntologyError(onto, path, f"needs a non-empty text, got {value!r}")
    if "\n" in value or "\r" in value:
        raise OntologyError(onto, path, "is one line of text: drop the line breaks")
    cap = ONTOLOGY_LIMITS[limit]
    if len(value) > cap:
        raise OntologyError(onto, path, f"is {len(value)} characters; the limit is {cap}")
    return value.strip()


def _check_count(onto: str, path: str, items: Sized, limit: str) -> None:
    cap = ONTOLOGY_LIMITS[limit]
    if len(items) > cap:
        raise OntologyError(
            onto, path, f"declares {len(items)}; ONTOLOGY_LIMITS[{limit!r}] is {cap}"
        )


def _check_keys(onto: str, path: str, value: Any, allowed: frozenset[str]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise OntologyError(onto, path, f"needs a mapping, got {type(value).__name__}")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise OntologyError(
            onto, path, f"has unknown fields {unknown}; the fields are {sorted(allowed)}"
        )
    return value


def _list(onto: str, path: str, value: Any) -> Sequence[Any]:
    if isinstance(value, str) or not isinstance(value, Iterable) or isinstance(value, Mapping):
        raise OntologyError(onto, path, f"needs a list, got {value!r}")
    return list(value)


def _aliases(onto: str, path: str, value: Any) -> list[str]:
    items = _list(onto, path, value)
    _check_count(onto, path, items, "aliases")
    out: list[str] = []
    seen: set[str] = set()
    for i, alias in enumerate(items):
        text = _check_text(onto, f"{path}[{i}]", alias, "label_chars")
        if text.casefold() in seen:
            raise OntologyError(onto, f"{path}[{i}]", f"repeats the alias {text!r}")
        seen.add(text.casefold())
        out.append(text)
    return out


def _source(onto: str, sid: str, value: Any) -> dict[str, Any]:
    path = f"sources.{sid}"
    raw = _check_keys(onto, path, value, _SOURCE_KEYS)
    out: dict[str, Any] = {"meaning": _check_text(onto, f"{path}.meaning", raw.get("meaning"))}
    if raw.get("coverage") is not None:
        out["coverage"] = _check_text(onto, f"{path}.coverage", raw["coverage"])
    if raw.get("configured") is not None:
        if not isinstance(raw["configured"], bool):
            raise OntologyError(
                onto,
                f"{path}.configured",
                f"is True, False or left out (unknown), got {raw['configured']!r}",
            )
        out["configured"] = raw["configured"]
    if raw.get("aliases"):
        out["aliases"] = _aliases(onto, f"{path}.aliases", raw["aliases"])
    return out


def _node(onto: str, nid: str, value: Any, sources: Mapping[str, Any]) -> dict[str, Any]:
    path = f"nodes.{nid}"
    raw = _check_keys(onto, path, value, _NODE_KEYS)
    out: dict[str, Any] = {"meaning": _check_text(onto, f"{path}.meaning", raw.get("meaning"))}
    if raw.get("unit") is not None:
        out["unit"] = _check_text(onto, f"{path}.unit", raw["unit"], "label_chars")
    if raw.get("aliases"):
        out["aliases"] = _aliases(onto, f"{path}.aliases", raw["aliases"])
    held_list = _list(onto, f"{path}.sources", raw.get("sources") or ())
    _check_count(onto, f"{path}.sources", held_list, "node_sources")
    held: list[dict[str, Any]] = []
    for i, entry in enumerate(held_list):
        where = f"{path}.sources[{i}]"
        h = _check_keys(onto, where, entry, _HELD_KEYS)
        sid = _check_id(onto, f"{where}.source", h.get("source"), "source id")
        if sid not in sources:
            raise OntologyError(
                onto,
                f"{where}.source",
                f"names source {sid!r}, which nobody declared; declare it under sources= "
                f"(declared: {', '.join(sorted(sources)) or 'none'})",
            )
        if any(e["source"] == sid for e in held):
            raise OntologyError(onto, f"{where}.source", f"repeats source {sid!r}")
        row: dict[str, Any] = {"source": sid}
        via = _list(onto, f"{where}.via", h.get("via") or ())
        _check_count(onto, f"{where}.via", via, "via")
        tools: list[str] = []
        for j, tool in enumerate(via):
            if not isinstance(tool, str) or not _TOOL.match(tool) or len(tool) > 64:
                raise OntologyError(
                    onto,
                    f"{where}.via[{j}]",
                    f"{tool!r} is not a tool name (1-64 of A-Z a-z 0-9 _ . -)",
                )
            if tool in tools:
                raise OntologyError(onto, f"{where}.via[{j}]", f"repeats the tool {tool!r}")
            tools.append(tool)
        if tools:
            row["via"] = tools
        if h.get("coverage") is not None:
            row["coverage"] = _check_text(onto, f"{where}.coverage", h["coverage"])
        held.append(row)
    if held:
        out["sources"] = held
    return out


def _edge(onto: str, i: int, value: Any, nodes: Mapping[str, Any]) -> dict[str, Any]:
    path = f"edges[{i}]"
    raw = _check_keys(onto, path, value, _EDGE_KEYS)
    out: dict[str, Any] = {}
    for end in ("from", "to"):
        nid = _check_id(onto, f"{path}.{end}", raw.get(end), "node id")
        if nid not in nodes:
            raise OntologyError(
                onto,
                f"{path}.{end}",
                f"names node {nid!r}, which nobody declared; declare it under nodes=",
            )
        out[end] = nid
    out["relation"] = _check_text(onto, f"{path}.relation", raw.get("relation"), "label_chars")
    if raw.get("meaning") is not None:
        out["meaning"] = _check_text(onto, f"{path}.meaning", raw["meaning"])
    return out


def define_ontology(
    *,
    id: str,
    version: str,
    nodes: Mapping[str, Mapping[str, Any]],
    sources: Mapping[str, Mapping[str, Any]] | None = None,
    edges: Iterable[Mapping[str, Any]] = (),
) -> Ontology:
    """Declare a domain map: ``nodes`` (term id -> ``meaning``, optional ``unit``,
    ``aliases`` and ``sources``: ``[{"source", "via": [tool, ...], "coverage"}]``),
    ``sources`` (source id -> ``meaning``, optional ``coverage``, ``configured`` and
    ``aliases``) and ``edges`` (``[{"from", "to", "relation", "meaning"?}]``, in order).
    A node with no source is legal: known, held nowhere here. Every fault raises
    :class:`OntologyError` naming where it is."""
    onto = id if isinstance(id, str) else repr(id)
    _check_id(onto, "id", id, "the ontology id")
    version_text = _check_text(onto, "version", version, "label_chars")
    if not isinstance(nodes, Mapping) or not nodes:
        raise OntologyError(onto, "nodes", "declare at least one node (term id -> {meaning})")
    declared_sources = sources or {}
    if not isinstance(declared_sources, Mapping):
        raise OntologyError(onto, "sources", "needs a mapping of source id -> {meaning}")
    _check_count(onto, "nodes", nodes, "nodes")
    _check_count(onto, "sources", declared_sources, "sources")
    checked_sources = {
        _check_id(onto, f"sources.{sid}", sid, "source id"): _source(onto, sid, value)
        for sid, value in declared_sources.items()
    }
    checked_nodes = {
        _check_id(onto, f"nodes.{nid}", nid, "node id"): _node(onto, nid, value, checked_sources)
        for nid, value in nodes.items()
    }
    owner: dict[str, str] = {}
    for nid, node in checked_nodes.items():
        for alias in node.get("aliases", ()):
            key = alias.casefold()
            if key in owner and owner[key] != nid:
                raise OntologyError(
                    onto,
                    f"nodes.{nid}.aliases",
                    f"repeats the alias {alias!r} of node {owner[key]!r}: an alias names one term",
                )
            owner[key] = nid
    edge_list = _list(onto, "edges", edges)
    _check_count(onto, "edges", edge_list, "edges")
    checked_edges: list[dict[str, Any]] = []
    seen: set[tuple[str, str, str]] = set()
    for i, edge in enumerate(edge_list):
        row = _edge(onto, i, edge, checked_nodes)
        key = (row["from"], row["to"], row["relation"])
        if key in seen:
            raise OntologyError(
                onto, f"edges[{i}]", f"repeats the edge {key[0]} -{key[2]}-> {key[1]}"
            )
        seen.add(key)
        checked_edges.append(row)
    plain = {
        "id": id,
        "version": version_text,
        "nodes": checked_nodes,
        "sources": checked_sources,
        "edges": checked_edges,
    }
    return Ontology(
        id=id,
        version=version_text,
        nodes=_freeze(checked_nodes),
        sources=_freeze(checked_sources),
        edges=_freeze(checked_edges),
        hash=sha256(canonical_json(plain)),
    )
