"""The rest of the findings ledger: the served ledger piece (composed from the record, served
last), ``serve=`` and ``answer_ask=``, conflict and unsettled-by-absence rows, the judge, and
recordings made before and with them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.examples import examples
from tests.law import assert_law
from trackway.agent import (
    Agent,
    AgentBuildError,
    ClassifierError,
    load_recording,
    mock,
    mock_classifier,
    replay,
    save_recording,
    served_at,
)
from trackway.engine import thaw
from trackway.tools import ToolContext, absent, define_tool, deny

FIXTURES = Path(__file__).parent / "fixtures"
LEGACY = FIXTURES / "recording-findings-legacy.jsonl"
FIXTURE = FIXTURES / "recording-findings-v1.jsonl"


def _lookup(args: dict[str, Any], ctx: ToolContext) -> str:
    return f"row for {args['q']}"


def _hbas(args: dict[str, Any], ctx: ToolContext) -> Any:
    return absent(
        what=f"HBAs of {args['q']}",
        checked=["the host inventory"],
        not_checked=[{"what": "whether it is a hypervisor host", "why": "not in scope"}],
        cannot_cover=[{"what": "hosts outside the inventory", "why": "never collected"}],
        try_instead="Look it up in cluster_inventory.",
    )


_SCHEMA = {
    "type": "object",
    "properties": {"q": {"type": "string"}},
    "required": ["q"],
    "additionalProperties": False,
}
LOOKUP = define_tool(name="lookup", description="Look up.", input_schema=_SCHEMA, execute=_lookup)
HBAS = define_tool(name="hbas", description="Host HBAs.", input_schema=_SCHEMA, execute=_hbas)


def call(cid: str, q: str, findings: Any = None, name: str = "lookup") -> dict[str, Any]:
    args: dict[str, Any] = {"q": q}
    if findings is not None:
        args["_findings"] = findings
    return {"tool_calls": [{"id": cid, "name": name, "args": args}]}


SCRIPT = [
    call("c1", "a", {"basis": "exploratory", "proposition": "a holds the port"}),
    call("c2", "b", {"basis": "direct", "previous": [{"id": "c1", "standing": "ruled-out"}]}),
    call(
        "c3",
        "c",
        {
            "basis": "exploratory",
            "proposition": "c names the port",
            "previous": [
                {
                    "id": "c2",
                    "standing": "fact",
                    "note": "b has it",
                    "assertions": [{"about": "port", "value": "fc1/7"}],
                }
            ],
        },
    ),
    call("c4", "d", {"previous": [{"id": "c3", "standing": "open", "note": "maybe"}]}),
    'fc1/7.\n{"_findings": {"previous": [{"id": "c4", "standing": "noise"}]}}',
]


def armed(replies: list[Any], *tools: Any, **options: Any) -> Agent:
    builder = Agent.create(provider=mock(replies=replies), model="m")
    for tool in tools or (LOOKUP,):
        builder.tool(tool)
    return builder.findings(**options).build()


def test_the_piece_is_served_last_once_a_standing_exists_and_quotes_the_declarations() -> None:
    builder = Agent.create(provider=mock(replies=list(SCRIPT)), model="m").system("Be brief.")
    agent = builder.tool(LOOKUP).findings().build()
    assert agent.run_sync("which port?") == "fc1/7."
    assert assert_law(agent) == 5
    snap = agent.snapshot()
    assert served_at(snap, 1).system == "Be brief."
    assert served_at(snap, 2).system == "Be brief."  # no standing yet: nothing is served
    third = served_at(snap, 3).system
    assert third is not None and third.startswith("Be brief.\n\nFindings ledger")
    assert (
        "limitations (declared by you):\n- ruled out (lookup, tool:c1) — tested: a holds" in third
    )
    assert "undeclared (no standing declared; not open): tool:c2 (lookup)" in third
    fifth = served_at(snap, 5).system
    assert fifth is not None
    assert "facts (declared by you):\n- fact (lookup, tool:c2): b has it [port = fc1/7]" in fifth
    assert "next_steps (declared by you):\n- open (lookup, tool:c3): maybe — tested: c names" in (
        fifth
    )
    assert "tool:c4 (lookup)" in fifth  # never named yet: undeclared, not open
    assert "evidence_refs (declared" not in fifth and "noise:" not in fifth
    assert thaw(snap.state["settings"])["findings"] == {"piece": True}
    again = replay(snap)
    assert [c.writes for c in again.history()] == [c.writes for c in snap.history()]


def test_ledger_only_tickets_facts_and_quote_facts_closes_the_piece() -> None:
    agent = armed(list(SCRIPT), serve="ledger-only", answer_ask="quote-facts")
    agent.run_sync("which port?")
    assert assert_law(agent) == 5
    snap = agent.snapshot()
    assert thaw(snap.state["settings"])["findings"] == {
        "piece": True,
        "serve": "ledger-only",
        "answer_ask": "quote-facts",
    }
    served = served_at(snap, 4)
    assert served.system is not None and served.system.endswith("Never invent a value.")
    fact = next(m for m in served.messages if m.role == "tool" and m.tool_call_id == "c2")
    assert '"collapsed":true' in str(fact.content) and '"standing":"fact"' in str(fact.content)
    tools = served.tools
    assert tools is not None
    ids = tools[0].input_schema["properties"]["_findings"]["properties"]["previous"]["items"]
    assert "c2" in ids["properties"]["id"]["enum"]  # a ticketed fact can still be revised
    again = replay(snap)
    assert [c.writes for c in again.history()] == [c.writes for c in snap.history()]


def test_defaults_write_only_the_piece_marker() -> None:
    agent = armed(list(SCRIPT), serve="ledger-and-facts", answer_ask="none")
    agent.run_sync("which port?")
    assert thaw(agent.snapshot().state["settings"])["findings"] == {"piece": True}
    fact = next(
        m for m in served_at(agent, 4).messages if m.role == "tool" and m.tool_call_id == "c2"
    )
    assert fact.content == "row for b"  # facts stay verbatim by default


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"serve": "facts"}, r"findings\(serve='facts'\): use one of 'ledger-and-facts'"),
        ({"answer_ask": True}, r"findings\(answer_ask=True\): use one of 'none'"),
        ({"judge": object()}, r"findings\(judge=object\): a judge is a Classifier"),
    ],
)
def test_bad_options_are_refused_at_build_naming_the_fix(
    options: dict[str, Any], match: str
) -> None:
    with pytest.raises(AgentBuildError, match=match):
        Agent.create(provider=mock(reply="x"), model="m").tool(LOOKUP).findings(**options)


def test_two_facts_that_disagree_file_a_conflict_by_witness_identity() -> None:
    replies = [
        call("c1", "a"),
        call("c2", "b"),
        call(
            "c3",
            "c",
            {
                "previous": [
                    {"id": "c1", "standing": "fact", "assertions": [{"about": "Port", "value": 7}]},
                    {
                        "id": "c2",
                        "standing": "fact",
                        "assertions": [
                            {"about": "zone", "value": "a"},
                            {"about": " port ", "value": "9"},
                        ],
                    },
                ]
            },
        ),
        "Port 7 or 9.",
    ]
    agent = armed(replies)
    events: list[Any] = []
    agent.on("findings.conflict", lambda e: events.append(e.payload))
    agent.run_sync("which port?")
    assert assert_law(agent) == 4
    conflicts = [r for r in agent.findings() if r["kind"] == "conflict"]
    assert conflicts == [
        {
            "kind": "conflict",
            "witnesses": [{"id": "c1", "assertion": 0}, {"id": "c2", "assertion": 1}],
            "declared_by": "c3",
            "iteration": 3,
        }
    ]
    assert events == [{"ids": ["c1", "c2"], "declared_by": "c3"}]
    piece = served_at(agent, 4).system
    assert piece is not None and "conflicts (read off the record):\n- tool:c1 and tool:c2" in piece


def test_same_values_and_set_aside_facts_are_no_conflict() -> None:
    same = [{"about": "port", "value": "FC1/7"}]
    replies = [
        call("c1", "a"),
        call("c2", "b"),
        call(
            "c3",
            "c",
            {
                "previous": [
                    {"id": "c1", "standing": "fact", "assertions": [{"about": "port", "value": 3}]},
                    {"id": "c2", "standing": "fact", "assertions": same},
                ]
            },
        ),
        "done",
    ]
    replies[2]["tool_calls"][0]["args"]["_findings"]["previous"].insert(
        1, {"id": "c1", "standing": "noise"}
    )
    agent = armed(replies)
    agent.run_sync("which port?")
    assert [r for r in agent.findings() if r["kind"] == "conflict"] == []


def test_a_ruling_out_on_an_absence_files_what_it_never_checked() -> None:
    replies = [
        call("c1", "nas-06", name="hbas"),
        call("c2", "nas-06", {"previous": [{"id": "c1", "standing": "ruled-out"}]}),
        "It is a storage cluster.",
    ]
    agent = armed(replies, HBAS, LOOKUP)
    agent.run_sync("is nas-06 slow?")
    assert assert_law(agent) == 3
    rows = agent.findings()
    at = next(i for i, r in enumerate(rows) if r["kind"] == "standing")
    assert rows[at + 1] == {
        "kind": "unsettled-by-absence",
        "id": "c1",
        "not_checked": [{"what": "whether it is a hypervisor host", "why": "not in scope"}],
        "cannot_cover": [{"what": "hosts outside the inventory", "why": "never collected"}],
        "try_instead": "Look it up in cluster_inventory.",
        "iteration": 2,
    }
    piece = served_at(agent, 3).system
    assert piece is not None
    assert (
        "unsettled by absence (read off the record):\n"
        "- ruled out (hbas, tool:c1) on an absence\n"
        "  tool:c1 not_checked: whether it is a hypervisor host (not in scope)\n"
        "  tool:c1 cannot_cover: hosts outside the inventory (never collected)\n"
        "  tool:c1 try_instead: Look it up in cluster_inventory."
    ) in piece


def test_noise_on_an_absence_and_a_ruling_out_on_a_plain_result_file_nothing() -> None:
    replies = [
        call("c1", "x", name="hbas"),
        call("c2", "y", {"previous": [{"id": "c1", "standing": "noise"}]}),
        call("c3", "z", {"previous": [{"id": "c2", "standing": "ruled-out"}]}),
        "none",
    ]
    agent = armed(replies, HBAS, LOOKUP)
    agent.run_sync("?")
    assert not [r for r in agent.findings() if r["kind"] == "unsettled-by-absence"]


JUDGE_SCRIPT: list[Any] = [
    {"ranked": [["noise", 0.8], ["open", 0.2]], "chosen": "noise", "usage": {"input_tokens": 9}},
    ClassifierError("rate limited", status=429, retryable=True),
    {"ranked": [["fact", 0.9]], "chosen": "fact", "model": "judge-1"},
    {"ranked": [["sideways", 0.9]], "chosen": "sideways"},
]


def test_the_judge_files_a_row_per_result_beside_the_models_own() -> None:
    judge = mock_classifier(list(JUDGE_SCRIPT), name="j")
    agent = armed(list(SCRIPT), judge=judge)
    events: list[Any] = []
    agent.on("findings.*", lambda e: events.append((e.name, e.payload)))
    assert agent.run_sync("which port?") == "fc1/7."
    assert assert_law(agent) == 5
    assert [r.question_id for r in judge.calls] == ["trackway.findings-judge"] * 4
    assert judge.calls[0].state["proposition"] == "a holds the port"
    assert judge.calls[1].state["question"] == "which port?"
    rows = [r for r in agent.findings() if r["kind"].startswith("judgment")]
    assert [(r["kind"], r["id"], r.get("standing"), r.get("status")) for r in rows] == [
        ("judgment", "c1", "noise", None),
        ("judgment-error", "c2", None, 429),
        ("judgment", "c3", "fact", None),
        ("judgment-error", "c4", None, None),
    ]
    assert rows[0]["against"] == "proposition" and rows[0]["judge"] == "j"
    assert rows[1]["message"] == "rate limited"
    assert rows[2]["model"] == "judge-1"
    judged = [p for n, p in events if n == "findings.judged"]
    assert judged[0] == {
        "id": "c1",
        "standing": "noise",
        "confidence": 0.8,
        "latency_ms": 0.0,
        "tokens": 9,
    }
    assert [p for n, p in events if n == "findings.judge_failed"] == [
        {"id": "c2", "status": 429},
        {"id": "c4", "status": None},
    ]
    standings = {p["id"]: p for n, p in events if n == "findings.standing"}
    assert standings["c1"]["agrees"] is False  # the model ruled out what the judge called noise
    assert standings["c3"]["agrees"] is False
    assert "agrees" not in standings["c2"]  # no judgment exists for it
    assert thaw(agent.snapshot().state["settings"])["findings"] == {"piece": True, "judge": "j"}
    again = replay(agent.snapshot())  # reads the rows: the judge is not called again
    assert len(judge.calls) == 4
    assert [c.writes for c in again.history()] == [c.writes for c in agent.snapshot().history()]


def test_a_denied_call_is_not_judged() -> None:
    judge = mock_classifier([{"ranked": [["fact", 1.0]], "chosen": "fact"}])
    agent = (
        Agent.create(provider=mock(replies=[call("c1", "a"), call("c2", "b"), "ok"]), model="m")
        .tool(LOOKUP)
        .gate(lambda c, ctx: deny("no") if c["args"]["q"] == "b" else "allow")
        .findings(judge=judge)
        .build()
    )
    agent.run_sync("?")
    assert [r["id"] for r in agent.findings() if r["kind"] == "judgment"] == ["c1"]
    assert len(judge.calls) == 1


def fixture_agent() -> Agent:
    """The run kept in ``fixtures/recording-findings-v1.jsonl`` (made by this function):
    a ledger piece under both dials, an absence ruled out, a conflict and a judge."""
    replies = [
        call("c1", "nas", {"basis": "exploratory", "proposition": "nas has HBAs"}, name="hbas"),
        *SCRIPT[1:3],
        call(
            "c4",
            "d",
            {
                "previous": [
                    {"id": "c1", "standing": "ruled-out"},
                    {"id": "c3", "standing": "fact", "assertions": [{"about": "port", "value": 9}]},
                ]
            },
        ),
        SCRIPT[4],
    ]
    judge = mock_classifier(list(JUDGE_SCRIPT), name="fixture-judge")
    return armed(replies, HBAS, LOOKUP, serve="ledger-only", answer_ask="quote-facts", judge=judge)


def test_a_recording_from_this_version_loads_and_replays() -> None:
    loaded = load_recording(FIXTURE)
    assert assert_law(loaded) == 5
    state = thaw(loaded.state)
    assert state["settings"]["findings"]["judge"] == "fixture-judge"
    kinds = [r["kind"] for r in state["findings"]]
    for kind in ("judgment", "judgment-error", "unsettled-by-absence", "conflict"):
        assert kind in kinds, kind
    replayed = replay(loaded)  # no judge: the rows are read
    assert [c.writes for c in replayed.history()] == [c.writes for c in loaded.history()]
    fresh = fixture_agent()
    fresh.run_sync("which port?")
    assert fresh.findings() == state["findings"]


def test_a_recording_made_before_the_piece_replays_without_it() -> None:
    loaded = load_recording(LEGACY)
    assert thaw(loaded.state)["settings"]["findings"] is True
    assert assert_law(loaded) >= 3
    assert all("Findings ledger" not in (served_at(loaded, k).system or "") for k in (1, 2, 3))
    replayed = replay(loaded)
    assert [c.writes for c in replayed.history()] == [c.writes for c in loaded.history()]


def legacy_agent() -> Agent:
    """The run kept in ``fixtures/recording-findings-legacy.jsonl``, made with this function
    by the version before the ledger piece (its ``.findings()`` took no options)."""
    return (
        Agent.create(provider=mock(replies=list(SCRIPT)), model="m").tool(LOOKUP).findings().build()
    )


if __name__ == "__main__":  # python tests/agent/test_findings_ledger.py [legacy]: the fixture
    if sys.argv[1:] == ["legacy"]:
        made = legacy_agent()
        made.run_sync("which port?")
        save_recording(made, LEGACY)
    else:
        made = fixture_agent()
        made.run_sync("which port?")
        save_recording(made, FIXTURE)


def _probe(args: dict[str, Any], ctx: ToolContext) -> str:
    return {"a": "port fc1/7 is down", "b": "port fc2/3 is up"}.get(args["q"], "nothing")


PROBE = define_tool(name="probe", description="Probe.", input_schema=_SCHEMA, execute=_probe)


def towers(replies: list[Any], evidence: bool = True) -> Agent:
    builder = Agent.create(provider=mock(replies=replies), model="m").tool(PROBE).findings()
    if evidence:
        builder.names_and_numbers_from_evidence(posture="assist")
    return builder.build()


TOWER_SCRIPT = [
    call("c1", "a", name="probe"),
    call("c2", "b", name="probe"),
    call(
        "c3",
        "fc1/7",
        {"previous": [{"id": "c1", "standing": "ruled-out"}, {"id": "c2", "standing": "fact"}]},
        name="probe",
    ),
    'Port fc1/7 is down; fc2/3 is up; rack R9 per your note.\n{"_findings": {"previous": '
    '[{"id": "c3", "standing": "noise"}]}}',
]


def test_a_value_resting_only_on_set_aside_results_is_contingent_at_both_moments() -> None:
    agent = towers(list(TOWER_SCRIPT))
    events: list[Any] = []
    agent.on("findings.contingent", lambda e: events.append(e.payload))
    agent.run_sync("is a port down near rack R9?")
    assert assert_law(agent) == 4
    rows = [r for r in agent.findings() if r["kind"] == "contingent"]
    assert rows == [
        {
            "kind": "contingent",
            "declared_on": "c3",
            "value": "fc1/7",
            "carriers": [{"id": "c1", "standing": "ruled-out"}],
            "iteration": 3,
        },
        {
            "kind": "contingent",
            "declared_on": "answer",
            "value": "fc1/7",
            "carriers": [{"id": "c1", "standing": "ruled-out"}],
            "iteration": 4,
        },
    ]  # fc2/3 stands on a fact; R9 is the person's own
    assert events[0] == {
        "moment": "dispatch",
        "declared_on": "c3",
        "carriers": 1,
        "standings": ["ruled-out"],
        "value_chars": 5,
    }
    tools = served_at(agent, 4).tools
    assert tools is not None
    described = tools[0].input_schema["properties"]["_findings"]["description"]
    assert "recorded as contingent" in described
    piece = served_at(agent, 4).system
    assert piece is not None
    assert "contingent (read off the record):\n- tool:c3 used fc1/7 from tool:c1 (ruled-out)" in (
        piece
    )
    again = replay(agent.snapshot())
    assert [c.writes for c in again.history()] == [c.writes for c in agent.snapshot().history()]


def test_one_door_alone_files_no_tower() -> None:
    agent = towers(list(TOWER_SCRIPT), evidence=False)
    agent.run_sync("is a port down?")
    assert not [r for r in agent.findings() if r["kind"] == "contingent"]
    tools = served_at(agent, 2).tools
    assert tools is not None
    assert "contingent" not in tools[0].input_schema["properties"]["_findings"]["description"]


def _folded(value: Any) -> str:
    return " ".join(str(value).split()).casefold()


def _expected_conflicts(declarations: list[list[dict[str, Any]]]) -> set[frozenset[Any]]:
    """Conflicts by brute force: each fact, when filed, against every other current fact (a
    standing on a result no longer offered is no standing)."""
    current: dict[str, dict[str, Any]] = {}
    found: set[frozenset[Any]] = set()
    tickets: set[str] = set()
    for previous in declarations:
        offered = {"c0", "c1", "c2", "c3"} - tickets  # a noise result leaves the offer
        for item in previous:
            if item["id"] not in offered:  # filed as unknown_id: it stands for nothing
                continue
            if item["standing"] == "noise":
                tickets.add(item["id"])
            else:
                tickets.discard(item["id"])
            current[item["id"]] = item
            if item["standing"] != "fact":
                continue
            for other, theirs in current.items():
                if other == item["id"] or theirs["standing"] != "fact":
                    continue
                for i, a in enumerate(item.get("assertions", [])):
                    for j, b in enumerate(theirs.get("assertions", [])):
                        same = _folded(a["about"]) == _folded(b["about"])
                        if same and _folded(a["value"]) != _folded(b["value"]):
                            found.add(frozenset({(item["id"], i), (other, j)}))
    return found


assertion = st.fixed_dictionaries(
    {"about": st.sampled_from(["port", " Port", "zone"]), "value": st.sampled_from([1, "1", "2"])}
)
declaration = st.lists(
    st.fixed_dictionaries(
        {
            "id": st.sampled_from(["c0", "c1", "c2", "c3"]),
            "standing": st.sampled_from(["fact", "fact", "open", "noise"]),
            "assertions": st.lists(assertion, max_size=2),
        }
    ),
    max_size=3,
)


@settings(max_examples=examples(40), deadline=None)
@given(declarations=st.lists(declaration, min_size=1, max_size=4))
def test_conflict_rows_are_every_disagreeing_pair_once(declarations: Any) -> None:
    """Whatever the order of revisions, the conflict rows name exactly the pairs a brute force
    finds, each once; the law holds and a replay files the same ledger."""
    replies: list[Any] = [call("c0", "a"), call("c1", "b"), call("c2", "c"), call("c3", "d")]
    for n, previous in enumerate(declarations):
        replies.append(call(f"d{n}", "e", {"previous": previous}))
    agent = armed([*replies, "done"])
    agent.run_sync("?")
    rows = [r for r in agent.findings() if r["kind"] == "conflict"]
    got = [frozenset((w["id"], w["assertion"]) for w in r["witnesses"]) for r in rows]
    assert len(got) == len(set(got))
    assert set(got) == _expected_conflicts(declarations)
    assert_law(agent)
    again = replay(agent.snapshot()).state
    assert again.get("findings") == agent.snapshot().state.get("findings")


def test_an_absence_the_model_read_cut_files_nothing() -> None:
    replies = [
        call("c1", "nas-06", name="hbas"),
        call("c2", "nas-06", {"previous": [{"id": "c1", "standing": "ruled-out"}]}),
        "done",
    ]
    provider = mock(replies=replies)
    agent = (
        Agent.create(provider=provider, model="m", max_tool_result_chars=40)
        .tool(HBAS)
        .tool(LOOKUP)
        .findings()
        .build()
    )
    agent.run_sync("?")
    results = agent.snapshot().state["tool_results"]
    assert results[0]["status"] == "absent" and results[0]["truncated"]
    assert not [r for r in agent.findings() if r["kind"] == "unsettled-by-absence"]
    assert_law(agent)


message = st.one_of(
    st.just({"role": "user", "content": "q 7"}),
    st.just({"role": "user", "content": "ask again", "origin": "library"}),
    st.just({"role": "assistant", "content": "calling"}),
    st.builds(
        lambda text, status: {"role": "tool", "content": text, "status": status},
        st.sampled_from(["port fc1/7", "row 42 of 9", '{"n": 3, "id": "A-1"}', "x" * 90]),
        st.sampled_from(["success", "success", "failure", "denied", "absent"]),
    ),
)


@settings(max_examples=examples(80), deadline=None)
@given(messages=st.lists(message, max_size=14), ceiling=st.sampled_from([None, 30, 60]))
def test_the_turn_corpus_built_as_results_land_is_the_gates_corpus(
    messages: list[dict[str, Any]], ceiling: int | None
) -> None:
    """The contingent check's corpus, taken in message by message, indexes exactly what the
    gate's corpus of the same history indexes (values, carriers, facts, the ceiling's cut)."""
    from types import SimpleNamespace

    from trackway.agent.grounding._contingent import _TurnCorpus
    from trackway.agent.grounding._corpus import EvidenceCorpus

    cfg = SimpleNamespace(evidence=SimpleNamespace(max_corpus_tokens=ceiling), skills=None)
    history: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    memo = _TurnCorpus()
    for n, drawn in enumerate(messages):
        item = dict(drawn)
        status = item.pop("status", None)
        if item["role"] == "tool":
            item |= {"tool_call_id": f"c{n}", "name": "probe"}
            rows.append({"id": f"c{n}", "name": "probe", "status": status})
        history.append(item)
        got = memo.read(cfg, {"history": history, "tool_results": rows})  # type: ignore[arg-type]
        want = EvidenceCorpus.of(history, rows, ceiling)
        assert (got._index, got._facts, got.truncated) == (want._index, want._facts, want.truncated)
        assert (got.results, got.chars, got._looked) == (want.results, want.chars, want._looked)
