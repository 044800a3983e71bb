"""Memory across runs (``.memory(define_memory(...))``): the last turns, a running summary and
facts, recalled before a turn for who the run is for and written after it; scoped by
identity (hostile identities included), kept under redaction as stored, failing without
losing the answer, through compositions, and replayed from the record alone."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.examples import examples
from tests.law import assert_law
from tests.pg import pg_schema
from trackway.agent import (
    Agent,
    AgentBuildError,
    Sequence,
    conversation_redaction,
    define_memory,
    load_recording,
    mock,
    replay,
    save_recording,
    served_at,
)
from trackway.engine import MemoryStore, PostgresStore, RedactionPolicy, SqliteStore, thaw
from trackway.recorders import jsonl, narrative
from trackway.tools import absent, define_tool

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


def law(runner: Agent) -> None:
    """Every request of the last run rebuilt from its log, byte for byte."""
    assert_law(runner.snapshot())


def agent_on(store: Any, *memories: Any, replies: list[Any] | None = None, **options: Any) -> Agent:
    provider = mock(replies=replies or ["noted", "again", "third", "fourth"])
    return (
        Agent.create(provider=provider, model="m", store=store, **options)
        .system("Be helpful.")
        .memory(*memories)
        .build()
    )


def system_of(agent: Agent, k: int = 1) -> str:
    return served_at(agent.snapshot(), k).system or ""


# -- declaring memory ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "says"),
    [
        (lambda: define_memory("episodic"), "the kinds are 'recent', 'summary', 'facts'"),
        (lambda: define_memory("recent", turns=0), "turns=0): use a whole number >= 1"),
        (lambda: define_memory("recent", turns=True), "use a whole number >= 1"),
        (lambda: define_memory("recent", summarize=str), "summarize belongs to kind 'summary'"),
        (lambda: define_memory("summary"), "needs summarize=fn(previous, turn)"),
        (lambda: define_memory("facts"), "needs extract=fn(turn)"),
        (lambda: define_memory("facts", extract=dict, max_facts=0), "max_facts=0"),
        (lambda: define_memory("recent", id="9lives"), "an id starts with a letter"),
        (lambda: define_memory("recent", max_chars=-1), "max_chars=-1"),
        (lambda: define_memory("recent", store=object()), "use a store that keeps memory"),
    ],
)
def test_a_bad_definition_is_refused_naming_the_fix(call: Any, says: str) -> None:
    with pytest.raises(AgentBuildError, match=None) as info:
        call()
    assert says in str(info.value)


def test_memory_needs_a_store_and_one_id_per_memory() -> None:
    with pytest.raises(AgentBuildError) as info:
        Agent.create(provider=mock(reply="x"), model="m").memory(define_memory("recent")).build()
    assert "Agent.create(..., store=SqliteStore('runs.db'))" in str(info.value)
    assert "define_memory('recent', ..., store=...)" in str(info.value)
    builder = Agent.create(provider=mock(reply="x"), model="m", store=MemoryStore())
    with pytest.raises(AgentBuildError, match="two memories have the id 'recent'"):
        builder.memory(define_memory("recent"), define_memory("recent", turns=2))
    with pytest.raises(AgentBuildError, match="takes define_memory"):
        builder.memory("recent")  # type: ignore[arg-type]
    # its own store is enough
    own = define_memory("recent", store=MemoryStore())
    Agent.create(provider=mock(reply="x"), model="m").memory(own).build()


def test_an_agent_without_memory_mounts_no_stage_and_writes_no_key() -> None:
    agent = Agent.create(provider=mock(reply="x"), model="m", store=MemoryStore()).build()
    agent.run_sync("hi", identity={"principal": "ana"})
    snap = agent.snapshot()
    assert [c.stage_id for c in snap.history()] == ["seed", "call-llm", "route", "final"]
    assert not {"memory_recall", "memory_written"} & set(snap.state)
    assert "memory" not in snap.state["settings"]


# -- recalling across runs -------------------------------------------------------------------


def test_the_last_turns_are_recalled_for_the_same_identity_in_a_later_run(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "runs.db")
    ana = {"tenant": "acme", "principal": "ana", "conversation_id": "c1"}
    first = agent_on(store, define_memory("recent", turns=2), replies=["Tea, noted."])
    assert first.run_sync("I drink tea.", identity=ana) == "Tea, noted."
    assert "memory" not in system_of(first)  # nothing was kept yet: nothing served
    (written,) = first.snapshot().state["memory_written"]
    assert thaw(written) == {
        "id": "recent",
        "kind": "recent",
        "turn": 1,
        "stored": {"user": "I drink tea.", "answer": "Tea, noted."},
        "scope": "identity",
    }
    later = agent_on(store, define_memory("recent", turns=2), replies=["You drink tea."])
    later.run_sync("What do I drink?", identity=ana)
    assert system_of(later) == (
        'Be helpful.\n\n[memory "recent": the turn before this one, oldest first]\n'
        "Turn 1, the person: I drink tea.\nTurn 1, the answer: Tea, noted."
    )
    (row,) = later.snapshot().state["memory_recall"]
    assert (row["entries"], row["scope"]) == (1, "identity")
    law(later)
    for _ in range(3):  # only the last two turns are recalled, oldest first
        later = agent_on(store, define_memory("recent", turns=2), replies=["ok"])
        later.run_sync("more", identity=ana)
    assert "Turn 3," in system_of(later) and "Turn 4," in system_of(later)
    assert "Turn 2," not in system_of(later)
    store.close()


def test_without_an_identity_nothing_is_recalled_across_runs() -> None:
    store = MemoryStore()
    agent = agent_on(store, define_memory("recent"))
    agent.run_sync("remember 42")
    agent.run_sync("what number?")
    (row,) = agent.snapshot().state["memory_recall"]
    assert (row["entries"], row["text"], row["scope"]) == (0, "", "run")
    assert agent.snapshot().state["memory_written"][0]["turn"] == 1  # its own run's scope
    empty = agent_on(store, define_memory("recent"))
    empty.run_sync("an empty identity is no identity", identity={})
    assert empty.snapshot().state["memory_recall"][0]["scope"] == "run"


def test_a_summary_runs_at_write_time_and_the_latest_is_recalled() -> None:
    seen: list[tuple[Any, str]] = []

    async def summarize(previous: str | None, turn: Any) -> str:
        seen.append((previous, turn.user))
        return f"{previous or ''}[{turn.user}]"

    store = MemoryStore()
    who = {"principal": "bo"}
    for message in ("a", "b", "c"):
        agent = agent_on(store, define_memory("summary", summarize=summarize), replies=["ok"])
        agent.run_sync(message, identity=who)
    assert seen == [(None, "a"), ("[a]", "b"), ("[a][b]", "c")]
    assert system_of(agent).endswith('[memory "summary": a summary of the earlier turns]\n[a][b]')
    assert agent.snapshot().state["memory_written"][0]["stored"] == {"summary": "[a][b][c]"}


def test_facts_keep_the_latest_value_per_key_and_say_when_they_cut() -> None:
    def extract(turn: Any) -> dict[str, str]:
        key, _, value = turn.user.partition("=")
        return {key: value} if value else {}

    store = MemoryStore()
    who = {"principal": "cy"}
    facts = define_memory("facts", id="prefs", extract=extract, max_facts=2)
    for message in ("tea=green", "milk=none", "tea=black", "nothing to keep", "city=Oslo"):
        agent = agent_on(store, facts, replies=["ok"])
        agent.run_sync(message, identity=who)
    written = agent.snapshot().state["memory_written"][0]
    assert written["stored"] == {"facts": {"city": "Oslo"}} and written["turn"] == 4
    (row,) = agent.snapshot().state["memory_recall"]  # before city was kept: tea, milk
    assert row["entries"] == 2 and "cut" not in row
    assert row["text"] == '[memory "prefs": what is known]\n- milk: none\n- tea: black'
    agent = agent_on(store, facts, replies=["ok"])
    agent.run_sync("and now?", identity=who)
    (row,) = agent.snapshot().state["memory_recall"]
    assert thaw(row["cut"]) == {"max_facts": 2}
    assert row["text"] == (
        '[memory "prefs": the 2 latest facts; older ones are kept but not shown]\n'
        "- city: Oslo\n- tea: black"
    )


def test_max_chars_cuts_a_piece_and_the_row_says_by_how_much() -> None:
    store = MemoryStore()
    who = {"principal": "di"}
    recent = define_memory("recent", max_chars=40)
    agent_on(store, recent, replies=["x" * 200]).run_sync("long", identity=who)
    agent = agent_on(store, recent, replies=["ok"])
    agent.run_sync("again", identity=who)
    (row,) = agent.snapshot().state["memory_recall"]
    assert len(row["text"]) == 40 and row["cut"]["max_chars"] == 40
    assert row["cut"]["chars"] > 200
    law(agent)


def test_the_answer_is_kept_with_its_limits_block() -> None:
    tool = define_tool(
        name="orders",
        description="Orders.",
        input_schema=SCHEMA,
        execute=lambda args, ctx: absent(
            what="orders for 2019", checked=[{"what": "the 2019 ledger"}]
        ),
    )
    call = {"tool_calls": [{"id": "c1", "name": "orders", "args": {"q": "2019"}}]}
    agent = (
        Agent.create(provider=mock(replies=[call, "None found."]), model="m", store=MemoryStore())
        .tool(tool)
        .limits_travel_with_the_answer()
        .memory(define_memory("recent"))
        .build()
    )
    answer = agent.run_sync("orders in 2019?", identity={"principal": "ed"})
    stored = agent.snapshot().state["memory_written"][0]["stored"]
    assert stored["answer"] == answer and answer.startswith("None found.")
    assert "Limits of this answer" in stored["answer"]  # the limits block went with it
    assert "- the 2019 ledger" in stored["answer"]


# -- scopes and hostile identities -----------------------------------------------------------

HOSTILE = [
    'it\'s "quoted"',
    "100% _wild_",
    "%",
    "_",
    "nul\x00inside",
    "'; DROP TABLE trackway_memory; --",
    "x" * 10_240,
    "",
]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "postgres":
        with pg_schema("mem") as dsn:
            store = PostgresStore(dsn)
            yield store
            store.close()
        return
    store = MemoryStore() if request.param == "memory" else SqliteStore(tmp_path / "runs.db")
    yield store
    store.close()


def _remember(store: Any, identity: dict[str, Any], said: str) -> Agent:
    agent = agent_on(store, define_memory("recent", turns=50), replies=[f"ok {said}"])
    agent.run_sync(said, identity=identity)
    return agent


def test_hostile_identities_never_see_each_others_memory(any_store: Any) -> None:
    identities: list[dict[str, Any]] = [{"tenant": "acme", "principal": "ana"}]
    identities.append({"tenant": "globex", "principal": "ana"})  # same principal, other tenant
    identities.append({"tenant": "acme", "principal": "ana", "conversation_id": ""})
    identities.append({"tenant": "", "principal": "ana"})  # "" is not None
    for value in HOSTILE:
        identities.append({"tenant": value, "principal": value, "conversation_id": value})
        identities.append({"tenant": "acme", "principal": value})
    for n, identity in enumerate(identities):
        _remember(any_store, identity, f"secret-{n:03d}")
    for n, identity in enumerate(identities):
        agent = agent_on(any_store, define_memory("recent", turns=50), replies=["ok"])
        agent.run_sync("what did I say?", identity=identity)
        (row,) = agent.snapshot().state["memory_recall"]
        said = {
            f"secret-{m:03d}" for m in range(len(identities)) if f"secret-{m:03d}" in row["text"]
        }
        assert said == {f"secret-{n:03d}"}, identity
        assert row["entries"] == 1


@settings(max_examples=examples(40), deadline=None, suppress_health_check=list(HealthCheck))
@given(
    people=st.lists(
        st.fixed_dictionaries(
            {},
            optional={
                "tenant": st.text(alphabet="a'%_\x00\"\\é ", max_size=6),
                "principal": st.text(alphabet="a'%_\x00\"\\é ", max_size=6),
                "conversation_id": st.text(alphabet="a_%", max_size=3),
            },
        ),
        min_size=1,
        max_size=6,
    )
)
def test_each_identity_recalls_exactly_what_it_said(people: list[dict[str, str]]) -> None:
    store = MemoryStore()
    said: dict[str, list[str]] = {}
    for n, identity in enumerate(people):
        _remember(store, identity, f"m{n}")
        key = repr(sorted(identity.items())) if identity else f"run-{n}"
        said.setdefault(key, []).append(f"m{n}")
    for identity in people:
        agent = agent_on(store, define_memory("recent", turns=50), replies=["ok"])
        agent.run_sync("recall", identity=identity)
        (row,) = agent.snapshot().state["memory_recall"]
        recalled = [f"m{m}" for m in range(len(people)) if f"person: m{m}\n" in row["text"]]
        expected = said[repr(sorted(identity.items()))] if identity else []
        assert recalled == expected


# -- a composition ---------------------------------------------------------------------------


def test_members_use_the_compositions_identity_and_two_identities_stay_apart() -> None:
    store = MemoryStore()

    def pipeline(*replies: str) -> Agent:
        first = agent_on(store, define_memory("recent", id="notes"), replies=[replies[0]])
        second = agent_on(store, define_memory("recent", id="drafts"), replies=[replies[1]])
        return Sequence.create(name="desk").step("take", first).step("write", second).build()

    ana, bo = {"tenant": "acme", "principal": "ana"}, {"tenant": "acme", "principal": "bo"}
    pipeline("ana-took", "ana-wrote").run_sync("ana here", identity=ana)
    pipeline("bo-took", "bo-wrote").run_sync("bo here", identity=bo)
    again = pipeline("x", "y")
    again.run_sync("ana again", identity=ana)
    snap = again.snapshot()
    texts = [served_at(snap, 1, member=m).system or "" for m in ("take", "write")]
    assert "ana here" in texts[0] and "ana-took" in texts[0]
    assert "ana-took" in texts[1] and "ana-wrote" in texts[1]  # the second member's memory
    assert not any("bo" in t for t in texts)
    assert_law(snap)
    assert replay(snap).state["final_answer"] == "y"  # from the record alone
    # without an identity every member runs under the composition's run: nothing carried over
    alone = pipeline("p", "q")
    alone.run_sync("no one")
    later = pipeline("r", "s")
    later.run_sync("no one again")
    assert "no one" not in (served_at(later.snapshot(), 1, member="take").system or "")


# -- redaction, failures ---------------------------------------------------------------------

SECRET = "card 4111-1111-1111-1111"


class Ears:
    def __init__(self) -> None:
        self.heard: list[str] = []
        self.story = narrative()

    def __getattr__(self, hook: str) -> Any:
        if not hook.startswith("on_"):
            raise AttributeError(hook)
        return lambda event: self.heard.append(repr(event))


def _redacted(tmp_path: Path, policy: Any, provider: Any, ears: Ears, name: str) -> Agent:
    agent = (
        Agent.create(
            provider=provider, model="m", store=SqliteStore(tmp_path / "runs.db"), redact=policy
        )
        .memory(define_memory("recent"))
        .memory(define_memory("summary", summarize=lambda p, t: f"said: {t.user}"))
        .memory(define_memory("facts", extract=lambda t: {"said": t.user}))
        .recorder(jsonl(tmp_path / f"{name}.jsonl"))
        .recorder(ears)
        .recorder(ears.story)
        .build()
    )
    agent.on("*", lambda event: ears.heard.append(repr(event)))
    return agent


def test_under_conversation_redaction_memory_keeps_the_marker_and_nothing_leaks(
    tmp_path: Path,
) -> None:
    policy = conversation_redaction()
    who = {"principal": "fay"}
    ears = Ears()
    first = _redacted(tmp_path, policy, mock(replies=[f"Saved your {SECRET}."]), ears, "one")
    first.run_sync(f"my {SECRET}", identity=who)
    provider = mock(replies=["I know nothing secret."])
    second = _redacted(tmp_path, policy, provider, ears, "two")
    second.run_sync("what is my card?", identity=who)
    surfaces = {
        "store": b"".join(p.read_bytes() for p in sorted(tmp_path.glob("runs.db*"))),
        "recordings": b"".join(p.read_bytes() for p in sorted(tmp_path.glob("*.jsonl"))),
        "snapshots": first.snapshot().to_json() + second.snapshot().to_json(),
        "events": "\n".join(ears.heard).encode(),
        "narrative": ears.story.text().encode(),
        "requests": b"".join(r.canonical_json() for r in provider.requests),
    }
    assert [name for name, data in surfaces.items() if SECRET.encode() in data] == []
    system = provider.requests[0].system or ""  # what memory kept is the marker, served
    assert "Turn 1, the person: [REDACTED]\nTurn 1, the answer: [REDACTED]" in system
    assert "said: [REDACTED]" in system and "- said: [REDACTED]" in system
    assert "Memory recalled: recent (1 entry)" in ears.story.text()


def test_a_policy_hiding_one_key_keeps_that_text_out_of_memory(tmp_path: Path) -> None:
    seen: list[str] = []

    def extract(turn: Any) -> dict[str, str]:
        seen.append(turn.user)
        return {"said": turn.user, "heard": turn.answer}

    who = {"principal": "gil"}
    policy = RedactionPolicy(keys=["user_message"], marker="<hidden>")
    store = SqliteStore(tmp_path / "runs.db")
    agent = (
        Agent.create(provider=mock(reply="Fine."), model="m", store=store, redact=policy)
        .memory(define_memory("recent"), define_memory("facts", extract=extract))
        .build()
    )
    agent.run_sync(f"my {SECRET}", identity=who)
    assert seen == ["<hidden>"]  # extract saw the turn as stored
    with closing(sqlite3.connect(tmp_path / "runs.db")) as db:
        kept = b"".join(
            bytes(doc)
            for table in ("trackway_memory", "trackway_memory_facts")
            for (doc,) in db.execute(f"SELECT doc FROM {table}")
        )
    assert SECRET.encode() not in kept and b"<hidden>" in kept and b"Fine." in kept


class _Failing(MemoryStore):
    def __init__(self, on: str) -> None:
        super().__init__()
        self.on = on

    def memory_append(self, scope: str, memory_id: str, kind: str, doc: bytes) -> int:
        if self.on == "write":
            raise OSError("disk full")
        return super().memory_append(scope, memory_id, kind, doc)

    def memory_recent(self, scope: str, memory_id: str, limit: int) -> list[tuple[int, bytes]]:
        if self.on == "recall":
            raise OSError("store unreachable")
        return super().memory_recent(scope, memory_id, limit)


def test_a_store_that_fails_to_write_loses_no_answer_and_the_row_says_so() -> None:
    agent = agent_on(_Failing("write"), define_memory("recent"), replies=["the answer"])
    assert agent.run_sync("hello", identity={"principal": "gus"}) == "the answer"
    (row,) = agent.snapshot().state["memory_written"]
    assert thaw(row) == {
        "id": "recent",
        "kind": "recent",
        "error": {"type": "OSError", "message": "disk full"},
        "scope": "identity",
    }
    (event,) = [
        e for c in agent.snapshot().history() for e in c.events if e.name == "memory.written"
    ]
    assert thaw(event.payload)["memories"] == [
        {"id": "recent", "kind": "recent", "failed": "OSError"}
    ]
    assert replay(agent.snapshot()).state["final_answer"] == "the answer"


def test_a_store_that_fails_to_recall_serves_nothing_and_the_row_says_so() -> None:
    agent = agent_on(_Failing("recall"), define_memory("recent"), replies=["still answered"])
    assert agent.run_sync("hello", identity={"principal": "gus"}) == "still answered"
    (row,) = agent.snapshot().state["memory_recall"]
    assert row["error"]["type"] == "OSError" and row["text"] == "" and row["entries"] == 0
    assert system_of(agent) == "Be helpful."
    law(agent)


def test_a_summarizer_that_fails_or_returns_no_str_is_recorded() -> None:
    def broken(previous: str | None, turn: Any) -> Any:
        return 42

    agent = agent_on(MemoryStore(), define_memory("summary", summarize=broken), replies=["ok"])
    assert agent.run_sync("hi", identity={"principal": "hal"}) == "ok"
    (row,) = agent.snapshot().state["memory_written"]
    assert row["error"]["type"] == "TypeError"
    assert "summarize returned int; return the new summary as a str" in row["error"]["message"]


# -- replay ----------------------------------------------------------------------------------


def test_replay_needs_no_store_and_runs_no_summarizer(tmp_path: Path) -> None:
    calls: list[str] = []

    def summarize(previous: str | None, turn: Any) -> str:
        calls.append(turn.user)
        return f"{previous or ''}+{turn.user}"

    def extract(turn: Any) -> dict[str, str]:
        calls.append(turn.user)
        return {"last": turn.user}

    db = tmp_path / "runs.db"
    who = {"tenant": "t", "principal": "p"}
    memories = (
        define_memory("recent", turns=3),
        define_memory("summary", summarize=summarize, max_chars=30),
        define_memory("facts", extract=extract),
    )
    for message in ("one", "two"):
        agent = agent_on(SqliteStore(db), *memories, replies=[f"re {message}"])
        agent.run_sync(message, identity=who)
    path = save_recording(agent, tmp_path / "run.jsonl")
    for p in tmp_path.glob("runs.db*"):
        p.unlink()  # no store at all now
    before = list(calls)
    loaded = load_recording(path)
    replayed = replay(loaded)  # rebuilt from the recording: no agent, no store, no code
    assert replayed.state["memory_recall"] == loaded.state["memory_recall"]
    assert replay(loaded, agent).state["memory_written"] == loaded.state["memory_written"]
    assert calls == before
    assert_law(loaded)


FIXTURE = Path(__file__).parent / "fixtures" / "recording-memory-v1.jsonl"


def test_a_memory_recording_of_this_version_loads_and_replays() -> None:
    """Kept as a fixture: later versions must load it, rebuild every call and replay it."""
    loaded = load_recording(FIXTURE)
    rows = loaded.state["memory_recall"]
    assert [r["id"] for r in rows] == ["recent", "summary", "facts"]
    assert all(r["entries"] >= 1 for r in rows)
    assert_law(loaded)
    assert replay(loaded).state["final_answer"] == loaded.state["final_answer"]


def write_fixture(path: Path = FIXTURE) -> None:  # pragma: no cover - run by hand
    """How the fixture was made: ``python -c 'from tests.agent.test_memory import
    write_fixture; write_fixture()'``."""
    store = MemoryStore()
    who = {"tenant": "acme", "principal": "ana", "conversation_id": "c-1"}
    memories = (
        define_memory("recent", turns=2),
        define_memory("summary", summarize=lambda p, t: f"{p or ''}{t.user}; ", max_chars=200),
        define_memory("facts", extract=lambda t: {"drink": t.user.split()[-1]}, max_facts=5),
    )
    agent_on(store, *memories, replies=["Noted."]).run_sync("I drink tea", identity=who)
    last = agent_on(store, *memories, replies=["You drink tea."])
    last.run_sync("What do I drink", identity=who)
    save_recording(last, path)
