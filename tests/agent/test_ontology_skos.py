"""The ontology's measures and its SKOS door: ``score_absence``/``summarize_absence`` off the
declaration alone, and ``read_skos``/``from_skos``/``to_skos`` through rdflib."""

from __future__ import annotations

from typing import Any

import pytest

from tests.agent.test_ontology import LOOKUP, SPEC, fleet
from tests.law import assert_law
from trackway.agent import (
    SKOS_ERROR_CODES,
    SKOS_NS,
    AbsenceExpectation,
    AbsenceTurn,
    Agent,
    OntologyError,
    SkosError,
    define_ontology,
    from_skos,
    mock,
    read_skos,
    score_absence,
    summarize_absence,
    to_skos,
)

# --- absence -----------------------------------------------------------------------------


def test_an_answer_that_names_the_gap_and_a_neighbour_scores_both():
    turn = AbsenceTurn(
        answer="The port error rates are not collected here; the inventory only lists ports.",
        tools_called=["lookup_port"],
        unsupported_values=0,
    )
    score = score_absence(fleet(), turn, AbsenceExpectation("port_error_rate"))
    assert score.named_gap  # "port error rates": _ as a space, a plural
    assert score.named_neighbour and score.neighbours == ("port",)
    assert score.tool_calls == 1 and score.unsupported_values == 0 and score.map_words == ()


def test_aliases_whole_words_and_the_words_for_the_map():
    turn = AbsenceTurn(
        answer="Per the ontology and its maps, the Interfaces list is in lookup_port."
    )
    score = score_absence(SPEC, turn, "port")
    assert score.named_gap  # the alias "interface", plural
    assert score.neighbours == ("inventory", "lookup_port") or "lookup_port" in score.neighbours
    assert score.map_words == ("ontology", "maps")
    partial = score_absence(SPEC, AbsenceTurn(answer="passport export"), "port")
    assert not partial.named_gap  # whole words only
    # a source as the gap: its terms and the tools reading them are its neighbours
    by_source = score_absence(SPEC, AbsenceTurn(answer="ask the metrics feed"), "telemetry")
    assert by_source.named_gap and by_source.named_neighbour is False
    # no neighbour declared: None, not False
    lonely = define_ontology(id="x", version="1", nodes={"a": {"meaning": "A."}})
    assert score_absence(lonely, AbsenceTurn(answer="no a"), "a").named_neighbour is None


def test_a_gap_the_map_does_not_declare_is_refused():
    with pytest.raises(OntologyError, match="'ghost', which the map does not declare"):
        score_absence(fleet(), AbsenceTurn(answer="x"), "ghost")


def test_the_summary_counts_k_of_n_over_the_turns_that_had_each_check():
    scores = [
        score_absence(fleet(), AbsenceTurn("port error rate: not held; see port", ["a"], 0),
                      "port_error_rate"),
        score_absence(fleet(), AbsenceTurn("nothing found on the map", [], None),
                      "port_error_rate"),
        score_absence(define_ontology(id="x", version="1", nodes={"a": {"meaning": "A."}}),
                      AbsenceTurn("a is unknown", ["t", "u"], 2), "a"),
    ]  # fmt: skip
    summary = summarize_absence(scores)
    assert summary.turns == 3
    assert summary.named_gap == (2, 3)
    assert summary.named_neighbour == (1, 2)
    assert summary.spoke_of_map == (1, 3)
    assert summary.no_unsupported_values == (1, 2)
    assert summary.tool_calls == 3


# --- SKOS --------------------------------------------------------------------------------

SCHEME: dict[str, Any] = {
    "@context": {
        "skos": SKOS_NS,
        "dcterms": "http://purl.org/dc/terms/",
        "prefLabel": {"@id": "skos:prefLabel", "@language": "en"},
    },
    "@graph": [
        {"@id": "https://ex.org/fleet", "@type": "skos:ConceptScheme",
         "dcterms:modified": "2026-09-01"},
        {"@id": "https://ex.org/fleet/Port", "@type": "skos:Concept", "prefLabel": "Port",
         "skos:definition": {"@value": "a physical switch port", "@language": "en"},
         "skos:altLabel": [{"@value": "interface", "@language": "en"},
                           {"@value": "Schnittstelle", "@language": "de"}]},
        {"@id": "https://ex.org/fleet/Port-Error-Rate", "@type": "skos:Concept",
         "prefLabel": "Port error rate",
         "skos:scopeNote": {"@value": "CRC errors per minute", "@language": "en"},
         "skos:related": {"@id": "https://ex.org/fleet/Port"}},
        {"@id": "https://ex.org/fleet/access_port", "prefLabel": "access port",
         "skos:broader": {"@id": "https://ex.org/fleet/Port"}},
        {"@id": "https://ex.org/fleet/Port", "skos:narrower": {"@id": "https://ex.org/fleet/access_port"}},
    ],
}  # fmt: skip


def test_read_skos_is_the_pure_parse_sorted():
    scheme = read_skos(SCHEME)
    assert [c.id for c in scheme.concepts] == ["access_port", "port", "port_error_rate"]
    port = scheme.concepts[1]
    assert port.meaning == "a physical switch port"
    assert port.aliases == ("interface", "Port")  # the German label is another language's
    assert scheme.concepts[2].meaning == "CRC errors per minute"  # the scope note
    assert scheme.concepts[0].meaning == "access port"  # else the label
    assert list(scheme.edges) == [
        {"from": "access_port", "to": "port", "relation": "is-a"},  # broader and narrower: one
        {"from": "port", "to": "port_error_rate", "relation": "related"},
    ]
    assert (scheme.id, scheme.version) == ("fleet", "2026-09-01")


def test_from_skos_joins_the_hosts_bindings_into_a_declaration():
    spec = from_skos(
        SCHEME,
        sources={"inventory": {"meaning": "the switch inventory export"}},
        bind={"port": [{"source": "inventory", "via": ["lookup_port"]}]},
    )
    onto = define_ontology(**spec)
    assert onto.id == "fleet" and onto.nodes["port"]["sources"][0]["via"] == ("lookup_port",)
    assert "sources" not in onto.nodes["access_port"]  # no binding, no sources
    agent = Agent.create(provider=mock(reply="ok"), model="m").tool(LOOKUP).ontology(onto).build()
    agent.run_sync("hi")
    assert assert_law(agent) == 1


@pytest.mark.parametrize(
    ("change", "code"),
    [
        (lambda d: d["@graph"][2].pop("prefLabel"), "ERR_SKOS_NO_PREFLABEL"),
        (lambda d: d["@graph"].append({"@id": "https://ex.org/other/PORT", "prefLabel": "P"}),
         "ERR_SKOS_ID_COLLISION"),
        (lambda d: d["@graph"][3].update({"skos:broader": {"@id": "https://ex.org/x"}}),
         "ERR_SKOS_DANGLING_RELATION"),
        (lambda d: d["@graph"][1].update({"skos:broader": {"@id": "https://ex.org/fleet/access_port"}}),
         "ERR_SKOS_BROADER_CYCLE"),
        (lambda d: d["@graph"][0].pop("dcterms:modified"), "ERR_SKOS_NO_VERSION"),
        (lambda d: d["@graph"].pop(0), "ERR_SKOS_NO_ID"),
        (lambda d: d.update({"@context": "https://ex.org/ctx.jsonld"}), "ERR_SKOS_REMOTE_CONTEXT"),
    ],
)  # fmt: skip
def test_every_refusal_has_a_code_and_never_a_partial_map(change, code):
    import copy

    doc = copy.deepcopy(SCHEME)
    change(doc)
    with pytest.raises(SkosError) as caught:
        from_skos(doc)
    assert caught.value.code == code and code in SKOS_ERROR_CODES
    with pytest.raises(SkosError, match="ERR_SKOS_UNKNOWN_BIND"):
        from_skos(SCHEME, bind={"ghost": []})


def test_to_skos_walks_back_and_from_skos_reads_it_again():
    doc = to_skos(fleet())
    again = define_ontology(
        **from_skos(
            doc,
            sources={k: dict(v) for k, v in fleet().spec()["sources"].items()},
            bind={n: v["sources"] for n, v in fleet().spec()["nodes"].items() if "sources" in v},
        )
    )
    original = fleet()
    assert set(again.nodes) == set(original.nodes)
    for nid, node in original.nodes.items():
        assert again.nodes[nid]["meaning"] == node["meaning"]
        assert set(node.get("aliases", ())) <= set(again.nodes[nid]["aliases"])
        assert again.nodes[nid].get("sources") == node.get("sources")
    # what SKOS has no word for travels under the trackway namespace
    port_rate = next(r for r in doc["@graph"] if r["@id"].endswith("/port_error_rate"))
    assert port_rate["trackway:unit"] == "errors/min"
    assert port_rate["trackway:edge"][0]["trackway:relation"] == "measured-on"
    assert again.version == "1"


def test_without_rdflib_the_reader_says_which_extra_to_install(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "rdflib", None)  # as if the skos extra were not installed
    with pytest.raises(SkosError, match=r"pip install 'trackway\[skos\]'") as caught:
        read_skos(SCHEME)
    assert caught.value.code == "ERR_SKOS_RDFLIB_MISSING"
    assert to_skos(fleet())["@graph"]  # the export needs no rdflib
