"""The system pieces a call is served come in one fixed order: the prompt, the committed
pieces (skills, instructions), the ontology's map, then the findings ledger piece last."""

from __future__ import annotations

from tests.law import assert_law
from trackway.agent import Agent, define_ontology, mock, replay, served_at

from .test_findings_ledger import LOOKUP as FINDINGS_LOOKUP
from .test_findings_ledger import SCRIPT
from .test_ontology import SPEC


def test_the_map_comes_before_the_ledger_and_both_after_the_prompt() -> None:
    spec = {
        **SPEC,
        "nodes": {
            **SPEC["nodes"],
            "port": {
                **SPEC["nodes"]["port"],
                "sources": [{**SPEC["nodes"]["port"]["sources"][0], "via": ["lookup"]}],
            },
        },
        "sources": SPEC["sources"],
    }
    del spec["nodes"]["backup"]
    agent = (
        Agent.create(provider=mock(replies=list(SCRIPT)), model="m")
        .system("Be brief.")
        .tool(FINDINGS_LOOKUP)
        .ontology(define_ontology(**spec))
        .findings()
        .build()
    )
    assert agent.run_sync("which port?") == "fc1/7."
    assert assert_law(agent) == 5
    snap = agent.snapshot()
    first = served_at(snap, 1).system or ""
    assert first.startswith("Be brief.\n\n") and "Findings ledger" not in first
    last = served_at(snap, 5).system or ""
    prompt, ledger = last.index("Be brief."), last.index("Findings ledger")
    mapped = last.index("port — a physical switch port")
    assert prompt < mapped < ledger  # injections → ontology → findings, fixed
    assert last[:ledger].startswith(first)  # the map is the same bytes on every call
    again = replay(snap)
    assert [c.writes for c in again.history()] == [c.writes for c in snap.history()]
