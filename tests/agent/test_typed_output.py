"""Typed answers that degrade gracefully: parse_output and its errors, the fallback chain
(primary, fallback judged again, canned validated at build) recorded step by step in a
run_typed run and replayed from the record, the full output_contract_unmet report, and a
typed answer across a pause (in this process and another agent instance)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from tests.backends import run_async
from tests.law import assert_law
from trackway.agent import (
    Agent,
    AgentBuildError,
    MessageContext,
    OutputContractError,
    OutputSchemaError,
    Paused,
    act,
    load_recording,
    mock,
    replay,
    save_recording,
)
from trackway.engine import SqliteStore, UnknownKeywordError, thaw
from trackway.recorders import narrative, narrative_from_log
from trackway.tools import allow, ask_human

FIXTURE = Path(__file__).parent / "fixtures" / "recording-typed-v1.jsonl"


class Weather(BaseModel):
    city: str
    celsius: int


class Item(BaseModel):
    name: str
    price: float


class Basket(BaseModel):
    items: list[Item]


VALID = '{"city": "Paris", "celsius": 22}'
VALID_CANNED = {"city": "?", "celsius": 0}
UNMET_FIELDS = {
    "attempts",
    "retries_spent",
    "stage",
    "error",
    "path",
    "broken_by",
    "fallback_configured",
    "stop_reason",
}


def typed(replies: list[Any], *, retries: int = 0, **chain: Any) -> Agent:
    builder = Agent.create(provider=mock(replies=replies), model="m")
    builder = builder.output_schema(Weather, retries=retries)
    if chain:
        builder = builder.output_fallback(**chain)
    return builder.build()


def rows(agent: Agent) -> list[dict[str, Any]]:
    return thaw(agent.snapshot().state["output_fallback"])


# -- parse_output ------------------------------------------------------------------------------


def test_parse_output_returns_the_model_and_its_errors_carry_raw_stage_error_and_path() -> None:
    agent = typed(["unused"])
    assert agent.parse_output(VALID) == Weather(city="Paris", celsius=22)
    with pytest.raises(OutputSchemaError) as not_json:
        agent.parse_output("Sunny!")
    error = not_json.value
    assert (error.raw_output, error.stage, error.path) == ("Sunny!", "json-parse", None)
    assert error.error.startswith("Invalid JSON") and isinstance(error, ValueError)
    with pytest.raises(OutputSchemaError) as missing:
        agent.parse_output('{"city": "Paris"}')
    assert (missing.value.stage, missing.value.path) == ("schema-validate", "celsius")
    assert missing.value.error == "celsius: Field required"
    basket = Agent.create(provider=mock(reply="x"), model="m").output_schema(Basket).build()
    with pytest.raises(OutputSchemaError) as nested:
        basket.parse_output('{"items": [{"name": "a", "price": 1}, {"name": "b", "price": "x"}]}')
    assert nested.value.path == "items.1.price" and nested.value.stage == "schema-validate"
    assert "Weather" in str(missing.value) and "celsius" in str(missing.value)


def test_without_an_output_schema_each_typed_call_says_to_add_one() -> None:
    plain = Agent.create(provider=mock(reply="x"), model="m").build()
    for call in (
        lambda: plain.parse_output(VALID),
        lambda: run_async(plain.parse_output_async, VALID),
        lambda: plain.run_typed_sync("go"),
    ):
        with pytest.raises(AgentBuildError, match=r"add \.output_schema\(Model\)"):
            call()


def test_parse_output_async_engages_the_chain_and_parse_output_never_does() -> None:
    asked: list[tuple[str, str, str]] = []

    async def repair(error: OutputSchemaError, raw: str) -> dict[str, Any]:
        asked.append((error.stage, error.raw_output, raw))
        return {"city": raw.strip("! "), "celsius": 0}

    agent = typed(["unused"], fallback=repair)
    with pytest.raises(OutputSchemaError):
        agent.parse_output("Oslo!")  # the sync parse keeps to the primary tier
    assert asked == []
    assert run_async(agent.parse_output_async, "Oslo!") == Weather(city="Oslo", celsius=0)
    assert asked == [("json-parse", "Oslo!", "Oslo!")]
    assert run_async(agent.parse_output_async, VALID) == Weather(city="Paris", celsius=22)
    assert len(asked) == 1  # a valid answer never reaches the fallback
    bare = typed(["unused"])  # no chain: the same as parse_output
    with pytest.raises(OutputSchemaError) as info:
        run_async(bare.parse_output_async, "Oslo!")
    assert info.value.chain == ()
    broken = typed(["unused"], fallback=lambda error, raw: {"city": "Oslo"})
    with pytest.raises(OutputSchemaError) as failed:
        run_async(broken.parse_output_async, "Oslo!")
    assert [(r["tier"], r["outcome"]) for r in failed.value.chain] == [
        ("primary", "failed"),
        ("fallback", "invalid"),
    ]


# -- the chain in a run ------------------------------------------------------------------------


def test_a_valid_answer_is_the_primary_tier_and_the_fallback_is_never_asked() -> None:
    asked: list[str] = []
    agent = typed([VALID], fallback=lambda error, raw: asked.append(raw))
    assert agent.run_typed_sync("weather?") == Weather(city="Paris", celsius=22)
    assert rows(agent) == [{"tier": "primary", "outcome": "passed"}]
    assert asked == [] and agent.output_contract_unmet() is None


@pytest.mark.parametrize(
    ("returned", "expected"),
    [
        ({"city": "Oslo", "celsius": 3}, Weather(city="Oslo", celsius=3)),
        ('{"city": "Oslo", "celsius": 3}', Weather(city="Oslo", celsius=3)),
        (Weather(city="Oslo", celsius=3), Weather(city="Oslo", celsius=3)),
    ],
    ids=["dict", "json", "instance"],
)
def test_the_fallback_tier_serves_a_value_judged_again(returned: Any, expected: Weather) -> None:
    seen: list[OutputSchemaError] = []

    def fallback(error: OutputSchemaError, raw: str) -> Any:
        seen.append(error)
        return returned

    agent = typed(["Sunny in Oslo"], fallback=fallback)
    assert agent.run_typed_sync("weather?") == expected
    (error,) = seen
    assert (error.raw_output, error.stage) == ("Sunny in Oslo", "json-parse")
    primary, served = rows(agent)
    assert primary["tier"] == "primary" and primary["outcome"] == "failed"
    assert primary["stage"] == "json-parse" and primary["error"].startswith("Invalid JSON")
    assert served == {"tier": "fallback", "outcome": "passed", "value": expected.model_dump()}


@pytest.mark.parametrize(
    ("fallback", "outcome", "said"),
    [
        (lambda error, raw: {"city": "Oslo"}, "invalid", "celsius: Field required"),
        (lambda error, raw: 42, "refused", "the fallback returned a int"),
        (lambda error, raw: {"when": {1, 2}}, "refused", "not plain JSON"),
        (lambda error, raw: (_ for _ in ()).throw(RuntimeError("down")), "raised", "down"),
    ],
    ids=["invalid", "refused", "not-json", "raised"],
)
def test_a_failing_fallback_falls_to_the_canned_answer(
    fallback: Any, outcome: str, said: str
) -> None:
    canned = Weather(city="unknown", celsius=0)
    agent = typed(["nope"], fallback=fallback, canned=canned)
    assert agent.run_typed_sync("weather?") == canned
    primary, tried, served = rows(agent)
    assert primary["outcome"] == "failed"
    assert (tried["tier"], tried["outcome"]) == ("fallback", outcome)
    assert said in tried["error"]
    if outcome == "invalid":
        assert tried["returned"] == {"city": "Oslo"} and tried["path"] == "celsius"
    assert served == {"tier": "canned", "outcome": "passed", "value": canned.model_dump()}
    assert agent.output_contract_unmet()["fallback_configured"] is True  # type: ignore[index]


def test_an_async_fallback_is_awaited_in_run_typed() -> None:
    async def fallback(error: OutputSchemaError, raw: str) -> Weather:
        return Weather(city="Rome", celsius=int(error.stage == "json-parse"))

    agent = typed(["nope"], fallback=fallback)
    assert run_async(agent.run_typed, "weather?") == Weather(city="Rome", celsius=1)
    assert [r["tier"] for r in rows(agent)] == ["primary", "fallback"]


def test_canned_alone_and_a_chain_that_serves_nothing() -> None:
    only = typed(["nope"], canned={"city": "?", "celsius": 0})
    assert only.run_typed_sync("w") == Weather(city="?", celsius=0)
    assert [r["tier"] for r in rows(only)] == ["primary", "canned"]
    agent = typed(["nope"], fallback=lambda error, raw: {"city": "x"})
    with pytest.raises(OutputContractError) as info:
        agent.run_typed_sync("w")
    error = info.value
    assert error.fallback_configured and [r["outcome"] for r in error.chain] == [
        "failed",
        "invalid",
    ]
    assert "the fallback chain served nothing valid" in str(error)
    assert isinstance(error, OutputSchemaError) and error.raw_output == "nope"


def test_the_narrative_tells_which_tier_served_and_never_the_value() -> None:
    story = narrative()
    builder = Agent.create(provider=mock(replies=["nope"]), model="m").recorder(story)
    builder = builder.output_schema(Weather, retries=0)
    agent = builder.output_fallback(fallback=lambda e, raw: 1 / 0, canned=VALID_CANNED).build()
    agent.run_typed_sync("weather?")
    assert story.lines()[-1] == (
        "The typed answer came from the canned tier (primary failed, fallback raised, canned "
        "passed)"
    )
    assert narrative_from_log(agent.snapshot()).lines() == story.lines()


def test_run_never_reaches_the_chain() -> None:
    asked: list[str] = []
    agent = typed(["nope"], fallback=lambda e, raw: asked.append(raw), canned=VALID_CANNED)
    assert agent.run_sync("weather?") == "nope"
    assert asked == [] and "output_fallback" not in agent.snapshot().state
    (stage,) = [c for c in agent.snapshot().history() if c.stage_id == "output-fallback"]
    assert stage.writes == ()  # mounted, and idle: the caller did not ask for a typed answer
    unmet = agent.output_contract_unmet()
    assert unmet is not None and unmet["fallback_configured"] is True


def test_a_bad_chain_is_refused_at_build() -> None:
    def builder() -> Any:
        return Agent.create(provider=mock(reply="x"), model="m").output_schema(Weather)

    with pytest.raises(AgentBuildError, match="canned=...\\) does not match Weather: celsius"):
        builder().output_fallback(canned={"city": "x"}).build()
    with pytest.raises(AgentBuildError, match="give a Weather instance or a dict"):
        builder().output_fallback(canned="sunny").build()
    with pytest.raises(AgentBuildError, match="needs fallback=fn"):
        builder().output_fallback()
    with pytest.raises(AgentBuildError, match="give a function"):
        builder().output_fallback(fallback="repair")
    with pytest.raises(AgentBuildError, match="twice"):
        builder().output_fallback(canned=VALID_CANNED).output_fallback(canned=VALID_CANNED)
    plain = Agent.create(provider=mock(reply="x"), model="m").output_fallback(canned=VALID_CANNED)
    with pytest.raises(AgentBuildError, match=r"add \.output_schema\(Model\)"):
        plain.build()
    with pytest.raises(AgentBuildError, match="strategy='sloppy'"):
        builder().output_schema(Weather, strategy="sloppy")
    with pytest.raises(UnknownKeywordError, match=r"AgentBuilder.output_fallback\(\) got an"):
        builder().output_fallback(fallbacks=print)


# -- the report --------------------------------------------------------------------------------


@pytest.mark.parametrize("retries", [0, 2])
def test_the_report_has_every_field(retries: int) -> None:
    agent = typed(['{"city": "Paris"}'] * (retries + 1), retries=retries)
    assert agent.run_sync("weather?") == '{"city": "Paris"}'
    unmet = agent.output_contract_unmet()
    assert unmet is not None and set(unmet) == UNMET_FIELDS
    assert unmet == {
        "attempts": retries + 1,
        "retries_spent": retries,
        "stage": "schema-validate",
        "error": "celsius: Field required",
        "path": "celsius",
        "broken_by": None,
        "fallback_configured": False,
        "stop_reason": None,
    }
    with pytest.raises(OutputContractError) as info:
        typed(['{"city": "Paris"}'] * (retries + 1), retries=retries).run_typed_sync("w")
    error = info.value
    assert (error.attempts, error.retries_spent, error.path) == (retries + 1, retries, "celsius")
    assert (error.stage, error.error, error.last_error) == ("schema-validate",) + (
        "celsius: Field required",
    ) * 2
    assert error.answer == error.raw_output == '{"city": "Paris"}'


def signed(message: dict[str, Any], ctx: MessageContext) -> Any:
    return allow(message["content"] + " — the bot", "signature")


@pytest.mark.parametrize("retries", [0, 2])
def test_broken_by_names_the_output_link_and_spends_no_retry(retries: int) -> None:
    provider = mock(replies=[VALID] * 3)
    agent = (
        Agent.create(provider=provider, model="m")
        .output_schema(Weather, retries=retries)
        .middleware(act(output=signed))
        .build()
    )
    agent.run_sync("weather?")
    assert len(provider.requests) == 1
    unmet = agent.output_contract_unmet()
    assert unmet is not None and unmet["broken_by"] == "signed"
    assert (unmet["attempts"], unmet["retries_spent"], unmet["stage"]) == (1, 0, "json-parse")
    with pytest.raises(OutputContractError) as info:
        agent.run_typed_sync("weather?")
    assert info.value.broken_by == "signed" and info.value.retries_spent == 0


# -- across a pause ----------------------------------------------------------------------------


def asking(replies: list[Any], store: SqliteStore | None = None, **chain: Any) -> Agent:
    builder = Agent.create(provider=mock(replies=replies), model="m", store=store)
    builder = builder.tool(ask_human()).output_schema(Weather, retries=0)
    if chain:
        builder = builder.output_fallback(**chain)
    return builder.build()


ASK = {"tool_calls": [{"id": "a1", "name": "ask_human", "args": {"question": "Which city?"}}]}


def test_a_typed_run_that_pauses_resumes_typed_and_a_plain_one_plain() -> None:
    agent = asking([ASK, VALID, ASK, VALID])
    paused = agent.run_typed_sync("weather?")
    assert isinstance(paused, Paused)
    assert agent.resume_sync(paused.checkpoint, "Paris") == Weather(city="Paris", celsius=22)
    plain = agent.run_sync("weather?")
    assert isinstance(plain, Paused)
    assert agent.resume_sync(plain.checkpoint, "Paris") == VALID


def test_another_agent_instance_resumes_the_stored_run_typed_with_its_chain(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.db"
    first = asking([ASK], SqliteStore(db), canned=VALID_CANNED)
    paused = first.run_typed_sync("weather?")
    assert isinstance(paused, Paused)
    saved = paused.checkpoint.to_json()
    other = asking(["It is sunny."], SqliteStore(db), canned=VALID_CANNED)
    assert other.resume_sync(saved, "Paris") == Weather(city="?", celsius=0)
    store = SqliteStore(db, read_only=True)
    try:
        kept = store.load(paused.run_id)
    finally:
        store.close()
    assert [r["tier"] for r in kept.state["output_fallback"]] == ["primary", "canned"]
    assert_law(kept)


# -- the record --------------------------------------------------------------------------------


def test_a_replay_serves_the_recorded_fallback_and_never_runs_it(tmp_path: Path) -> None:
    asked: list[str] = []

    def fallback(error: OutputSchemaError, raw: str) -> dict[str, Any]:
        asked.append(raw)
        return {"city": "Oslo", "celsius": len(asked)}

    agent = typed(["nope", "still not"], retries=1, fallback=fallback)
    assert agent.run_typed_sync("weather?") == Weather(city="Oslo", celsius=1)
    assert assert_law(agent) == 2
    path = save_recording(agent, tmp_path / "typed.jsonl")
    loaded = load_recording(path)
    replayed = replay(loaded, agent)
    assert asked == ["still not"]  # the replay read the fallback's value from the record
    assert [c.stage_path for c in replayed.history()] == [c.stage_path for c in loaded.history()]
    assert thaw(replayed.state)["output_fallback"] == thaw(loaded.state)["output_fallback"]
    alone = replay(loaded)  # without the agent: judged from the verdicts the run kept
    assert asked == ["still not"]
    assert [c.writes for c in alone.history()] == [c.writes for c in loaded.history()]


def test_not_configured_changes_no_stage_no_key_and_no_request() -> None:
    def run(**chain: Any) -> tuple[Agent, list[bytes]]:
        provider = mock(replies=["nope", VALID])
        builder = Agent.create(provider=provider, model="m").output_schema(Weather, retries=1)
        agent = (builder.output_fallback(**chain) if chain else builder).build()
        agent.run_sync("weather?")
        return agent, [r.canonical_json() for r in provider.requests]

    plain, plain_requests = run()
    chained, chained_requests = run(canned=VALID_CANNED)
    assert plain_requests == chained_requests  # a chain changes no request
    assert "output-fallback" not in plain.spec().nodes
    state = thaw(plain.snapshot().state)
    assert not {"output_fallback", "typed"} & set(state)
    assert not {"output_fallback", "output_strategy"} & set(state["settings"])
    assert thaw(chained.snapshot().state)["settings"]["output_fallback"] == {
        "fallback": False,
        "canned": VALID_CANNED,
    }
    same = [(c.stage_path, c.writes) for c in plain.snapshot().history()]
    other = [
        (c.stage_path, c.writes)
        for c in chained.snapshot().history()
        if c.stage_id not in ("seed", "output-fallback")
    ]
    assert same[1:] == other


def fixture_agent(provider: Any = None, **chain: Any) -> Agent:
    """The agent of tests/agent/fixtures/recording-typed-v1.jsonl."""
    builder = Agent.create(provider=provider or mock(replies=[]), model="m").system("JSON only.")
    builder = builder.output_schema(Weather, retries=1, strategy="native")
    return builder.output_fallback(canned=VALID_CANNED, **chain).build()


def test_a_recording_from_this_version_loads_reads_and_replays() -> None:
    """Kept as a fixture (a run_typed run on the native strategy: a prose answer, then JSON
    cut at max_tokens; a fallback that served an invalid value; the canned answer): later
    versions must load it, rebuild every call and replay it without running the fallback."""
    loaded = load_recording(FIXTURE)
    assert assert_law(loaded) == 2
    state = thaw(loaded.state)
    assert state["settings"]["output_strategy"] == "native"
    assert state["settings"]["response_format"]["json_schema"]["strict"] is True
    assert [(r["tier"], r["outcome"]) for r in state["output_fallback"]] == [
        ("primary", "failed"),
        ("fallback", "invalid"),
        ("canned", "passed"),
    ]
    unmet = state["output_contract_unmet"]
    assert (unmet["stage"], unmet["stop_reason"], unmet["retries_spent"]) == (
        "stop-reason",
        "max_tokens",
        1,
    )
    agent = fixture_agent(fallback=lambda error, raw: pytest.fail("the fallback ran again"))
    replayed = replay(loaded, agent)
    assert [c.stage_path for c in replayed.history()] == [c.stage_path for c in loaded.history()]
    assert thaw(replayed.state)["output_fallback"] == state["output_fallback"]


def write_fixture(path: Path = FIXTURE) -> None:  # pragma: no cover - run by hand
    """How the fixture was made: ``python -c 'from tests.agent.test_typed_output import
    write_fixture; write_fixture()'``."""
    replies = ["Sunny in Paris.", {"content": VALID, "stop_reason": "max_tokens"}]
    agent = fixture_agent(mock(replies=replies), fallback=lambda error, raw: {"city": "Paris"})
    assert agent.run_typed_sync("Weather in Paris?") == Weather(**VALID_CANNED)
    save_recording(agent, path)
