"""Bringing a taxonomy in and out: ``read_skos`` parses a SKOS concept scheme in JSON-LD
(through rdflib, the ``skos`` extra), ``from_skos`` joins it with what SKOS cannot say (which
source holds a term, which tool reads it) into a declaration for ``define_ontology``, and
``to_skos`` walks a map back to a JSON-LD document. Nothing is inferred; every refusal is a
:class:`SkosError` with a code, and the reader never returns a partial map."""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from ..messages._errors import AgentError
from ._spec import Ontology, define_ontology

__all__ = [
    "SKOS_ERROR_CODES",
    "SKOS_IRI_BASE",
    "SKOS_NS",
    "TRACKWAY_NS",
    "SkosConcept",
    "SkosError",
    "SkosScheme",
    "from_skos",
    "read_skos",
    "to_skos",
]

SKOS_NS = "http://www.w3.org/2004/02/skos/core#"
TRACKWAY_NS = "https://trackway.dev/ns/ontology#"
"""Where ``to_skos`` puts what SKOS has no word for: units, sources, via tools, coverage and
any relation other than ``is-a`` and ``related``."""
SKOS_IRI_BASE = "https://trackway.dev/ontology/"
"""The base ``to_skos`` mints IRIs under: ``<base><map id>`` and ``<base><map id>/<node>``."""
SKOS_ERROR_CODES: tuple[str, ...] = (
    "ERR_SKOS_RDFLIB_MISSING",
    "ERR_SKOS_PARSE",
    "ERR_SKOS_REMOTE_CONTEXT",
    "ERR_SKOS_SCHEME",
    "ERR_SKOS_BAD_ID",
    "ERR_SKOS_NO_PREFLABEL",
    "ERR_SKOS_ID_COLLISION",
    "ERR_SKOS_DANGLING_RELATION",
    "ERR_SKOS_BROADER_CYCLE",
    "ERR_SKOS_NO_ID",
    "ERR_SKOS_NO_VERSION",
    "ERR_SKOS_UNKNOWN_BIND",
)
"""Every :class:`SkosError` code."""

_DCTERMS = "http://purl.org/dc/terms/"
_OWL = "http://www.w3.org/2002/07/owl#"
_SCHEMA = "https://schema.org/"
_RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
_PREFIXES = {"skos": SKOS_NS, "dcterms": _DCTERMS, "owl": _OWL, "schema": _SCHEMA}
_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*\Z")


class SkosError(AgentError, ValueError):
    """A SKOS document the reader cannot take, or a join that does not fit it. ``.code`` is
    one of :data:`SKOS_ERROR_CODES`, ``.iris`` the IRIs involved, ``.expected`` what was
    expected instead."""

    def __init__(
        self, code: str, problem: str, iris: Sequence[str] = (), expected: str = ""
    ) -> None:
        where = f" ({', '.join(iris)})" if iris else ""
        wanted = f"; expected {expected}" if expected else ""
        super().__init__(f"{code}: {problem}{where}{wanted}")
        self.code = code
        self.iris = tuple(iris)
        self.expected = expected


@dataclass(frozen=True, slots=True)
class SkosConcept:
    """One concept as read: its ``id`` (the IRI's last segment, lower-cased, ``-`` and space
    as ``_``), ``iri``, ``pref_label``, ``meaning`` (definition, else scope note, else the
    label) and ``aliases`` (alt and hidden labels, then the label)."""

    id: str
    iri: str
    pref_label: str
    meaning: str
    aliases: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SkosScheme:
    """A parsed scheme: ``concepts`` sorted by id, ``edges`` sorted (``is-a`` from broader
    and narrower, ``related`` once per pair), and the scheme's ``iri``, ``id`` and
    ``version`` when it declares them."""

    concepts: tuple[SkosConcept, ...]
    edges: tuple[Mapping[str, str], ...]
    iri: str | None = None
    id: str | None = None
    version: str | None = None


def _rdflib() -> Any:
    try:
        import rdflib
    except ImportError:  # the skos extra is not installed
        raise SkosError(
            "ERR_SKOS_RDFLIB_MISSING",
            "read_skos and from_skos read JSON-LD through rdflib, which is not installed",
            expected="pip install 'trackway[skos]'",
        ) from None
    return rdflib


def _segment(iri: str) -> str:
    return re.split(r"[#/]", iri.rstrip("/#"))[-1]


def _concept_id(iri: str) -> str:
    cid = re.sub(r"[- ]", "_", _segment(iri).lower())
    if not _ID.match(cid):
        raise SkosError(
            "ERR_SKOS_BAD_ID",
            f"the IRI's last segment {_segment(iri)!r} does not make an identifier-safe id",
            [iri],
            "letters, digits, '_', '.' or '-', starting with a letter",
        )
    return cid


def _graph(input: Any) -> Any:
    rdflib = _rdflib()
    if isinstance(input, Mapping):
        doc = dict(input)
    elif isinstance(input, Sequence) and not isinstance(input, str | bytes):
        doc = {"@graph": list(input)}
    else:
        raise SkosError(
            "ERR_SKOS_PARSE",
            f"takes parsed JSON-LD, got {type(input).__name__}",
            expected="a @graph document, a list of node objects or one node object",
        )
    own = doc.get("@context")
    contexts = own if isinstance(own, list) else [] if own is None else [own]
    remote = [c for c in contexts if isinstance(c, str)]
    if remote:
        raise SkosError(
            "ERR_SKOS_REMOTE_CONTEXT",
            "a remote @context is not fetched",
            remote,
            "the context inlined as a mapping",
        )
    doc["@context"] = [_PREFIXES, *contexts]
    try:
        with warnings.catch_warnings():  # rdflib 7's JSON-LD parser calls its own deprecated API
            warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"rdflib\.")
            return rdflib.Graph().parse(data=orjson.dumps(doc).decode(), format="json-ld")
    except Exception as exc:  # rdflib's parser raises several kinds
        raise SkosError("ERR_SKOS_PARSE", f"rdflib could not read the document: {exc}") from None


def _in_language(literals: Iterable[Any], language: str) -> list[str]:
    tagged = [
        str(v)
        for v in literals
        if getattr(v, "language", None) and v.language.split("-")[0].lower() == language.lower()
    ]
    plain = [str(v) for v in literals if getattr(v, "language", None) is None]
    return sorted(tagged) or sorted(plain)


def read_skos(input: Any, *, language: str = "en") -> SkosScheme:
    """Parse a SKOS concept scheme in JSON-LD (already parsed: a ``@graph`` document, a list
    of node objects or one node; full IRIs, the ``skos:`` prefix, or bare keys under the
    document's own ``@context``). Pure: nothing is joined or inferred."""
    rdflib = _rdflib()
    graph = _graph(input)
    skos = rdflib.Namespace(SKOS_NS)
    rdf_type = rdflib.URIRef(_RDF_TYPE)
    schemes = sorted(str(s) for s in graph.subjects(rdf_type, skos.ConceptScheme))
    if len(schemes) > 1:
        raise SkosError(
            "ERR_SKOS_SCHEME",
            "the document holds more than one scheme",
            schemes,
            "one skos:ConceptScheme per document",
        )
    subjects = {str(s) for s in graph.subjects(rdf_type, skos.Concept)}
    subjects |= {str(s) for s in graph.subjects(skos.prefLabel, None)} - set(schemes)
    concepts: dict[str, SkosConcept] = {}
    by_iri: dict[str, str] = {}
    for iri in sorted(subjects):
        node = rdflib.URIRef(iri)
        labels = _in_language(graph.objects(node, skos.prefLabel), language)
        if not labels:
            raise SkosError(
                "ERR_SKOS_NO_PREFLABEL",
                f"a concept has no prefLabel in {language!r}",
                [iri],
                f"a skos:prefLabel tagged {language!r}",
            )
        cid = _concept_id(iri)
        if cid in concepts:
            raise SkosError(
                "ERR_SKOS_ID_COLLISION",
                f"two concepts collapse to the id {cid!r}",
                [concepts[cid].iri, iri],
                "IRIs whose last segments differ",
            )
        meaning = (
            _in_language(graph.objects(node, skos.definition), language)
            or _in_language(graph.objects(node, skos.scopeNote), language)
            or labels
        )[0]
        aliases: dict[str, None] = {}
        for prop in (skos.altLabel, skos.hiddenLabel):
            aliases.update(dict.fromkeys(_in_language(graph.objects(node, prop), language)))
        aliases[labels[0]] = None
        concepts[cid] = SkosConcept(cid, iri, labels[0], meaning, tuple(aliases))
        by_iri[iri] = cid
    pairs: set[tuple[str, str, str]] = set()
    for prop, relation, flip in (
        (skos.broader, "is-a", False),
        (skos.narrower, "is-a", True),
        (skos.related, "related", False),
    ):
        for s, o in graph.subject_objects(prop):
            a, b = str(s), str(o)
            missing = [x for x in (a, b) if x not in by_iri]
            if missing:
                raise SkosError(
                    "ERR_SKOS_DANGLING_RELATION",
                    f"a {_segment(str(prop))} names a concept the document does not hold",
                    missing,
                    "a skos:Concept with that IRI",
                )
            x, y = (by_iri[b], by_iri[a]) if flip else (by_iri[a], by_iri[b])
            if relation == "related":
                x, y = sorted((x, y))
            pairs.add((x, y, relation))
    edges = tuple({"from": x, "to": y, "relation": r} for x, y, r in sorted(pairs))
    _no_cycle(edges, concepts)
    scheme = schemes[0] if schemes else None
    version = None
    if scheme is not None:
        node = rdflib.URIRef(scheme)
        for ns, name in ((_DCTERMS, "modified"), (_OWL, "versionInfo"), (_SCHEMA, "version")):
            found = sorted(str(v) for v in graph.objects(node, rdflib.URIRef(ns + name)))
            if found:
                version = found[0]
                break
    return SkosScheme(
        concepts=tuple(concepts[c] for c in sorted(concepts)),
        edges=edges,
        iri=scheme,
        id=None if scheme is None else _concept_id(scheme),
        version=version,
    )


def _no_cycle(edges: Sequence[Mapping[str, str]], concepts: Mapping[str, SkosConcept]) -> None:
    """Refuse a broader chain that comes back to where it started."""
    up: dict[str, list[str]] = {}
    for e in edges:
        if e["relation"] == "is-a":
            up.setdefault(e["from"], []).append(e["to"])
    done: set[str] = set()
    for start in sorted(up):
        if start in done:
            continue
        path = [start]
        stack = [iter(up.get(start, ()))]
        while stack:
            child = next(stack[-1], None)
            if child is None:
                done.add(path.pop())
                stack.pop()
            elif child in path:
                loop = [*path[path.index(child) :], child]
                raise SkosError(
                    "ERR_SKOS_BROADER_CYCLE",
                    "broader goes round: " + " -> ".join(loop),
                    [concepts[c].iri for c in loop[:-1]],
                    "a broader chain that ends",
                )
            elif child not in done:
                path.append(child)
                stack.append(iter(up.get(child, ())))


def from_skos(
    input: Any,
    *,
    id: str | None = None,
    version: str | None = None,
    sources: Mapping[str, Mapping[str, Any]] | None = None,
    bind: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    language: str = "en",
) -> dict[str, Any]:
    """A declaration for :func:`define_ontology` from a SKOS scheme (see :func:`read_skos`),
    with ``sources`` and ``bind`` (term id -> its ``[{source, via, coverage}]``) given by
    hand, as SKOS cannot say them; a term with no binding has no sources. ``id`` and
    ``version`` default to the scheme's. The result is checked by ``define_ontology`` before
    it is returned: never a partial map."""
    scheme = read_skos(input, language=language)
    map_id = id or scheme.id
    if not map_id:
        raise SkosError(
            "ERR_SKOS_NO_ID",
            "the document declares no scheme to take an id from",
            expected="from_skos(..., id='...') or a skos:ConceptScheme",
        )
    map_version = version or scheme.version
    if not map_version:
        raise SkosError(
            "ERR_SKOS_NO_VERSION",
            "the scheme declares no version",
            [scheme.iri] if scheme.iri else [],
            "from_skos(..., version='...'), dcterms:modified, owl:versionInfo or schema:version",
        )
    held = dict(bind or {})
    known = {c.id for c in scheme.concepts}
    unknown = sorted(set(held) - known)
    if unknown:
        raise SkosError(
            "ERR_SKOS_UNKNOWN_BIND",
            f"bind names terms the scheme does not hold: {unknown}",
            expected=f"one of {sorted(known)}",
        )
    nodes: dict[str, Any] = {}
    for c in scheme.concepts:
        node: dict[str, Any] = {"meaning": c.meaning, "aliases": list(c.aliases)}
        if c.id in held:
            node["sources"] = [dict(h) for h in held[c.id]]
        nodes[c.id] = node
    spec: dict[str, Any] = {
        "id": map_id,
        "version": map_version,
        "nodes": nodes,
        "sources": {k: dict(v) for k, v in (sources or {}).items()},
        "edges": [dict(e) for e in scheme.edges],
    }
    return define_ontology(**spec).spec()  # every fault refused by name, before it returns


def to_skos(
    ontology: Ontology, *, language: str = "en", base: str = SKOS_IRI_BASE
) -> dict[str, Any]:
    """The map as a SKOS JSON-LD document: a concept per node (prefLabel from its id,
    definition its meaning, altLabels its aliases), ``is-a`` edges as ``skos:broader``,
    ``related`` as ``skos:related``; units, sources, via tools, coverage and other relations
    under the ``trackway:`` namespace (:data:`TRACKWAY_NS`), so nothing is lost."""
    scheme = f"{base}{ontology.id}"

    def text(value: str) -> dict[str, str]:
        return {"@value": value, "@language": language}

    def ref(kind: str, key: str) -> dict[str, str]:
        return {"@id": f"{scheme}/{kind}{key}"}

    graph: list[dict[str, Any]] = [
        {"@id": scheme, "@type": "skos:ConceptScheme", "owl:versionInfo": ontology.version}
    ]
    for nid in sorted(ontology.nodes):
        node = ontology.nodes[nid]
        row: dict[str, Any] = {
            "@id": f"{scheme}/{nid}",
            "@type": "skos:Concept",
            "skos:inScheme": {"@id": scheme},
            "skos:prefLabel": text(nid.replace("_", " ")),
            "skos:definition": text(node["meaning"]),
        }
        if node.get("aliases"):
            row["skos:altLabel"] = [text(a) for a in node["aliases"]]
        if node.get("unit"):
            row["trackway:unit"] = node["unit"]
        if node.get("sources"):
            row["trackway:heldBy"] = [
                {
                    "trackway:source": ref("source/", h["source"]),
                    **({"trackway:via": list(h["via"])} if h.get("via") else {}),
                    **({"trackway:coverage": h["coverage"]} if h.get("coverage") else {}),
                }
                for h in node["sources"]
            ]
        graph.append(row)
    by_id = {row["@id"]: row for row in graph}
    for edge in ontology.edges:
        row = by_id[f"{scheme}/{edge['from']}"]
        if edge["relation"] in ("is-a", "related") and not edge.get("meaning"):
            prop = "skos:broader" if edge["relation"] == "is-a" else "skos:related"
            row.setdefault(prop, []).append(ref("", edge["to"]))
        else:
            rel = {"trackway:to": ref("", edge["to"]), "trackway:relation": edge["relation"]}
            if edge.get("meaning"):
                rel["trackway:meaning"] = edge["meaning"]
            row.setdefault("trackway:edge", []).append(rel)
    for sid in sorted(ontology.sources):
        source = ontology.sources[sid]
        row = {
            "@id": f"{scheme}/source/{sid}",
            "@type": "trackway:Source",
            "trackway:meaning": source["meaning"],
        }
        for key in ("coverage", "configured"):
            if key in source:
                row[f"trackway:{key}"] = source[key]
        if source.get("aliases"):
            row["trackway:alias"] = list(source["aliases"])
        graph.append(row)
    return {
        "@context": {"skos": SKOS_NS, "owl": _OWL, "trackway": TRACKWAY_NS},
        "@graph": graph,
    }
