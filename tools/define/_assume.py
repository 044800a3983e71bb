"""``ask_or_assume``: a default nobody chose, declared as a rule on a tool; and ``period=``.

A default buried in ``execute`` answers in a window nobody picked. Declared as a rule, the
library fills it, files it as assumed and tells the model. This module is the pure part.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import jsonschema
import orjson

from trackway.engine.core._values import SCALAR_TYPES as _PYTHON_SCALARS

from ._errors import ToolDefinitionError
from ._schema_refs import local_validator, schema_fault

__all__ = ["Filling", "asked_answer", "assumed_note", "check_rules", "fill", "served_schema"]

_SCALAR_TYPES = ("string", "number", "integer", "boolean")
_RULE_KEYS = ("assume", "ask", "choices")
_PERIOD_KEYS = ("argument", "spelling")
_SPELLINGS = ("lookback", "signed-lookback", "iso-range")
_QUOTE_MAX = 80
_META = jsonschema.Draft202012Validator(jsonschema.Draft202012Validator.META_SCHEMA)


class Filling(NamedTuple):
    """One call's arguments after the rules: what runs, and what to file about it."""

    args: dict[str, Any]
    assumed: list[dict[str, Any]]
    asks: list[dict[str, Any]]
    defaults_sent: list[dict[str, Any]]


def check_rules(
    tool_name: str,
    rules: Mapping[str, Any] | None,
    schema: Mapping[str, Any],
    period: Mapping[str, Any] | None,
) -> tuple[dict[str, dict[str, Any]] | None, dict[str, Any] | None]:
    """Check ``ask_or_assume`` and ``period`` where they are written (so a wrong rule never
    reaches a model); return normalized copies, ``None`` for no rules or no period."""
    where = f"tool {tool_name!r}"
    if rules is not None and not isinstance(rules, Mapping):
        raise ToolDefinitionError(
            f"{where}: ask_or_assume must map argument names to rules, e.g. "
            '{"window": {"assume": "2h"}}, not ' + type(rules).__name__
        )
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    properties = properties if isinstance(properties, Mapping) else {}
    out = {name: _rule(where, name, rule, properties) for name, rule in (rules or {}).items()}
    checked_period = None if period is None else _period(where, period, out)
    return (out or None), checked_period


def _rule(where: str, name: Any, rule: Any, properties: Mapping[str, Any]) -> dict[str, Any]:
    """One argument's rule, checked against the property the schema offers for it."""
    if not isinstance(name, str) or name not in properties:
        offered = ", ".join(sorted(str(p) for p in properties)) or "none"
        raise ToolDefinitionError(
            f"{where}: ask_or_assume names {name!r}, which the input schema's properties do "
            f"not offer (offered: {offered}); rule an argument the schema has, or add it"
        )
    arg = f"{where}, argument {name!r}"
    if not isinstance(rule, Mapping):
        raise ToolDefinitionError(
            f"{arg}: the rule must be a mapping, {{'assume': value}} or "
            f"{{'ask': 'question', 'choices': [...]}}, not {type(rule).__name__}"
        )
    prop = properties[name]
    kind = prop.get("type") if isinstance(prop, Mapping) else None
    if not isinstance(kind, str) or kind not in _SCALAR_TYPES:
        raise ToolDefinitionError(
            f"{arg}: a rule needs a property whose type is exactly one of "
            f"{', '.join(_SCALAR_TYPES)} (found type {kind!r}); give it one, or drop the rule"
        )
    if (bad := jsonschema.exceptions.best_match(_META.iter_errors(dict(prop)))) is not None:
        raise ToolDefinitionError(f"{arg}: the property is not valid JSON Schema: {bad.message}")
    if (fault := schema_fault(prop)) is not None:  # values and answers are checked on it alone
        raise ToolDefinitionError(
            f"{arg}: a ruled property is checked on its own, and on its own it {fault}; write "
            "the property out in place"
        )
    validator = local_validator(prop)
    _known_keys(arg, "rule", rule, _RULE_KEYS)
    if ("assume" in rule) == ("ask" in rule):
        raise ToolDefinitionError(
            f"{arg}: a rule takes exactly one of 'assume' (the value to fill) or 'ask' "
            "(the question for the person), not both or neither"
        )
    if "assume" in rule:
        if "choices" in rule:
            raise ToolDefinitionError(f"{arg}: 'choices' goes with 'ask', not 'assume'; drop it")
        value = rule["assume"]
        _must_fit(arg, "the assume value", value, validator)
        return {"assume": value}
    question = rule["ask"]
    if not isinstance(question, str) or not question.strip():
        raise ToolDefinitionError(
            f"{arg}: 'ask' must be the question (non-empty), not {question!r}"
        )
    out: dict[str, Any] = {"ask": question}
    if "choices" in rule:
        choices = rule["choices"]
        if not isinstance(choices, (list, tuple)) or not choices:
            raise ToolDefinitionError(f"{arg}: 'choices' must be a non-empty list, or left out")
        for i, choice in enumerate(choices):
            _must_fit(arg, f"choice {choice!r}", choice, validator)
            if any(_same(choice, earlier) for earlier in choices[:i]):
                raise ToolDefinitionError(
                    f"{arg}: choice {choice!r} is listed twice; list each choice once"
                )
        out["choices"] = list(choices)
    return out


def _must_fit(arg: str, what: str, value: Any, validator: jsonschema.Validator) -> None:
    """Refuse a value the property's own schema rejects (a default must be a legal call)."""
    error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if error is not None:
        raise ToolDefinitionError(
            f"{arg}: {what} is rejected by the property's own schema "
            f"({_expected(error)} expected); use a value a call could send"
        )


def _known_keys(where: str, what: str, given: Mapping[str, Any], known: tuple[str, ...]) -> None:
    """Refuse a key nobody reads (a misspelt ``asume`` would silently be no rule)."""
    for key in given:
        if key not in known:
            raise ToolDefinitionError(
                f"{where}: unknown {what} key {key!r}; {_meant(key, known)}"
                f"a {what} takes {', '.join(known)}"
            )


def _meant(word: Any, known: tuple[str, ...]) -> str:
    """``"did you mean 'x'? "`` for the closest known spelling, or nothing."""
    close = difflib.get_close_matches(str(word), known, n=1)
    return f"did you mean {close[0]!r}? " if close else ""


def _period(where: str, period: Any, rules: Mapping[str, Any]) -> dict[str, Any]:
    """``period={"argument": name, "spelling": ...}``: which ruled argument bounds the period."""
    if not isinstance(period, Mapping):
        raise ToolDefinitionError(
            f"{where}: period must be a mapping like "
            '{"argument": "window", "spelling": "lookback"}, not ' + type(period).__name__
        )
    _known_keys(where, "period", period, _PERIOD_KEYS)
    argument = period.get("argument")
    if not isinstance(argument, str) or not argument:
        raise ToolDefinitionError(f"{where}: period needs 'argument', the argument's name")
    spelling = period.get("spelling", "lookback")
    if spelling not in _SPELLINGS:
        raise ToolDefinitionError(
            f"{where}: period spelling {spelling!r} is not known; "
            f"{_meant(spelling, _SPELLINGS)}use one of {', '.join(_SPELLINGS)}"
        )
    if argument not in rules:
        raise ToolDefinitionError(
            f"{where}: period names argument {argument!r}, which has no ask_or_assume rule; "
            f"add a rule for it (assume or ask) so the period is never one nobody chose"
        )
    return {"argument": argument, "spelling": spelling}


def served_schema(
    schema: Mapping[str, Any], rules: Mapping[str, Mapping[str, Any]] | None
) -> dict[str, Any]:
    """The input schema the model is served: ruled arguments leave ``required`` and their
    descriptions say the rule. The author's schema is copied, never edited."""
    out: dict[str, Any] = _copy(schema)
    if not rules:
        return out
    if isinstance(out.get("required"), (list, tuple)):
        out["required"] = [name for name in out["required"] if name not in rules]
        if not out["required"]:
            del out["required"]
    properties = out.get("properties")
    if not isinstance(properties, dict):
        return out
    for name, rule in rules.items():
        prop = properties.get(name)
        if not isinstance(prop, dict):
            continue
        sentence = "If left out, the person is asked."
        if "assume" in rule:
            sentence = (
                f"If left out, the tool's rule fills {_json(rule['assume'])}, recorded as assumed."
            )
        said = str(prop.get("description") or "").rstrip()
        if not said.endswith(sentence):  # served twice, said once
            prop["description"] = f"{said} {sentence}".lstrip()
    return out


def fill(args: Mapping[str, Any], rules: Mapping[str, Mapping[str, Any]] | None) -> Filling:
    """Apply the rules to one call's arguments; ``args`` itself is never changed.

    Only an absent key is missing (a sent ``None`` was sent). A sent value equal to the
    assume value is filed as a default too: copying it from the description is not a choice.
    """
    out = dict(args)
    filling = Filling(out, [], [], [])
    for name, rule in (rules or {}).items():
        if name in args:
            if "assume" in rule and _same(args[name], rule["assume"]):
                row = {"argument": name, "value": rule["assume"], "source": "default"}
                filling.defaults_sent.append({**row, "proposed": args[name]})
        elif "assume" in rule:  # a scalar (check_rules): nothing to copy
            out[name] = rule["assume"]
            filling.assumed.append({"argument": name, "value": out[name], "source": "default"})
        else:
            ask: dict[str, Any] = {"argument": name, "question": rule["ask"]}
            if "choices" in rule:
                ask["choices"] = list(rule["choices"])
            filling.asks.append(ask)
    return filling


def assumed_note(tool_name: str, assumed: Sequence[Mapping[str, Any]]) -> str:
    """The past-tense note the model reads after the tool's own text: what was filled, by
    which rule, and that it is assumed (one bracketed sentence per argument)."""
    return "\n".join(
        f"[{row['argument']} was not in this {tool_name} call; it ran with "
        f"{_json(row['value'])}, the value the tool's rule assumes — recorded as assumed, "
        "not as the person's words.]"
        for row in assumed
    )


def asked_answer(ask: Mapping[str, Any], answer: Any, property_schema: Mapping[str, Any]) -> Any:
    """Check a person's answer to an ask (a listed choice when there are choices, and valid for
    the property); return it. ``ValueError`` says the argument, what was expected and the answer.
    """
    argument = ask.get("argument", "?")
    choices = ask.get("choices")
    if choices is not None and not any(_same(answer, choice) for choice in choices):
        raise ValueError(
            f"the answer for argument {argument!r} must be one of {_json(list(choices))}; "
            f"got {_quote(answer)}"
        )
    validator = local_validator(property_schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(answer))
    if error is not None:
        raise ValueError(
            f"the answer for argument {argument!r} must be {_expected(error)}; got {_quote(answer)}"
        )
    return answer


def _same(a: Any, b: Any) -> bool:
    """JSON equality: ``True`` is not ``1`` (Python's ``==`` says it is); ``1`` is ``1.0``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    return bool(a == b)


def _expected(error: jsonschema.ValidationError) -> str:
    """What a failed schema keyword wanted, in a few words (never the offending value)."""
    keyword, want = error.validator, error.validator_value
    if keyword == "type" and isinstance(want, str):
        return f"{'an' if want[0] in 'aeiou' else 'a'} {want}"
    if keyword == "enum":
        return f"one of {_json(want)}"
    if keyword == "const":
        return f"exactly {_json(want)}"
    return f"a value meeting {keyword} {_json(want)}"


def _json(value: Any) -> str:
    """A value as JSON text (``repr`` for what JSON cannot say)."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return repr(value)


def _quote(value: Any) -> str:
    """A value as JSON text, cut to at most 80 characters (a person's answer may be long)."""
    text = _json(value)
    return text if len(text) <= _QUOTE_MAX else text[: _QUOTE_MAX - 1] + "…"


def _copy(value: Any) -> Any:
    """A deep copy that turns read-only mappings into dicts (``deepcopy`` refuses them)."""
    if type(value) in _PYTHON_SCALARS:  # deepcopy returns these as they are, at a call's cost
        return value
    if isinstance(value, Mapping):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_copy(item) for item in value)
    return copy.deepcopy(value)
