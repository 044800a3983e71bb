"""The ontology: a declared domain map, validated and hashed; one fixed system piece served to
every model call of an agent with ``.ontology()``; the skill join under the hidden-skill law;
the run constant, the event, replay from the record and a recording of this version."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.law import assert_law
from trackway.agent import (
    ONTOLOGY_INSTRUCTION,
    ONTOLOGY_LIMITS,
    ONTOLOGY_PIECE_LIMITS,
    Agent,
    AgentBuildError,
    OntologyError,
    Sequence,
    define_ontology,
    define_skill,
    load_recording,
    mock,
    ontology_hash,
    ontology_piece,
    replay,
    save_recording,
    served_at,
)
from trackway.engine import thaw
from trackway.tools import define_tool

FIXTURE = Path(__file__).parent / "fixtures" / "recording-ontology-v1.jsonl"

SPEC: dict[str, Any] = {
    "id": "fleet",
    "version": "1",
    "sources": {
        "inventory": {"meaning": "the switch inventory export", "configured": True},
        "telemetry": {"meaning": "the streaming counters", "aliases": ["metrics feed"]},
    },
    "nodes": {
        "port": {
            "meaning": "a physical switch port",
            "aliases": ["interface"],
            "sources": [
                {
                    "source": "inventory",
                    "via": ["lookup_port"],
                    "coverage": "every port on every switch",
                }
            ],
        },
        "port_error_rate": {"meaning": "CRC errors per minute on a port", "unit": "errors/min"},
        "backup": {
            "meaning": "a nightly VM backup",
            "sources": [{"source": "telemetry", "via": ["vm_backup_status"]}],
        },
    },
    "edges": [{"from": "port_error_rate", "to": "port", "relation": "measured-on"}],
}


def _lookup(args: dict[str, Any], ctx: Any) -> str:
    return f"port {args.get('port', '?')}: up"


LOOKUP = define_tool(
    name="lookup_port",
    description="Look a port up in the inventory.",
    input_schema={"type": "object", "properties": {"port": {"type": "string"}}},
    execute=_lookup,
)
BACKUP = define_tool(
    name="vm_backup_status",
    description="The last backup of a VM.",
    input_schema={"type": "object", "properties": {}},
    execute=lambda args, ctx: "ok",
)


def _all_events(agent: Agent) -> list[Any]:
    return [e for c in agent.snapshot().history() for e in c.events]


def events(agent: Agent, name: str) -> list[dict[str, Any]]:
    """The payloads of the events ``name`` the last run committed, in order."""
    return [dict(e.payload) for e in _all_events(agent) if e.name == name]


def fleet() -> Any:
    return define_ontology(**SPEC)


def _call(name: str, i: str = "c1", **args: Any) -> dict[str, Any]:
    return {"tool_calls": [{"id": i, "name": name, "args": args}]}


def desk(replies: list[Any], *, ask: str = "use-the-map", hidden: bool | None = None) -> Agent:
    b = Agent.create(provider=mock(replies=replies), model="m").tool(LOOKUP)
    if hidden is None:
        b = b.tool(BACKUP)
    else:
        b = b.skill(
            define_skill(
                id="backup-check", title="Backups", body="Check.", tools=[BACKUP], hidden=hidden
            )
        )
    return b.ontology(fleet(), ask=ask).build()


# --- the declaration ---------------------------------------------------------------------


def test_a_declaration_is_validated_frozen_and_hashed():
    onto = fleet()
    assert onto.id == "fleet" and onto.version == "1"
    assert len(onto.nodes) == 3 and len(onto.sources) == 2 and len(onto.edges) == 1
    assert onto.tools() == ["lookup_port", "vm_backup_status"]
    with pytest.raises(TypeError):
        onto.nodes["port"]["meaning"] = "x"  # type: ignore[index]
    with pytest.raises(AttributeError):
        onto.id = "other"  # type: ignore[misc]
    spec = onto.spec()
    spec["nodes"]["port"]["meaning"] = "changed"  # a copy: the map stands
    assert onto.nodes["port"]["meaning"] == "a physical switch port"
    assert define_ontology(**onto.spec()) == onto and ontology_hash(SPEC) == onto.hash
    # a node with no source is legal; edges are always present
    bare = define_ontology(id="x", version="1", nodes={"a": {"meaning": "A."}})
    assert bare.edges == () and bare.sources == {}


@pytest.mark.parametrize(
    ("change", "path", "said"),
    [
        (lambda s: s.update(id="has space"), "id", "identifier-safe"),
        (lambda s: s["nodes"].update({"9x": {"meaning": "m"}}), "nodes.9x", "identifier-safe"),
        (lambda s: s["edges"].append({"from": "port", "to": "ghost", "relation": "r"}),
         "edges[1].to", "nobody declared"),
        (lambda s: s["nodes"]["backup"]["sources"][0].update(source="tape"),
         "nodes.backup.sources[0].source", "nobody declared"),
        (lambda s: s["nodes"]["port"].update(meaning="  "), "nodes.port.meaning", "non-empty"),
        (lambda s: s["nodes"]["port"].update(meaning="x" * 501), "nodes.port.meaning", "limit"),
        (lambda s: s["nodes"]["port"].update(aliases=["if", "IF"]), "nodes.port.aliases[1]",
         "repeats the alias"),
        (lambda s: s["nodes"]["backup"].update(aliases=["interface"]), "nodes.backup.aliases",
         "of node 'port'"),
        (lambda s: s["nodes"]["port"]["sources"][0].update(via=["lookup_port", "lookup_port"]),
         "nodes.port.sources[0].via[1]", "repeats the tool"),
        (lambda s: s["edges"].append(dict(s["edges"][0])), "edges[1]", "repeats the edge"),
        (lambda s: s["sources"]["inventory"].update(configured="yes"),
         "sources.inventory.configured", "True, False"),
        (lambda s: s["nodes"]["port"].update(colour="red"), "nodes.port", "unknown fields"),
        (lambda s: s["nodes"].update({f"n{i}": {"meaning": "m"} for i in range(500)}),
         "nodes", r"ONTOLOGY_LIMITS\['nodes'\]"),
        (lambda s: s["nodes"]["port"].update(meaning="two\nlines"), "nodes.port.meaning",
         "one line"),
    ],
)  # fmt: skip
def test_every_fault_is_refused_by_name(change, path, said):
    spec = orjson.loads(orjson.dumps(SPEC))
    change(spec)
    with pytest.raises(OntologyError, match=said) as caught:
        define_ontology(**spec)
    assert caught.value.path == path and caught.value.ontology == spec["id"]
    assert ONTOLOGY_LIMITS["nodes"] == 500


def _shuffled(value: Any, data: st.DataObject) -> Any:
    if isinstance(value, dict):
        keys = data.draw(st.permutations(list(value)))
        return {k: _shuffled(value[k], data) for k in keys}
    if isinstance(value, list):
        return [_shuffled(v, data) for v in value]
    return value


@given(st.data())
def test_the_hash_is_stable_under_key_order_and_moved_by_edge_order(data):
    shuffled = _shuffled(SPEC, data)
    assert define_ontology(**shuffled).hash == fleet().hash
    assert ontology_piece(define_ontology(**shuffled)) == ontology_piece(fleet())
    two = orjson.loads(orjson.dumps(SPEC))
    two["edges"].append({"from": "port", "to": "backup", "relation": "near"})
    flipped = dict(two, edges=list(reversed(two["edges"])))
    assert define_ontology(**two).hash != define_ontology(**flipped).hash


# --- the piece ---------------------------------------------------------------------------


def test_the_piece_quotes_the_declaration_in_fixed_sections():
    piece = ontology_piece(fleet())
    assert piece.split("\n\n")[1:] == [
        "nodes:\n"
        "- backup — a nightly VM backup\n"
        "- port — a physical switch port · aliases: interface\n"
        "- port_error_rate — CRC errors per minute on a port (errors/min)",
        "sources:\n"
        "- inventory — the switch inventory export · configured: yes\n"
        "- telemetry — the streaming counters · aliases: metrics feed",
        "held by:\n"
        "- backup ← telemetry via vm_backup_status\n"
        "- port ← inventory via lookup_port · every port on every switch",
        "relations:\n- port_error_rate —measured-on→ port",
        "known, not held here:\nport_error_rate",
    ]
    # an empty section is left out
    bare = define_ontology(id="x", version="1", nodes={"a": {"meaning": "A."}})
    assert "relations" not in ontology_piece(bare) and "held by" not in ontology_piece(bare)


def test_each_section_is_capped_with_the_overflow_stated():
    cap = ONTOLOGY_PIECE_LIMITS["nodes"]
    many = define_ontology(
        id="big", version="1", nodes={f"n{i:03}": {"meaning": "m"} for i in range(cap + 7)}
    )
    piece = ontology_piece(many)
    assert "- … 7 more nodes not shown" in piece
    assert piece.count("\n- n") == cap
    assert "(… 7 more not shown)" in piece  # the known-not-held list too


def test_the_skill_join_follows_the_hidden_skill_law():
    join = {"vm_backup_status": ["backup-check"], "lookup_port": ["a", "b"]}
    piece = ontology_piece(fleet(), tools=join)
    assert "via vm_backup_status [skill: backup-check]" in piece
    assert "via lookup_port [skills: a, b]" in piece
    hidden = ontology_piece(fleet(), tools=join, hidden_skill_ids=["backup-check", "a"])
    assert "backup-check" not in hidden and "vm_backup_status" not in hidden
    assert "- backup ← telemetry\n" in hidden  # the holding stays; the hidden tool is gone
    assert "via lookup_port [skill: b]" in hidden
    static = ontology_piece(fleet(), tools={}, hidden_skill_ids=["backup-check"])
    assert "via vm_backup_status" in static  # a static tool is never filtered


# --- the agent ---------------------------------------------------------------------------


def test_every_call_is_served_the_same_piece_after_the_prompt():
    agent = desk([_call("lookup_port", port="fc1/7"), {"content": "Not collected here."}])
    assert agent.run_sync("error rate on fc1/7?") == "Not collected here."
    assert assert_law(agent) == 2
    first, second = served_at(agent, 1), served_at(agent, 2)
    assert first.system == second.system
    assert first.system == f"{ONTOLOGY_INSTRUCTION}\n\n{ontology_piece(fleet())}"
    state = thaw(agent.snapshot().state)
    assert state["ontology"] == {
        "id": "fleet",
        "version": "1",
        "hash": fleet().hash,
        "spec": fleet().spec(),
    }
    assert state["settings"]["ontology"] == {"ask": "use-the-map"}
    seeds = [c for c in agent.snapshot().history() if any(op.key == "ontology" for op in c.ops)]
    assert [c.stage_id for c in seeds] == ["seed"]  # written once
    assert events(agent, "ontology.served") == [
        {"k": k, "id": "fleet", "version": "1", "hash": fleet().hash, "nodes": 3, "sources": 2,
         "edges": 1}
        for k in (1, 2)
    ]  # fmt: skip


def test_ask_none_serves_the_piece_alone_after_the_authors_prompt():
    agent = (
        Agent.create(provider=mock(reply="ok"), model="m")
        .system("You run the fleet desk.")
        .tool(LOOKUP)
        .tool(BACKUP)
        .ontology(fleet(), ask="none")
        .build()
    )
    agent.run_sync("hi")
    assert served_at(agent, 1).system == f"You run the fleet desk.\n\n{ontology_piece(fleet())}"
    assert assert_law(agent) == 1


def test_an_agent_without_a_map_is_byte_identical():
    replies = [_call("lookup_port"), {"content": "done"}]
    plain = Agent.create(provider=mock(replies=replies), model="m").tool(LOOKUP).tool(BACKUP)
    plain_agent = plain.build()
    plain_agent.run_sync("hi")
    state = plain_agent.snapshot().state
    assert "ontology" not in state and "ontology" not in state["settings"]
    assert not [e for e in _all_events(plain_agent) if e.name.startswith("ontology")]
    armed = desk(replies)
    armed.run_sync("hi")
    assert [c.stage_id for c in armed.snapshot().history()] == [
        c.stage_id for c in plain_agent.snapshot().history()
    ]


def test_the_door_refuses_a_second_map_a_bad_ask_and_an_unknown_tool():
    b = Agent.create(provider=mock(reply="x"), model="m").tool(LOOKUP).tool(BACKUP)
    b.ontology(fleet())
    with pytest.raises(AgentBuildError, match="called twice"):
        b.ontology(fleet())
    with pytest.raises(AgentBuildError, match="ask='maybe'"):
        Agent.create(provider=mock(reply="x"), model="m").ontology(fleet(), ask="maybe")
    with pytest.raises(AgentBuildError, match="define_ontology"):
        Agent.create(provider=mock(reply="x"), model="m").ontology(SPEC)  # type: ignore[arg-type]
    lone = Agent.create(provider=mock(reply="x"), model="m").tool(LOOKUP).ontology(fleet())
    with pytest.raises(AgentBuildError) as caught:
        lone.build()
    said = str(caught.value)
    assert "'fleet'" in said and "'backup'" in said and "'telemetry'" in said
    assert "'vm_backup_status'" in said


def test_a_skills_tool_is_joined_and_a_hidden_skill_never_named():
    seen = desk([{"content": "ok"}], hidden=False)
    seen.run_sync("hi")
    state = thaw(seen.snapshot().state)
    assert state["ontology"]["tools"] == {"vm_backup_status": ["backup-check"]}
    assert "via vm_backup_status [skill: backup-check]" in served_at(seen, 1).system
    assert assert_law(seen) == 1
    hidden = desk([{"content": "ok"}], hidden=True)
    hidden.run_sync("hi")
    system = served_at(hidden, 1).system
    assert "backup-check" not in system and "vm_backup_status" not in system
    assert assert_law(hidden) == 1


def test_replay_from_the_record_alone_commits_what_the_run_did():
    agent = desk([_call("lookup_port", port="fc1/7"), {"content": "Port fc1/7 is up."}])
    agent.run_sync("fc1/7?")
    replayed = replay(agent.snapshot())
    assert [c.writes for c in replayed.history()] == [c.writes for c in agent.snapshot().history()]


def test_a_member_of_a_composition_is_served_its_map_at_its_own_depth():
    desk_agent = desk([_call("lookup_port", port="fc1/7"), {"content": "Not held here."}])
    writer = Agent.create(provider=mock(reply="Written."), model="m").build()
    flow = Sequence.create(name="flow").step("desk", desk_agent).step("write", writer).build()
    assert flow.run_sync("fc1/7?") == "Written."
    assert assert_law(flow) == 3
    assert ontology_piece(fleet()) in (served_at(flow, 2, member="desk").system or "")
    assert served_at(flow, 1, member="write").system is None  # the other member: no map
    assert replay(flow.snapshot()).state["final_answer"] == "Written."  # the record alone


def fixture_agent() -> Agent:
    """The run kept in ``fixtures/recording-ontology-v1.jsonl`` (made by this function): a
    map joined to a skill's tool, two calls, the ask served."""
    return desk(
        [_call("lookup_port", port="fc1/7"), {"content": "The error rate is not held here."}],
        hidden=False,
    )


FIXTURE_MESSAGE = "What is the error rate on fc1/7?"


def test_a_recording_from_this_version_loads_and_replays():
    loaded = load_recording(FIXTURE)
    assert assert_law(loaded) == 2
    state = thaw(loaded.state)
    assert state["ontology"]["hash"] == fleet().hash
    assert state["ontology"]["tools"] == {"vm_backup_status": ["backup-check"]}
    replayed = replay(loaded)  # no agent: the map is declared again from the record
    assert [c.writes for c in replayed.history()] == [c.writes for c in loaded.history()]
    fresh = fixture_agent()
    fresh.run_sync(FIXTURE_MESSAGE)
    assert served_at(fresh, 2).hash == served_at(loaded, 2).hash


if __name__ == "__main__":  # python -m tests.agent.test_ontology: writes the fixture
    made = fixture_agent()
    made.run_sync(FIXTURE_MESSAGE)
    save_recording(made, FIXTURE)
