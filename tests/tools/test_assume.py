"""ask_or_assume and period=: refused where written, served to the model, filled per call."""

from __future__ import annotations

import copy
from types import MappingProxyType
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.examples import examples
from trackway.tools.define._assume import (
    Filling,
    asked_answer,
    assumed_note,
    check_rules,
    fill,
    served_schema,
)
from trackway.tools.define._errors import ToolDefinitionError

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["service", "window"],
    "properties": {
        "service": {"type": "string", "description": "Service name."},
        "window": {
            "type": "string",
            "enum": ["1h", "2h", "24h", "7d"],
            "description": "Look-back.",
        },
        "limit": {"type": "integer", "minimum": 1},
        "verbose": {"type": "boolean"},
        "ratio": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "filter": {"type": "object"},
        "either": {"type": ["string", "null"]},
        "untyped": {"description": "anything"},
    },
}


def _refused(rules: Any, period: Any = None, schema: Any = SCHEMA) -> str:
    with pytest.raises(ToolDefinitionError) as info:
        check_rules("search_logs", rules, schema, period)
    message = str(info.value)
    assert "'search_logs'" in message
    return message


# ---- check_rules: accepted ------------------------------------------------------------------


def test_check_rules_normalizes_assume_ask_and_period() -> None:
    rules, period = check_rules(
        "search_logs",
        {
            "window": {"assume": "2h"},
            "service": {"ask": "Which service?"},
            "limit": {"ask": "How many?", "choices": (10, 50)},
        },
        SCHEMA,
        {"argument": "window"},
    )
    assert rules == {
        "window": {"assume": "2h"},
        "service": {"ask": "Which service?"},
        "limit": {"ask": "How many?", "choices": [10, 50]},
    }
    assert period == {"argument": "window", "spelling": "lookback"}


def test_check_rules_nothing_declared_and_empty_rules_are_none() -> None:
    assert check_rules("t", None, SCHEMA, None) == (None, None)
    assert check_rules("t", {}, SCHEMA, None) == (None, None)


@pytest.mark.parametrize("spelling", ["lookback", "signed-lookback", "iso-range"])
def test_check_rules_keeps_each_period_spelling(spelling: str) -> None:
    _, period = check_rules(
        "t", {"window": {"assume": "2h"}}, SCHEMA, {"argument": "window", "spelling": spelling}
    )
    assert period == {"argument": "window", "spelling": spelling}


def test_check_rules_accepts_read_only_mappings_and_copies() -> None:
    rule = {"ask": "How many?", "choices": [10, 50]}
    rules, _ = check_rules("t", MappingProxyType({"limit": rule}), SCHEMA, None)
    assert rules is not None
    rules["limit"]["choices"].append(99)
    assert rule["choices"] == [10, 50]


def test_check_rules_accepts_number_and_boolean() -> None:
    rules, _ = check_rules(
        "t", {"ratio": {"assume": 0.5}, "verbose": {"assume": False}}, SCHEMA, None
    )
    assert rules == {"ratio": {"assume": 0.5}, "verbose": {"assume": False}}


# ---- check_rules: refused -------------------------------------------------------------------


@pytest.mark.parametrize("rules", [["window"], "window", 3])
def test_rules_not_a_mapping(rules: Any) -> None:
    assert "must map argument names to rules" in _refused(rules)


def test_rule_not_a_mapping() -> None:
    message = _refused({"window": "2h"})
    assert "'window'" in message and "the rule must be a mapping" in message


def test_argument_the_schema_does_not_offer() -> None:
    message = _refused({"windw": {"assume": "2h"}})
    assert "'windw'" in message and "do not offer" in message and "window" in message


def test_schema_without_properties_offers_nothing() -> None:
    assert "offered: none" in _refused({"window": {"assume": "2h"}}, schema={"type": "object"})


@pytest.mark.parametrize("argument", ["tags", "filter", "either", "untyped"])
def test_property_type_not_one_scalar(argument: str) -> None:
    message = _refused({argument: {"ask": "?"}})
    assert f"'{argument}'" in message and "exactly one of" in message


def test_property_schema_not_valid_json_schema() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": "one"}}}
    assert "not valid JSON Schema" in _refused({"n": {"assume": 1}}, schema=schema)


@pytest.mark.parametrize("rule", [{"assume": "2h", "ask": "Which?"}, {}, {"choices": ["2h"]}])
def test_both_or_neither_assume_and_ask(rule: dict[str, Any]) -> None:
    assert "exactly one of 'assume'" in _refused({"window": rule})


@pytest.mark.parametrize(
    ("key", "meant"), [("asume", "assume"), ("choises", "choices"), ("aks", "ask")]
)
def test_unknown_rule_key_suggests_the_spelling_meant(key: str, meant: str) -> None:
    message = _refused({"window": {key: "2h"}})
    assert f"unknown rule key {key!r}" in message and f"did you mean {meant!r}" in message


def test_unknown_rule_key_without_a_close_spelling() -> None:
    message = _refused({"window": {"assume": "2h", "zzz": 1}})
    assert "unknown rule key 'zzz'" in message and "did you mean" not in message


@pytest.mark.parametrize(
    ("argument", "value", "phrase"),
    [
        ("window", "3d", "one of"),
        ("window", 2, "a string"),
        ("limit", 0, "minimum"),
        ("limit", True, "an integer"),
        ("limit", 1.5, "an integer"),
        ("verbose", 1, "a boolean"),
        ("ratio", "0.5", "a number"),
    ],
)
def test_assume_value_the_property_rejects(argument: str, value: Any, phrase: str) -> None:
    message = _refused({argument: {"assume": value}})
    assert "the assume value is rejected by the property's own schema" in message
    assert phrase in message


@pytest.mark.parametrize("question", ["", "   ", None, 3])
def test_ask_not_a_non_empty_string(question: Any) -> None:
    assert "'ask' must be the question" in _refused({"window": {"ask": question}})


def test_choices_with_assume() -> None:
    assert "'choices' goes with 'ask'" in _refused({"window": {"assume": "2h", "choices": ["2h"]}})


@pytest.mark.parametrize("choices", [[], "2h", {"2h": 1}, None])
def test_choices_not_a_non_empty_list(choices: Any) -> None:
    message = _refused({"window": {"ask": "Which?", "choices": choices}})
    assert "'choices' must be a non-empty list" in message


def test_choice_the_property_rejects() -> None:
    message = _refused({"window": {"ask": "Which?", "choices": ["2h", "3d"]}})
    assert "choice '3d' is rejected" in message


def test_duplicate_choices() -> None:
    message = _refused({"window": {"ask": "Which?", "choices": ["2h", "7d", "2h"]}})
    assert "listed twice" in message


def test_duplicate_numbers_are_json_equal() -> None:
    message = _refused({"ratio": {"ask": "Which?", "choices": [1, 1.0]}})
    assert "listed twice" in message


@pytest.mark.parametrize("period", ["window", ["window"]])
def test_period_not_a_mapping(period: Any) -> None:
    assert "period must be a mapping" in _refused({"window": {"assume": "2h"}}, period)


def test_period_unknown_key_suggests() -> None:
    message = _refused({"window": {"assume": "2h"}}, {"argument": "window", "speling": "x"})
    assert "unknown period key 'speling'" in message and "did you mean 'spelling'" in message


@pytest.mark.parametrize("period", [{}, {"argument": ""}, {"argument": 3}])
def test_period_without_an_argument(period: Any) -> None:
    assert "period needs 'argument'" in _refused({"window": {"assume": "2h"}}, period)


def test_period_unknown_spelling_suggests() -> None:
    message = _refused({"window": {"assume": "2h"}}, {"argument": "window", "spelling": "lookbak"})
    assert "period spelling 'lookbak'" in message and "did you mean 'lookback'" in message


@pytest.mark.parametrize("rules", [{"limit": {"assume": 10}}, None, {}])
def test_period_on_an_argument_with_no_rule(rules: Any) -> None:
    message = _refused(rules, {"argument": "window"})
    assert "'window'" in message and "has no ask_or_assume rule" in message


def test_refusal_is_a_value_error_too() -> None:
    with pytest.raises(ValueError):
        check_rules("t", {"nope": {"assume": 1}}, SCHEMA, None)


# ---- served_schema --------------------------------------------------------------------------


def test_served_schema_exact_output_and_the_author_schema_is_untouched() -> None:
    schema = {
        "type": "object",
        "required": ["service", "window", "limit"],
        "properties": {
            "service": {"type": "string", "description": "Service name."},
            "window": {"type": "string", "enum": ["1h", "2h"], "description": "Look-back."},
            "limit": {"type": "integer"},
        },
    }
    before = copy.deepcopy(schema)
    rules = {"window": {"assume": "2h"}, "limit": {"ask": "How many?"}}
    served = served_schema(schema, rules)
    assert served == {
        "type": "object",
        "required": ["service"],
        "properties": {
            "service": {"type": "string", "description": "Service name."},
            "window": {
                "type": "string",
                "enum": ["1h", "2h"],
                "description": (
                    'Look-back. If left out, the tool\'s rule fills "2h", recorded as assumed.'
                ),
            },
            "limit": {"type": "integer", "description": "If left out, the person is asked."},
        },
    }
    assert schema == before
    served["properties"]["service"]["description"] = "changed"
    assert schema == before


def test_served_schema_drops_required_when_it_empties() -> None:
    schema = {
        "type": "object",
        "required": ["window"],
        "properties": {"window": {"type": "string"}},
    }
    served = served_schema(schema, {"window": {"assume": "2h"}})
    assert "required" not in served
    assert schema["required"] == ["window"]


def test_served_schema_values_are_json() -> None:
    schema = {"type": "object", "properties": {"v": {"type": "boolean"}, "n": {"type": "number"}}}
    served = served_schema(schema, {"v": {"assume": True}, "n": {"assume": 0.5}})
    assert served["properties"]["v"]["description"].endswith("fills true, recorded as assumed.")
    assert served["properties"]["n"]["description"].endswith("fills 0.5, recorded as assumed.")


def test_served_schema_without_rules_is_an_equal_copy() -> None:
    assert served_schema(SCHEMA, None) == SCHEMA
    assert served_schema(SCHEMA, None) is not SCHEMA
    assert served_schema(SCHEMA, {}) == SCHEMA


def test_served_schema_twice_says_the_rule_once() -> None:
    rules = {"window": {"assume": "2h"}}
    once = served_schema(SCHEMA, rules)
    assert served_schema(once, rules) == once


def test_served_schema_copies_read_only_mappings() -> None:
    inner: dict[str, Any] = {"type": "string"}
    schema = MappingProxyType({"type": "object", "properties": MappingProxyType({"w": inner})})
    served = served_schema(schema, {"w": {"assume": "x"}})
    assert served["properties"]["w"]["description"] == (
        'If left out, the tool\'s rule fills "x", recorded as assumed.'
    )
    assert inner == {"type": "string"}


# ---- fill -----------------------------------------------------------------------------------

RULES: dict[str, dict[str, Any]] = {
    "window": {"assume": "2h"},
    "limit": {"ask": "How many lines?", "choices": [10, 50]},
    "service": {"ask": "Which service?"},
}


def test_fill_assumes_a_missing_argument() -> None:
    args = {"service": "checkout", "limit": 10}
    filled = fill(args, RULES)
    assert isinstance(filled, Filling)
    assert filled.args == {"service": "checkout", "limit": 10, "window": "2h"}
    assert filled.assumed == [{"argument": "window", "value": "2h", "source": "default"}]
    assert filled.asks == [] and filled.defaults_sent == []
    assert args == {"service": "checkout", "limit": 10}


def test_fill_asks_and_does_not_fill() -> None:
    filled = fill({"window": "24h"}, RULES)
    assert filled.args == {"window": "24h"}
    assert filled.asks == [
        {"argument": "limit", "question": "How many lines?", "choices": [10, 50]},
        {"argument": "service", "question": "Which service?"},
    ]
    assert filled.assumed == [] and filled.defaults_sent == []


def test_fill_leaves_sent_values_alone() -> None:
    args = {"window": "7d", "limit": 50, "service": "api"}
    assert fill(args, RULES) == Filling(args, [], [], [])


def test_fill_a_sent_none_counts_as_sent() -> None:
    filled = fill({"window": None, "limit": None, "service": None}, RULES)
    assert filled.args == {"window": None, "limit": None, "service": None}
    assert filled.assumed == [] and filled.asks == [] and filled.defaults_sent == []


def test_fill_files_a_sent_default_as_default() -> None:
    filled = fill({"window": "2h", "limit": 10, "service": "api"}, RULES)
    assert filled.args == {"window": "2h", "limit": 10, "service": "api"}
    assert filled.assumed == []
    assert filled.defaults_sent == [
        {"argument": "window", "value": "2h", "source": "default", "proposed": "2h"}
    ]


def test_fill_true_is_not_the_integer_one() -> None:
    rules: dict[str, dict[str, Any]] = {"limit": {"assume": 1}, "verbose": {"assume": False}}
    assert fill({"limit": True, "verbose": 0}, rules).defaults_sent == []
    sent = fill({"limit": 1.0, "verbose": False}, rules).defaults_sent
    assert [row["argument"] for row in sent] == ["limit", "verbose"]
    assert sent[0]["proposed"] == 1.0 and sent[0]["value"] == 1


def test_fill_without_rules_is_a_copy() -> None:
    args = {"a": 1}
    filled = fill(args, None)
    assert filled == Filling({"a": 1}, [], [], [])
    assert filled.args is not args


# ---- assumed_note ---------------------------------------------------------------------------


def test_assumed_note_says_argument_tool_value_and_assumed() -> None:
    note = assumed_note("search_logs", [{"argument": "window", "value": "2h", "source": "default"}])
    assert note == (
        '[window was not in this search_logs call; it ran with "2h", the value the tool\'s '
        "rule assumes — recorded as assumed, not as the person's words.]"
    )


def test_assumed_note_one_sentence_per_argument() -> None:
    note = assumed_note(
        "t",
        [
            {"argument": "a", "value": 5, "source": "default"},
            {"argument": "b", "value": True, "source": "default"},
        ],
    )
    lines = note.split("\n")
    assert len(lines) == 2
    assert "it ran with 5," in lines[0] and "it ran with true," in lines[1]


def test_assumed_note_empty() -> None:
    assert assumed_note("t", []) == ""


# ---- asked_answer ---------------------------------------------------------------------------


def test_asked_answer_accepts_a_choice_and_a_free_answer() -> None:
    ask = {"argument": "window", "question": "Which?", "choices": ["2h", "7d"]}
    assert asked_answer(ask, "7d", SCHEMA["properties"]["window"]) == "7d"
    free = {"argument": "service", "question": "Which service?"}
    assert asked_answer(free, "checkout", SCHEMA["properties"]["service"]) == "checkout"


def test_asked_answer_refuses_an_answer_not_in_choices() -> None:
    ask = {"argument": "window", "question": "Which?", "choices": ["2h", "7d"]}
    with pytest.raises(ValueError) as info:
        asked_answer(ask, "24h", SCHEMA["properties"]["window"])
    assert str(info.value) == (
        'the answer for argument \'window\' must be one of ["2h","7d"]; got "24h"'
    )


def test_asked_answer_refuses_true_for_a_choice_of_one() -> None:
    ask = {"argument": "limit", "question": "How many?", "choices": [1, 10]}
    with pytest.raises(ValueError, match="one of"):
        asked_answer(ask, True, SCHEMA["properties"]["limit"])


def test_asked_answer_refuses_what_the_property_rejects() -> None:
    ask = {"argument": "limit", "question": "How many?"}
    with pytest.raises(ValueError) as info:
        asked_answer(ask, "ten", SCHEMA["properties"]["limit"])
    assert str(info.value) == "the answer for argument 'limit' must be an integer; got \"ten\""
    with pytest.raises(ValueError, match="minimum 1"):
        asked_answer(ask, 0, SCHEMA["properties"]["limit"])


def test_asked_answer_quotes_at_most_80_characters() -> None:
    ask = {"argument": "window", "question": "Which?"}
    with pytest.raises(ValueError) as info:
        asked_answer(ask, "x" * 500, SCHEMA["properties"]["window"])
    quoted = str(info.value).split("; got ", 1)[1]
    assert len(quoted) == 80 and quoted.endswith("…")
    assert "x" * 500 not in str(info.value)


# ---- properties -----------------------------------------------------------------------------


@st.composite
def _property(draw: st.DrawFn) -> tuple[dict[str, Any], st.SearchStrategy[Any]]:
    """A scalar property schema, and a strategy for values it accepts."""
    kind = draw(st.sampled_from(["string", "enum", "integer", "boolean"]))
    if kind == "string":
        return {"type": "string", "maxLength": 8}, st.text(max_size=8)
    if kind == "enum":
        options = draw(st.lists(st.text(max_size=4), min_size=1, max_size=4, unique=True))
        return {"type": "string", "enum": options}, st.sampled_from(options)
    if kind == "integer":
        low = draw(st.integers(-5, 5))
        return {"type": "integer", "minimum": low}, st.integers(low, low + 100)
    return {"type": "boolean"}, st.booleans()


@st.composite
def _case(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """An author's schema, valid rules on it, and a call that leaves out only ruled args."""
    names = draw(
        st.lists(st.from_regex(r"[a-z]{1,6}", fullmatch=True), min_size=1, max_size=6, unique=True)
    )
    properties: dict[str, Any] = {}
    values: dict[str, st.SearchStrategy[Any]] = {}
    for name in names:
        properties[name], values[name] = draw(_property())
    required = draw(st.lists(st.sampled_from(names), unique=True))
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    rules: dict[str, Any] = {}
    for name in draw(st.lists(st.sampled_from(names), unique=True)):
        if draw(st.booleans()):
            rules[name] = {"assume": draw(values[name])}
        else:
            rules[name] = {"ask": f"{name}?"}
    args: dict[str, Any] = {}
    for name in names:
        must_send = name in required and "assume" not in rules.get(name, {})
        if must_send or draw(st.booleans()):
            args[name] = draw(values[name])
    return schema, rules, args


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_case())
def test_filled_args_always_satisfy_the_author_schema(
    case: tuple[dict[str, Any], dict[str, Any], dict[str, Any]],
) -> None:
    schema, rules, args = case
    before = copy.deepcopy(schema)
    checked, _ = check_rules("t", rules, schema, None)
    assert checked == (rules or None)
    filled = fill(args, checked)
    jsonschema.Draft202012Validator(schema).validate(filled.args)
    assert {row["argument"] for row in filled.assumed} == {
        name for name, rule in rules.items() if "assume" in rule and name not in args
    }
    served = served_schema(schema, checked)
    assert not set(served.get("required", [])) & set(rules)
    assert served.get("required", None) != []
    assert schema == before
