"""The evidence gate's value rule and its corpus, read as the guide states them: which tokens
are names and numbers, the one normal form spellings share, and what a tool result grounds.
The property tests run the real gate in a real agent (the model scripted)."""

from __future__ import annotations

import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.examples import examples
from tests.law import assert_law
from trackway.agent import Agent, mock
from trackway.agent.grounding._corpus import EvidenceCorpus
from trackway.agent.grounding._values import answer_values, token_keys
from trackway.engine import thaw
from trackway.tools import define_tool


def values(text: str) -> list[tuple[str, str, str]]:
    return [(v.value, v.kind, v.spelling) for v in answer_values(text)]


N, W = "number", "name"
CASES = [
    ("It was 1,200.", [("1200", N, "1,200")]),
    ("It was 1 200.", [("1200", N, "1 200")]),
    ("It was 1_200 or 1'200.", [("1200", N, "1_200"), ("1200", N, "1'200")]),
    ("Up 3.50 or 3.5 or 3.0", [("3.5", N, "3.50"), ("3.5", N, "3.5"), ("3", N, "3.0")]),
    ("Margin 12%.", [("12", N, "12%")]),
    ("Agent 007 on the 15th", [("7", N, "007"), ("15", N, "15th")]),
    ("Port fc1/7 and v2.3.1", [("fc1/7", N, "fc1/7"), ("2.3.1", N, "v2.3.1")]),
    ("Version v2.10, 2.10 or 2.1", [("2.1", N, "v2.10"), ("2.1", N, "2.10"), ("2.1", N, "2.1")]),
    ("Due 2024-01-15 at 10:30", [("2024-01-15", N, "2024-01-15"), ("10:30", N, "10:30")]),
    (
        "see config.yaml, user_id and bob@acme.com",
        [
            ("config.yaml", W, "config.yaml"),
            ("user_id", W, "user_id"),
            ("bob@acme.com", W, "bob@acme.com"),
        ],
    ),
    ("Files in var/log/syslog, and/or src/app.", [("var/log/syslog", W, "var/log/syslog")]),
    (
        "Buy AAPL on an iPhone with Acme's card.",
        [("aapl", W, "AAPL"), ("iphone", W, "iPhone"), ("acme", W, "Acme's")],
    ),
    (
        'It said "connection refused by host".',
        [("connection refused by host", W, "connection refused by host")],
    ),
    ("The `db_main` table", [("db_main", W, "db_main")]),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_names_and_numbers_and_their_normal_form(text, expected):
    assert values(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "the revenue grew and the margin held",  # all-letters words in small letters
        "Revenue grew. Margin held! Costs fell? Then: Profit rose; Cash | Debt",  # starts
        "On Monday in March I said OK, NOTE it, do NOT wait.",  # the stop words
        "A well-known, read-only, so-called fix, e.g. this and/or that.",  # hyphens, e.g
        '"pending" is a `word` here',  # a quoted single small word stays a word
        "1. First\n2) Second\n- Third [4]",  # list markers and a citation
    ],
)
def test_what_is_never_a_value(text):
    assert values(text) == []


def test_unicode_is_read_after_nfkc_and_casefolded():
    assert values("Ｑ３ sales were １，２００ in Zürich") == [
        ("q3", "number", "Q3"),
        ("1200", "number", "1,200"),
        ("zürich", "name", "Zürich"),
    ]
    assert values("paid 1\u00a0200 and 1\u202f300") == [
        ("1200", "number", "1 200"),
        ("1300", "number", "1 300"),
    ]
    assert {"strasse", "zürich", "café"} <= token_keys("STRASSE ZÜRICH Cafe\u0301")
    assert values("in Straße") == [("strasse", "name", "Straße")]


def test_a_compound_grounds_its_parts_and_a_number_only_itself():
    keys = token_keys("due 2024-01-15 from bob@acme.com, 3.5 and 1,200")
    assert {"2024-01-15", "2024", "1", "15", "bob@acme.com", "bob", "acme.com"} <= keys
    assert {"3.5", "1200"} <= keys and "5" not in keys and "200" not in keys
    assert {"12345", "12", "345"} <= token_keys("ids 12 345")  # maybe two numbers


def corpus_of(*results: tuple[str, str, str], max_tokens: int | None = None) -> EvidenceCorpus:
    """A turn of tool messages (id, status, content) after the person's message."""
    history = [{"role": "user", "content": "go"}]
    rows = []
    for call_id, status, content in results:
        history.append({"role": "tool", "content": content, "tool_call_id": call_id, "name": "t"})
        rows.append({"id": call_id, "name": "t", "iteration": 1, "status": status})
    return EvidenceCorpus.of(history, rows, max_tokens)


def test_what_the_library_wrote_grounds_nothing():
    corpus = corpus_of(
        ("a", "failure", "Error: no account ACC-9"),
        ("b", "denied", "Denied: ACC-8 is private"),
        ("c", "invalid", "Invalid arguments: ACC-7"),
        ("d", "success", "ACC-6 open"),
    )
    found = {v.value: corpus.find(v) for v in answer_values("ACC-9 ACC-8 ACC-7 ACC-6")}
    assert [k for k, f in found.items() if f is None] == ["acc-9", "acc-8", "acc-7"]
    assert found["acc-6"].carriers == ("d",) and corpus.results == 1


TEXT = st.text(alphabet=string.ascii_lowercase + " ,.\n", max_size=40)
SPELLED = st.sampled_from(
    [
        ("1200", ["1,200", "1200", "1 200", "1_200", "1200.0"]),
        ("3.5", ["3.5", "3.50", "3.500"]),
        ("12.5", ["12.5", "12.5%"]),
        ("fc1/7", ["fc1/7", "FC1/7"]),
        ("acme_corp", ["acme_corp", "ACME_CORP", "Acme_Corp's"]),
        ("2.3.1", ["2.3.1", "v2.3.1"]),
    ]
)


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    before=TEXT,
    after=TEXT,
    spelled=SPELLED,
    picks=st.tuples(st.integers(0, 9), st.integers(0, 9)),
    fresh=st.integers(10**6, 10**9),
    as_json=st.booleans(),
)
def test_a_value_inserted_in_a_result_is_grounded_and_a_fresh_one_is_flagged(
    before, after, spelled, picks, fresh, as_json
):
    """Any spelling of a value put into a tool result grounds any other spelling of it in
    the answer; a number the turn's results never held is flagged, and only it."""
    value, spellings = spelled
    written, said = spellings[picks[0] % len(spellings)], spellings[picks[1] % len(spellings)]
    text = f"{before} {written} {after}"
    result = {"note": text} if as_json else text
    tool = define_tool(
        name="quote",
        description="Read a figure.",
        input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
        execute=lambda args, ctx: result,
    )
    assert str(fresh) not in token_keys(text)  # the generator's fresh number is fresh
    provider = mock(
        replies=[
            {"tool_calls": [{"id": "c1", "name": "quote", "args": {"q": "x"}}]},
            f"the figure is {said}, against {fresh:,} before",
        ]
    )
    agent = Agent.create(provider=provider, model="m").tool(tool)
    agent = agent.names_and_numbers_from_evidence(posture="assist").build()
    agent.run_sync("what is the figure?")
    verdict = agent.unsupported_values()
    assert verdict is not None and verdict["candidates"] == 2
    assert verdict["values"] == [
        {"value": str(fresh), "kind": "number", "spellings": [f"{fresh:,}"]}
    ]
    state = agent.snapshot().state
    corpus = EvidenceCorpus.of(thaw(state["history"]), thaw(state["tool_results"]))
    (inserted,) = [v for v in answer_values(said) if v.value == value]
    assert corpus.find(inserted).carriers == ("c1",)
    assert_law(agent)
