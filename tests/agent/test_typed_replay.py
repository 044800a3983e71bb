"""A typed run replayed without the agent: every answer the output schema judged is on the
record (``output_judged``: the text's SHA-256 and the verdict; ``settings.output_schema``:
the model's name and retries), so ``replay(recording)`` judges from the record, with the
network blocked and no agent code: a retry that passes, retries exhausted, the native
strategy's refusal, a fallback chain served by either tier, a pause and its resume, an output
link that broke the answer. A changed answer text is a divergence naming the stage that
judged it; a recording from before the verdicts were kept is refused as before."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import httpx2
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from tests.examples import examples
from tests.law import assert_law
from trackway.agent import (
    Agent,
    MessageContext,
    OutputContractError,
    OutputSchemaError,
    Paused,
    ReplayDivergence,
    act,
    load_recording,
    mock,
    openai,
    replay,
    save_recording,
)
from trackway.agent.output._judged import text_digest
from trackway.engine import Snapshot, thaw
from trackway.testing import block_network
from trackway.tools import allow, ask_human

from .wire_server import Server

FIXTURE = Path(__file__).parent / "fixtures" / "recording-typed-judged-v1.jsonl"
BEFORE = Path(__file__).parent / "fixtures" / "recording-typed-v1.jsonl"


class Weather(BaseModel):
    city: str
    celsius: int


VALID = '{"city": "Paris", "celsius": 22}'
CANNED = {"city": "?", "celsius": 0}


def recorded(agent: Agent, tmp_path: Path, name: str = "run.jsonl") -> Snapshot:
    return load_recording(save_recording(agent, tmp_path / name))


def alone(loaded: Snapshot) -> Snapshot:
    """``replay(loaded)`` with no agent and no network (not even loopback): every write of
    the replay equal to the recording's (the replay raises otherwise; checked again here)."""
    with block_network(allow_loopback=False):
        replayed = replay(loaded)
    assert [(c.stage_path, c.writes, c.outcome) for c in replayed.history()] == [
        (c.stage_path, c.writes, c.outcome) for c in loaded.history()
    ]
    return replayed


def judged(loaded: Snapshot) -> list[dict[str, Any]]:
    return list(thaw(loaded.state["output_judged"]))


def typed(replies: list[Any], *, retries: int = 1, **chain: Any) -> Agent:
    builder = Agent.create(provider=mock(replies=replies), model="m")
    builder = builder.output_schema(Weather, retries=retries)
    return (builder.output_fallback(**chain) if chain else builder).build()


def never(error: OutputSchemaError, raw: str) -> Any:
    pytest.fail("the fallback ran again")


# -- the cases ---------------------------------------------------------------------------------


def test_a_first_answer_that_fails_and_a_retry_that_passes(tmp_path: Path) -> None:
    agent = typed(["Sunny in Paris.", VALID])
    assert agent.run_typed_sync("weather?") == Weather(city="Paris", celsius=22)
    loaded = recorded(agent, tmp_path)
    assert thaw(loaded.state["settings"])["output_schema"] == {"model": "Weather", "retries": 1}
    assert judged(loaded) == [
        {
            "answer": text_digest("Sunny in Paris."),
            "stage": "json-parse",
            "error": "Invalid JSON: expected value at line 1 column 1",
        },
        {"answer": text_digest(VALID), "passed": True},
    ]
    alone(loaded)
    assert assert_law(loaded) == 2


def test_retries_exhausted_leave_the_contract_unmet_and_it_replays(tmp_path: Path) -> None:
    agent = typed(['{"city": "Paris"}', '{"city": "Paris", "celsius": "warm"}'])
    with pytest.raises(OutputContractError) as info:
        agent.run_typed_sync("weather?")
    assert (info.value.stage, info.value.path) == ("schema-validate", "celsius")
    loaded = recorded(agent, tmp_path)
    unmet = thaw(loaded.state["output_contract_unmet"])
    assert (unmet["retries_spent"], unmet["path"]) == (1, "celsius")
    assert [row.get("path") for row in judged(loaded)] == ["celsius", "celsius"]
    alone(loaded)


def test_native_on_the_mock_with_a_refusal_stop(tmp_path: Path) -> None:
    provider = mock(replies=[{"content": VALID, "stop_reason": "refusal"}])
    agent = (
        Agent.create(provider=provider, model="m")
        .output_schema(Weather, retries=0, strategy="native")
        .build()
    )
    with pytest.raises(OutputContractError) as info:
        agent.run_typed_sync("weather?")
    assert info.value.stop_reason == "refusal" and info.value.stage == "stop-reason"
    loaded = recorded(agent, tmp_path)
    # the schema passed the text; the stop failed it (the verdict row is the schema's alone)
    assert judged(loaded) == [{"answer": text_digest(VALID), "passed": True}]
    replayed = alone(loaded)
    sent = provider.requests[0].response_format
    assert thaw(replayed.state["settings"])["response_format"] == sent


def test_native_on_the_openai_wire_with_a_refusal(tmp_path: Path) -> None:
    refused = {"role": "assistant", "content": None, "refusal": "I can't help with that."}
    body = {"choices": [{"index": 0, "message": refused, "finish_reason": "stop"}]}
    server = Server(httpx2.Response(200, json=body))
    provider = openai(
        "gpt-test", base_url="https://llm.test/v1", api_key="k" * 12, transport=server.transport
    )
    agent = (
        Agent.create(provider=provider, stream=False)
        .output_schema(Weather, retries=0, strategy="native")
        .build()
    )
    with pytest.raises(OutputContractError):
        agent.run_typed_sync("weather?")
    loaded = recorded(agent, tmp_path)
    assert thaw(loaded.state["output_contract_unmet"])["stop_reason"] == "refusal"
    alone(loaded)


def test_a_chain_served_by_the_fallback_tier(tmp_path: Path) -> None:
    agent = typed(["nope", "still not"], fallback=lambda error, raw: {"city": "Oslo", "celsius": 3})
    assert agent.run_typed_sync("weather?") == Weather(city="Oslo", celsius=3)
    loaded = recorded(agent, tmp_path)
    assert [row["tier"] for row in thaw(loaded.state["output_fallback"])] == [
        "primary",
        "fallback",
    ]
    alone(loaded)


def test_a_chain_served_by_the_canned_tier(tmp_path: Path) -> None:
    agent = typed(["nope", "still not"], fallback=lambda error, raw: '{"city": 1}', canned=CANNED)
    assert agent.run_typed_sync("weather?") == Weather(**CANNED)
    loaded = recorded(agent, tmp_path)
    assert [(row["tier"], row["outcome"]) for row in thaw(loaded.state["output_fallback"])] == [
        ("primary", "failed"),
        ("fallback", "invalid"),
        ("canned", "passed"),
    ]
    alone(loaded)
    only = typed(["nope"], retries=0, canned=CANNED)  # the canned tier alone
    assert only.run_typed_sync("weather?") == Weather(**CANNED)
    alone(recorded(only, tmp_path, "canned.jsonl"))


def test_a_typed_run_paused_and_resumed(tmp_path: Path) -> None:
    ask = {"tool_calls": [{"id": "a1", "name": "ask_human", "args": {"question": "Which city?"}}]}
    builder = Agent.create(provider=mock(replies=[ask, "Paris, 22C", VALID]), model="m")
    agent = builder.tool(ask_human()).output_schema(Weather, retries=1).build()
    paused = agent.run_typed_sync("weather?")
    assert isinstance(paused, Paused)
    assert agent.resume_sync(paused.checkpoint, "Paris") == Weather(city="Paris", celsius=22)
    loaded = recorded(agent, tmp_path)
    assert any(c.kind == "resume" for c in loaded.history())
    assert [row.get("passed", False) for row in judged(loaded)] == [False, True]
    alone(loaded)


def signed(message: dict[str, Any], ctx: MessageContext) -> Any:
    return allow(message["content"] + " — the bot", "signed")


def test_an_output_link_that_broke_the_answer(tmp_path: Path) -> None:
    agent = (
        Agent.create(provider=mock(replies=[VALID]), model="m")
        .output_schema(Weather, retries=2)
        .middleware(act(output=signed))
        .build()
    )
    with pytest.raises(OutputContractError) as info:
        agent.run_typed_sync("weather?")
    assert info.value.broken_by == "signed"
    loaded = recorded(agent, tmp_path)
    rows = judged(loaded)  # the rewrite judged, then the model's own answer
    assert [row["answer"] for row in rows] == [
        text_digest(VALID),
        text_digest(VALID + " — the bot"),
        text_digest(VALID),
        text_digest(VALID + " — the bot"),
    ]
    assert [row.get("passed", False) for row in rows] == [True, False, True, False]
    alone(loaded)


# -- what is not configured, what was changed, what came before -------------------------------


def test_without_an_output_schema_nothing_is_recorded(tmp_path: Path) -> None:
    agent = Agent.create(provider=mock(replies=[VALID]), model="m").build()
    agent.run_sync("weather?")
    state = thaw(agent.snapshot().state)
    assert "output_judged" not in state and "output_schema" not in state["settings"]
    assert state["settings"] == {"model": "m"}


def tampered(path: Path, to: Path, change: Any) -> Path:
    """``path`` with ``change(op)`` applied to the first op it returns True for."""
    lines = []
    done = False
    for line in path.read_bytes().splitlines():
        doc = orjson.loads(line)
        for op in doc.get("ops", ()):
            if not done and change(op):
                done = True
        lines.append(orjson.dumps(doc))
    assert done
    to.write_bytes(b"\n".join(lines) + b"\n")
    return to


def test_a_changed_answer_text_is_a_divergence_naming_the_stage_that_judged_it(
    tmp_path: Path,
) -> None:
    agent = typed(["Sunny in Paris.", VALID])
    agent.run_typed_sync("weather?")
    path = save_recording(agent, tmp_path / "run.jsonl")

    def answer(op: dict[str, Any]) -> bool:
        if op["key"] != "response" or op["value"]["content"] != VALID:
            return False
        op["value"]["content"] = '{"city": "Paris", "celsius": 23}'
        return True

    changed = load_recording(tampered(path, tmp_path / "changed.jsonl", answer))
    with block_network(allow_loopback=False), pytest.raises(ReplayDivergence) as info:
        replay(changed)
    assert (info.value.stage_path, info.value.key) == ("route#5", "output_judged")
    assert "never judged" in str(info.value) and 'celsius": 23' in str(info.value)
    with pytest.raises(ReplayDivergence) as info:  # with the agent: judged again, differently
        replay(changed, agent)
    assert (info.value.stage_path, info.value.key) == ("route#5", "output_judged")

    def verdict(op: dict[str, Any]) -> bool:
        if op["key"] != "output_judged" or "error" not in op["value"][0]:
            return False
        op["value"][0]["error"] = "celsius: Field required"
        return True

    lied = load_recording(tampered(path, tmp_path / "lied.jsonl", verdict))
    with pytest.raises(ReplayDivergence) as info:  # a verdict must agree with what route wrote
        replay(lied)
    assert (info.value.stage_path, info.value.key) == ("route#2", "output_error")


def test_a_recording_from_before_the_verdicts_replays_with_its_agent_only() -> None:
    loaded = load_recording(BEFORE)
    assert "output_schema" not in thaw(loaded.state["settings"])
    with pytest.raises(ReplayDivergence, match="kept no verdicts") as info:
        replay(loaded)
    assert info.value.stage_path == "route#3"  # the first stage that judged an answer
    builder = Agent.create(provider=mock(replies=[]), model="m").system("JSON only.")
    builder = builder.output_schema(Weather, retries=1, strategy="native")
    agent = builder.output_fallback(canned=CANNED, fallback=never).build()
    replayed = replay(loaded, agent)  # the settings compared as they were kept then
    assert "output_judged" in replayed.state and "output_judged" not in loaded.state


def fixture_agent(provider: Any) -> Agent:
    """The agent of tests/agent/fixtures/recording-typed-judged-v1.jsonl."""
    builder = Agent.create(provider=provider, model="m").output_schema(Weather, retries=1)
    builder = builder.middleware(act(output=signed))
    return builder.output_fallback(fallback=lambda error, raw: {"city": 1}, canned=CANNED).build()


def test_a_recording_from_this_version_replays_without_its_agent() -> None:
    """Kept as a fixture (a run_typed run: prose, then JSON a rule broke; a fallback that
    returned an invalid value; the canned answer): later versions must load it and replay it
    from the record alone."""
    loaded = load_recording(FIXTURE)
    state = thaw(loaded.state)
    assert state["settings"]["output_schema"] == {"model": "Weather", "retries": 1}
    # each answer judged by route, its rewrite and the answer again by the output door's
    # judge: prose fails (and is asked again), JSON passes and its signed rewrite does not
    assert [(row.get("stage"), row.get("passed")) for row in state["output_judged"]] == [
        ("json-parse", None),
        ("json-parse", None),
        ("json-parse", None),
        (None, True),
        ("json-parse", None),
        (None, True),
        ("json-parse", None),
    ]
    assert state["output_contract_unmet"]["broken_by"] == "signed"
    assert [row["tier"] for row in state["output_fallback"]] == ["primary", "fallback", "canned"]
    alone(loaded)
    assert assert_law(loaded) == 2


def write_fixture(path: Path = FIXTURE) -> None:  # pragma: no cover - run by hand
    """How the fixture was made: ``python -c 'from tests.agent.test_typed_replay import
    write_fixture; write_fixture()'``."""
    agent = fixture_agent(mock(replies=["Sunny in Paris.", VALID]))
    assert agent.run_typed_sync("Weather in Paris?") == Weather(**CANNED)
    save_recording(agent, path)


# -- any typed run ------------------------------------------------------------------------------

ANSWERS = st.sampled_from(
    [
        VALID,
        '{"city": "Oslo", "celsius": -3}',
        '{"city": "Paris"}',
        '{"city": "Paris", "celsius": "warm"}',
        "Sunny in Paris.",
        "",
        "[1, 2]",
        {"content": VALID, "stop_reason": "refusal"},
        {"content": '{"city": "Pa', "stop_reason": "max_tokens"},
    ]
)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    answers=st.lists(ANSWERS, min_size=1, max_size=4),
    retries=st.integers(0, 3),
    native=st.booleans(),
    chain=st.sampled_from([None, "fallback", "canned", "both"]),
    link=st.booleans(),
    ask_typed=st.booleans(),
)
def test_any_typed_run_replays_from_the_record_alone(
    answers: list[Any],
    retries: int,
    native: bool,
    chain: str | None,
    link: bool,
    ask_typed: bool,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    replies = [*answers, *([answers[-1]] * retries)]  # never short of an answer
    builder = Agent.create(provider=mock(replies=replies), model="m")
    builder = builder.output_schema(
        Weather, retries=retries, strategy="native" if native else "instruct"
    )
    if chain in ("fallback", "both"):
        builder = builder.output_fallback(
            fallback=lambda error, raw: {"city": raw[:3], "celsius": len(raw)},
            **({"canned": CANNED} if chain == "both" else {}),
        )
    elif chain == "canned":
        builder = builder.output_fallback(canned=CANNED)
    if link:
        builder = builder.middleware(act(output=signed))
    agent = builder.build()
    with contextlib.suppress(OutputContractError):  # retries spent, no tier served
        (agent.run_typed_sync if ask_typed else agent.run_sync)("weather?")
    loaded = recorded(agent, tmp_path_factory.mktemp("typed"))
    alone(loaded)
    assert [c.writes for c in replay(loaded, agent).history()] == [
        c.writes for c in loaded.history()
    ]


def test_a_composition_with_a_typed_member_replays_without_the_composition(
    tmp_path: Path,
) -> None:
    from trackway.agent import Sequence

    member = typed(["Sunny in Paris.", VALID])
    plain = Agent.create(provider=mock(replies=["noted"]), model="m", name="plain").build()
    composition = Sequence.create(name="desk").step("typed", member).step("plain", plain).build()
    assert composition.run_sync("weather?") == "noted"
    loaded = recorded(composition, tmp_path)
    rows = [c for c in loaded.history() if any(op.key == "output_judged" for op in c.ops)]
    assert rows and all(c.frame for c in rows)  # the member's verdicts, in its frame
    alone(loaded)
