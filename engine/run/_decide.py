"""``decide`` and ``select``: choose branches by rules and record why.

A rule's ``when`` is either a filter ``{key: {op: expected, ...}, ...}`` (every condition must
pass; a bare value means ``eq``) or a function of the scope. The evidence records, per rule,
each condition with the value read and whether it passed, or the keys a function read.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from ..core._errors import ConfigurationError
from ..core._state import MISSING
from ..core._values import FrozenDict, FrozenList

if TYPE_CHECKING:
    from ..chart._scope_api import Scope
    from ._scope import TrackedScope

__all__ = ["OPERATORS", "Decision", "Rule", "Selection", "decide", "select"]

_MAX_IN = 1000


def _in(actual: Any, expected: Any) -> bool:
    return actual in expected


def _not_in(actual: Any, expected: Any) -> bool:
    return actual not in expected


OPERATORS: Mapping[str, Callable[[Any, Any], bool]] = {
    "eq": operator.eq,
    "ne": operator.ne,
    "gt": operator.gt,
    "gte": operator.ge,
    "lt": operator.lt,
    "lte": operator.le,
    "in": _in,
    "not_in": _not_in,
}


@dataclass(frozen=True)
class Rule:
    """``when`` the condition holds, choose branch ``then``; ``label`` names the rule."""

    when: Mapping[str, Any] | Callable[[Scope], bool]
    then: str
    label: str | None = None


class Decision(NamedTuple):
    """What ``decide`` chose and the evidence for it (JSON)."""

    branch: str
    evidence: dict[str, Any]


class Selection(NamedTuple):
    """What ``select`` chose and the evidence for it (JSON)."""

    branches: list[str]
    evidence: dict[str, Any]


def _summary(value: Any) -> Any:
    """Evidence keeps scalars as they are and summarizes containers."""
    if isinstance(value, (FrozenList, list)):
        return {"$list": len(value)}
    if isinstance(value, (FrozenDict, dict)):
        return {"$dict": len(value)}
    if isinstance(value, (tuple, set, frozenset)):  # evidence is JSON: a list, sorted if a set
        return {"$list": len(value)}
    return value


def _as_rule(rule: Rule | Mapping[str, Any], index: int) -> Rule:
    if isinstance(rule, Rule):
        return rule
    if isinstance(rule, Mapping) and "when" in rule and "then" in rule:
        return Rule(rule["when"], rule["then"], rule.get("label"))
    raise ConfigurationError(
        f"rule {index} is {rule!r}; write Rule(when=..., then='branch', label=...) or "
        "{'when': ..., 'then': 'branch'}"
    )


def _evaluate(scope: Scope, rule: Rule, index: int) -> dict[str, Any]:
    ev: dict[str, Any] = {"rule": index, "then": rule.then, "label": rule.label}
    when = rule.when
    if callable(when):
        tracked = cast("TrackedScope", scope)  # the scope the engine gave the stage
        before = len(tracked._reads)
        try:
            matched = bool(when(scope))
        except Exception as exc:  # a failing predicate is a non-match, recorded as such
            ev["error"] = f"{type(exc).__name__}: {exc}"
            matched = False
        keys = list(tracked._reads)[before:]
        ev["inputs"] = [{"key": k, "value": _summary(tracked._peek(k))} for k in keys]
        ev["matched"] = matched
        return ev
    if not isinstance(when, Mapping):
        raise ConfigurationError(f"rule {index} ('when'): expected a filter dict or a function")
    conditions: list[dict[str, Any]] = []
    matched = bool(when)  # an empty filter never matches
    for key, spec in when.items():
        tests = spec.items() if isinstance(spec, Mapping) else [("eq", spec)]
        actual = scope.get(key, MISSING)
        for op_name, expected in tests:
            fn = OPERATORS.get(op_name)
            if fn is None:
                raise ConfigurationError(
                    f"rule {index} uses the unknown operator {op_name!r} on {key!r}; "
                    f"use one of {', '.join(OPERATORS)}"
                )
            if op_name in ("in", "not_in") and (
                not isinstance(expected, Sequence) or isinstance(expected, str)
            ):
                raise ConfigurationError(
                    f"rule {index}: {op_name!r} on {key!r} needs a list of values"
                )
            if op_name in ("in", "not_in") and len(expected) > _MAX_IN:
                raise ConfigurationError(
                    f"rule {index}: {op_name!r} lists more than {_MAX_IN} values"
                )
            cond: dict[str, Any] = {"key": key, "op": op_name, "expected": _summary(expected)}
            if actual is MISSING:
                cond.update(actual=None, present=False, passed=False)
            else:
                try:
                    passed = bool(fn(actual, expected))
                except TypeError as exc:
                    cond["error"] = str(exc)
                    passed = False
                cond.update(actual=_summary(actual), passed=passed)
            matched = matched and cond["passed"]
            conditions.append(cond)
    ev["conditions"] = conditions
    ev["matched"] = matched
    return ev


def decide(scope: Scope, rules: Sequence[Rule | Mapping[str, Any]], default: str) -> Decision:
    """Return the branch of the first rule that matches (else ``default``) with evidence.

    Every rule up to the match is evaluated and recorded; a decider stage that returns this
    puts the evidence in its commit and tells the recorders.
    """
    evidence: list[dict[str, Any]] = []
    for i, raw in enumerate(rules):
        rule = _as_rule(raw, i)
        ev = _evaluate(scope, rule, i)
        evidence.append(ev)
        if ev["matched"]:
            return Decision(rule.then, {"rules": evidence, "chosen": rule.then, "default": False})
    return Decision(default, {"rules": evidence, "chosen": default, "default": True})


def select(scope: Scope, rules: Sequence[Rule | Mapping[str, Any]]) -> Selection:
    """Return the branches of every rule that matches (each once, in rule order)."""
    evidence: list[dict[str, Any]] = []
    chosen: dict[str, None] = {}
    for i, raw in enumerate(rules):
        rule = _as_rule(raw, i)
        ev = _evaluate(scope, rule, i)
        evidence.append(ev)
        if ev["matched"]:
            chosen[rule.then] = None
    branches = list(chosen)
    return Selection(branches, {"rules": evidence, "selected": branches})
