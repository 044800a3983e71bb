"""The evidence gate (``.names_and_numbers_from_evidence``): every name and number of an
answer looked up in the current turn's tool results, under each posture; what grounds a value
and what does not (library notes, absences, earlier turns, a cut corpus); the verdict on the
record, read back, redacted, rebuilt by ``served_at`` and replayed without the agent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from pydantic import BaseModel

from tests.backends import run_async
from tests.law import assert_law
from trackway.agent import (
    Agent,
    AgentBuildError,
    UnsupportedValuesError,
    conversation_redaction,
    define_skill,
    load_recording,
    mock,
    replay,
    save_recording,
    served_at,
)
from trackway.agent.grounding._corpus import EvidenceCorpus
from trackway.agent.grounding._values import answer_values
from trackway.engine import SqliteStore, thaw
from trackway.recorders import narrative
from trackway.testing import block_network
from trackway.tools import absent, define_tool

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}
FIGURES = {"company": "Acme Holdings", "quarter": "Q3 2024", "revenue": 4200000, "margin": 12.5}
QUOTE = define_tool(
    name="quote", description="Quarter figures.", input_schema=SCHEMA,
    execute=lambda args, ctx: FIGURES,
)  # fmt: skip
GOOD = "Acme Holdings made 4,200,000 in Q3 2024 at a 12.5% margin."
BAD = "Acme Holdings made 4,200,000 in Q3 2024, against 3.9M for Globex."
STILL_BAD = "Acme Holdings made 4,200,000; Globex earned 3.9M."


def call(*calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"id": i, "name": n, "args": a} for i, n, a in calls]}


def agent_with(replies: list[Any], posture: str | None = "assist", *tools: Any, **create: Any):
    provider = mock(replies=replies)
    builder = Agent.create(provider=provider, model="m", **create)
    for t in tools or (QUOTE,):
        builder.tool(t)
    if posture is not None:
        builder.names_and_numbers_from_evidence(posture=posture)
    return builder.build(), provider


def stages(agent: Agent) -> list[str]:
    return [c.stage_id for c in agent.snapshot().history()]


def checked(agent: Agent) -> list[dict[str, Any]]:
    return [
        thaw(e.payload)
        for c in agent.snapshot().history()
        for e in c.events
        if e.name == "agent.evidence_checked"
    ]


def test_assist_flags_the_values_and_ships_the_answer():
    agent, _ = agent_with([call(("c1", "quote", {"q": "Q3"})), BAD])
    assert agent.run_sync("How did Acme do?") == BAD
    assert agent.unsupported_values() == {
        "posture": "assist",
        "candidates": 6,
        "refused": False,
        "revised": False,
        "values": [
            {"value": "3.9m", "kind": "number", "spellings": ["3.9M"]},
            {"value": "globex", "kind": "name", "spellings": ["Globex"]},
        ],
        "iteration": 2,
        "corpus_truncated": False,
    }
    (event,) = checked(agent)  # counts only: never a value
    assert event == {
        "iteration": 2, "k": 2, "posture": "assist", "candidates": 6, "unsupported": 2,
        "by_absence": 0, "corpus_results": 1, "corpus_tokens": 20, "corpus_truncated": False,
        "action": "flag",
    }  # fmt: skip
    assert "evidence-recheck" not in {n.id for n in agent.spec().nodes.values()}
    assert "evidence_revision_spent" not in agent.snapshot().state
    assert agent.snapshot().state["settings"]["evidence"] == {
        "posture": "assist",
        "max_corpus_tokens": 100_000,
    }


def test_guard_asks_once_then_ships_with_a_flag_and_served_at_rebuilds_the_ask():
    agent, provider = agent_with([call(("c1", "quote", {})), BAD, STILL_BAD], "guard")
    assert agent.run_sync("How did Acme do?") == STILL_BAD
    assert stages(agent)[-5:] == ["route", "evidence-recheck", "call-llm", "route", "final"]
    verdict = agent.unsupported_values()
    assert verdict["revised"] is True and verdict["refused"] is False
    assert verdict["values"] == [{"value": "3.9m", "kind": "number", "spellings": ["3.9M"]}]
    asked = served_at(agent, 3).messages
    assert asked[-2].role == "assistant" and asked[-2].content == BAD
    assert asked[-1].role == "user" and '"3.9M", "Globex"' in asked[-1].content
    assert provider.requests[2].hash == served_at(agent, 3).hash
    history = thaw(agent.snapshot().state["history"])
    assert history[-1]["origin"] == "library"  # the library's words, never the person's
    assert [e["action"] for e in checked(agent)] == ["revise", "flag"]
    assert assert_law(agent) == 3


def test_a_revision_that_grounds_the_answer_leaves_no_verdict():
    agent, _ = agent_with([call(("c1", "quote", {})), BAD, GOOD], "guard")
    assert agent.run_sync("How did Acme do?") == GOOD
    assert agent.unsupported_values() is None
    state = agent.snapshot().state
    assert "unsupported_values" not in state and state["evidence_revision_spent"] is True
    first = agent.snapshot().state_at(stages(agent).index("evidence-recheck"))  # its route
    assert first["unsupported_values"]["values"][0]["value"] == "3.9m"  # the log keeps it


def test_rails_withholds_the_answer_and_run_raises_with_the_verdict():
    agent, _ = agent_with([call(("c1", "quote", {})), BAD, STILL_BAD], "rails")
    with pytest.raises(UnsupportedValuesError) as info:
        agent.run_sync("How did Acme do?")
    error = info.value
    assert error.verdict == agent.unsupported_values() and error.verdict["refused"] is True
    assert error.run_id == agent.snapshot().run_id
    assert "3.9" not in str(error) and "1 value(s)" in str(error)  # counted, never quoted
    state = agent.snapshot().state
    assert "final_answer" not in state and state["response"]["content"] == STILL_BAD
    assert stages(agent)[-1] == "route" and agent.snapshot().status == "broken"
    assert [e["action"] for e in checked(agent)] == ["revise", "refuse"]
    assert agent.checkpoint().history[-1]["origin"] == "library"  # no withheld answer in it


@pytest.mark.parametrize("entry", ["run", "run_result_sync", "run_typed_sync"])
def test_rails_raises_from_every_way_of_running(entry):
    class Figures(BaseModel):
        company: str
        revenue: int

    bad = '{"company": "Acme Holdings", "revenue": 4300000}'
    builder = Agent.create(provider=mock(replies=[call(("c1", "quote", {})), bad, bad]), model="m")
    builder.tool(QUOTE).names_and_numbers_from_evidence(posture="rails")
    if entry == "run_typed_sync":
        builder.output_schema(Figures)
    agent = builder.build()
    with pytest.raises(UnsupportedValuesError) as info:
        if entry == "run":
            run_async(agent.run, "How did Acme do?")
        else:
            getattr(agent, entry)("How did Acme do?")
    assert info.value.verdict["values"] == [{"value": "4300000", "kind": "number"}]
    assert info.value.verdict["candidates"] == 2  # a typed answer's keys are not judged


def test_a_turn_that_may_make_no_further_call_is_not_asked_to_revise():
    cut = {**call(("c1", "quote", {})), "content": "Globex 9.9"}
    agent, provider = agent_with([cut], "rails", max_iterations=1, wrap_up_at_max_iterations=False)
    with pytest.raises(UnsupportedValuesError):
        agent.run_sync("go")
    assert len(provider.requests) == 1 and agent.unsupported_values()["revised"] is False


def test_the_ceiling_cuts_the_corpus_and_the_gate_only_flags():
    big = define_tool(
        name="ledger", description="The ledger.", input_schema=SCHEMA,
        execute=lambda args, ctx: "row " * 200 + "Globex 3.9M",
    )  # fmt: skip
    replies = [call(("c1", "quote", {}), ("c2", "ledger", {})), BAD]
    provider = mock(replies=list(replies))
    builder = Agent.create(provider=provider, model="m").tool(QUOTE).tool(big)
    agent = builder.names_and_numbers_from_evidence(posture="rails", max_corpus_tokens=60).build()
    assert agent.run_sync("go") == BAD  # a partial corpus never refuses nor asks
    verdict = agent.unsupported_values()
    assert verdict["corpus_truncated"] is True and verdict["downgraded_from"] == "rails"
    assert verdict["refused"] is False and len(verdict["values"]) == 2
    assert "evidence-recheck" not in stages(agent)
    (event,) = checked(agent)
    assert event["corpus_results"] == 1 and event["downgraded_from"] == "rails"
    assert event["action"] == "flag"
    grounded_without, _ = agent_with(list(replies), "rails", QUOTE, big)
    assert grounded_without.run_sync("go") == BAD and grounded_without.unsupported_values() is None


def test_a_value_found_only_in_an_absence_is_grounded_by_it_and_the_verdict_says_so():
    port = define_tool(
        name="port", description="Port state.", input_schema=SCHEMA,
        execute=lambda args, ctx: absent(
            what=f"port {args['q']}", checked=["switch sw-3"], try_instead="look on sw-4"
        ),
    )  # fmt: skip
    answer = "No port fc1/9 on sw-3; try sw-4. Zed-7 said nothing_found and retry_returns_the_same."
    agent, _ = agent_with([call(("c1", "port", {"q": "fc1/9"})), answer], "assist", port)
    agent.run_sync("Is fc1/9 down?")
    verdict = agent.unsupported_values()
    assert [v["value"] for v in verdict["values"]] == [
        "zed-7", "nothing_found", "retry_returns_the_same",  # the library's words, not the tool's
    ]  # fmt: skip
    assert verdict["by_absence"] == [
        {"value": "fc1/9", "kind": "number", "carriers": ["c1"], "looked_for_only": True},
        {"value": "sw-3", "kind": "number", "carriers": ["c1"]},
        {"value": "sw-4", "kind": "number", "carriers": ["c1"]},
    ]


def test_what_the_skills_doors_return_is_the_apps_words_not_evidence():
    skill = define_skill(id="refunds", title="Refunds", body="Escalate to TEAM-7.", tools=[QUOTE])
    replies = [call(("c1", "read_skill", {"id": "refunds"}), ("c2", "quote", {})), GOOD + " TEAM-7"]
    provider = mock(replies=replies)
    builder = Agent.create(provider=provider, model="m").skills([skill])
    agent = builder.names_and_numbers_from_evidence().build()
    agent.run_sync("go")
    rows = thaw(agent.snapshot().state["tool_results"])
    assert [r["status"] for r in rows] == ["success", "success"]
    assert agent.unsupported_values()["values"] == [
        {"value": "team-7", "kind": "number", "spellings": ["TEAM-7"]}
    ]


def test_a_value_keeps_eight_carriers_then_is_marked_truncated():
    replies = [call(*[(f"c{i}", "quote", {"q": str(i)}) for i in range(10)]), GOOD]
    agent, _ = agent_with(replies, "assist")
    agent.run_sync("go")
    state = agent.snapshot().state
    corpus = EvidenceCorpus.of(thaw(state["history"]), thaw(state["tool_results"]))
    (holdings, *_) = answer_values(GOOD)
    found = corpus.find(holdings)
    assert found.carriers == tuple(f"c{i}" for i in range(8)) and found.truncated is True


def test_notes_the_library_appended_ground_nothing():
    logs = define_tool(
        name="search_logs", description="Search logs.",
        input_schema={"type": "object", "properties": {"q": {"type": "string"},
                      "window": {"type": "string", "enum": ["1h", "2h"]}},
                      "required": ["q", "window"]},
        execute=lambda args, ctx: "3 errors found",
        ask_or_assume={"window": {"assume": "2h"}},
    )  # fmt: skip
    answer = "Found 3 errors over 2h with search_logs, of 14 characters."
    replies = [call(("c1", "search_logs", {"q": "x"})), call(("c2", "search_logs", {"q": "x"}))]
    agent, _ = agent_with([*replies, answer], "assist", logs, max_tool_result_chars=5)
    agent.run_sync("errors?")
    rows = thaw(agent.snapshot().state["tool_results"])
    assert [r["tool_chars"] for r in rows] == [5, 5]  # the cap's line, the note, the nudge
    history = thaw(agent.snapshot().state["history"])
    assert "2h" in history[-1]["content"] and "search_logs" in history[-1]["content"]
    flagged = [v["value"] for v in agent.unsupported_values()["values"]]
    assert flagged == ["2h", "search_logs", "14"]  # "3" is in the tool's own text


def test_an_earlier_turn_of_the_conversation_is_not_evidence():
    agent, _ = agent_with([call(("c1", "quote", {})), GOOD, "Still 4,200,000 for Acme."])
    agent.run_sync("How did Acme do?")
    assert agent.unsupported_values() is None
    agent.follow_up_sync("And now?")
    assert [v["value"] for v in agent.unsupported_values()["values"]] == ["4200000", "acme"]


def test_without_the_gate_nothing_is_mounted_written_or_sent_differently():
    plain, plain_provider = agent_with([call(("c1", "quote", {})), GOOD], None)
    gated, gated_provider = agent_with([call(("c1", "quote", {})), GOOD], "guard")
    plain.run_sync("go")
    gated.run_sync("go")
    state = plain.snapshot().state
    assert "evidence" not in state["settings"] and "unsupported_values" not in state
    assert set(plain.spec().nodes) == set(gated.spec().nodes) - {"evidence-recheck"}
    assert checked(plain) == [] and len(checked(gated)) == 1
    assert [r.canonical_json() for r in plain_provider.requests] == [
        r.canonical_json() for r in gated_provider.requests
    ]
    for a, b in zip(plain.snapshot().history(), gated.snapshot().history(), strict=True):
        assert [w[2] for w in a.writes if w[1] != "settings"] == [
            w[2] for w in b.writes if w[1] != "settings"
        ]


@pytest.mark.parametrize("posture", ["assist", "guard", "rails"])
def test_each_posture_replays_from_the_recording_alone(posture, tmp_path):
    agent, _ = agent_with([call(("c1", "quote", {})), BAD, STILL_BAD], posture)
    try:
        agent.run_sync("How did Acme do?")
    except UnsupportedValuesError:
        assert posture == "rails"
    path = save_recording(agent, tmp_path / "run.jsonl")
    loaded = load_recording(path)
    with block_network(allow_loopback=False):
        replayed = replay(loaded)  # no agent, no model, no network
        assert replay(loaded, agent).history()[-1].stage_path == loaded.history()[-1].stage_path
    assert [c.stage_path for c in replayed.history()] == [c.stage_path for c in loaded.history()]
    assert thaw(replayed.state)["unsupported_values"] == thaw(loaded.state)["unsupported_values"]
    assert_law(loaded)


def test_the_verdict_keeps_no_value_a_policy_or_a_tool_hides(tmp_path):
    secret = define_tool(
        name="vault", description="A vault.", input_schema=SCHEMA,
        execute=lambda args, ctx: ctx.redact("Zed-Vault-77") and "sealed",
    )  # fmt: skip
    answer = "The vault holds Zed-Vault-77 and Globex 3.9M."
    agent, _ = agent_with([call(("c1", "vault", {})), answer], "assist", secret)
    agent.run_sync("open it")
    kept = orjson.dumps(thaw(agent.snapshot().state)).decode().casefold()
    assert "zed-vault-77" not in kept
    assert agent.unsupported_values()["values"][0]["value"] == "[REDACTED]"
    store = SqliteStore(tmp_path / "runs.db")
    redacted, _ = agent_with(
        [call(("c1", "quote", {})), BAD], "assist", store=store, redact=conversation_redaction()
    )
    redacted.run_sync("go")
    stored = thaw(store.load(redacted.snapshot().run_id).state["unsupported_values"])
    assert stored["values"] == "[REDACTED]" and stored["candidates"] == 6
    assert redacted.unsupported_values()["values"][0]["value"] == "3.9m"  # the live run's


def test_the_narrative_says_what_the_gate_did_in_counts():
    story = narrative()
    replies = [call(("c1", "quote", {})), BAD, STILL_BAD]
    agent = Agent.create(provider=mock(replies=replies), model="m").tool(QUOTE).recorder(story)
    with pytest.raises(UnsupportedValuesError):
        agent.names_and_numbers_from_evidence(posture="rails").build().run_sync("go")
    lines = story.lines()
    assert "The evidence gate asked the model to revise 2 of 6 values in no tool result" in (
        "\n".join(lines)
    )
    assert lines[-1] == (
        "The evidence gate withheld the answer: 1 of 3 values in no tool result of the turn, "
        "after one revision"
    )
    assert not any("Evidence recheck" in line for line in lines)  # told by the route


def test_the_gate_is_refused_at_build_when_configured_wrongly():
    builder = Agent.create(provider=mock(reply="x"), model="m")
    with pytest.raises(AgentBuildError, match="posture='strict'.*'assist'"):
        builder.names_and_numbers_from_evidence(posture="strict")
    for bad in (0, -5, 1.5, True):
        with pytest.raises(AgentBuildError, match="whole number of tokens"):
            builder.names_and_numbers_from_evidence(max_corpus_tokens=bad)
    builder.names_and_numbers_from_evidence(max_corpus_tokens=None)
    with pytest.raises(AgentBuildError, match="called twice"):
        builder.names_and_numbers_from_evidence()


def test_a_recording_of_this_version_loads_and_replays():
    """tests/agent/fixtures/recording-evidence-v1.jsonl: a guard run with an absence, a
    note on a filled argument (``tool_chars``) and a revision ask that did not ground."""
    loaded = load_recording(Path(__file__).parent / "fixtures" / "recording-evidence-v1.jsonl")
    assert assert_law(loaded) == 3
    state = thaw(loaded.state)
    assert state["settings"]["evidence"] == {"posture": "guard", "max_corpus_tokens": 100000}
    assert state["unsupported_values"]["revised"] is True
    assert state["unsupported_values"]["by_absence"][0]["looked_for_only"] is True
    assert any("tool_chars" in row for row in state["tool_results"])
    replayed = replay(loaded)
    assert [c.stage_path for c in replayed.history()] == [c.stage_path for c in loaded.history()]
