"""The request options an agent sends with every call, checked once where they are given.

They are given on ``Agent.create(...)`` or returned by ``configure()`` for one run; ``seed``
commits them to ``settings``, ``assemble`` carries them into the request (and its hash), and
each provider puts them on its wire. One checker serves both places, so a bad value is
refused with the same message before anything runs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from ..messages._errors import AgentBuildError
from ._caching import check_cache

__all__ = ["REQUEST_OPTIONS", "TOOL_CHOICES", "check_request_options", "check_tool_choice"]

REQUEST_OPTIONS = (
    "temperature",
    "max_tokens",
    "tool_choice",
    "seed",
    "top_p",
    "stop",
    "response_format",
    "extra_body",
    "thinking_budget",
    "cache",
)
"""The settings besides ``model`` that reach the request, in the order they are documented."""

TOOL_CHOICES = ("auto", "required", "none")


def _number(where: str, name: str, value: object, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise AgentBuildError(f"{where}{name}={value!r}: use a number from {low} to {high}")
    number = float(value)
    if not (math.isfinite(number) and low <= number <= high):
        raise AgentBuildError(f"{where}{name}={value!r}: use a number from {low} to {high}")
    return number


def _json_object(where: str, name: str, value: object, example: str) -> dict[str, Any]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise AgentBuildError(f"{where}{name}={value!r}: use a dict with str keys, e.g. {example}")
    try:
        data = orjson.loads(orjson.dumps(dict(value)))
    except (TypeError, orjson.JSONEncodeError) as exc:
        raise AgentBuildError(f"{where}{name}: the dict must be plain JSON ({exc})") from None
    if data != dict(value):  # e.g. a NaN or a tuple would not come back the same
        raise AgentBuildError(f"{where}{name}: the dict must be plain JSON (it did not round-trip)")
    return dict(data)


def check_request_options(values: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The options in ``values`` that are set, as plain JSON values; a bad one is an
    :class:`AgentBuildError` naming it and the fix (``where`` says where it was given)."""
    out: dict[str, Any] = {}
    for name in REQUEST_OPTIONS:
        value = values.get(name)
        if value is None:
            continue
        if name == "temperature":
            out[name] = _number(where, name, value, 0.0, 2.0)
        elif name == "top_p":
            out[name] = _number(where, name, value, 0.0, 1.0)
        elif name in ("max_tokens", "seed"):
            if isinstance(value, bool) or not isinstance(value, int):
                raise AgentBuildError(f"{where}{name}={value!r}: use a whole number")
            if name == "max_tokens" and value < 1:
                raise AgentBuildError(f"{where}max_tokens={value!r}: use a positive whole number")
            if not -(2**63) <= value < 2**63:
                raise AgentBuildError(f"{where}{name}={value!r}: use a number that fits 64 bits")
            out[name] = value
        elif name == "tool_choice":
            if not isinstance(value, str) or not value:
                raise AgentBuildError(
                    f"{where}tool_choice={value!r}: use 'auto', 'required', 'none' or the name "
                    "of one of the agent's tools"
                )
            out[name] = value
        elif name == "stop":
            stops = [value] if isinstance(value, str) else value
            if (
                not isinstance(stops, (list, tuple))
                or not stops
                or not all(isinstance(s, str) and s for s in stops)
            ):
                raise AgentBuildError(
                    f"{where}stop={value!r}: use a non-empty str or a list of them, e.g. "
                    "stop=['\\nObservation:']"
                )
            out[name] = list(stops)
        elif name == "thinking_budget":
            out[name] = check_thinking_budget(value, where)
        elif name == "cache":
            out[name] = check_cache(value, where)
        elif name == "response_format":
            out[name] = _json_object(where, name, value, "{'type': 'json_object'}")
        else:  # extra_body
            extra = _json_object(where, name, value, "{'repeat_penalty': 1.1}")
            clash = sorted(set(extra) & {"model", "messages", "tools", "stream", "system"})
            if clash:
                raise AgentBuildError(
                    f"{where}extra_body sets {clash}, which the request itself carries; set "
                    "those through the agent (model=, tools, stream=), not extra_body"
                )
            out[name] = extra
    return out


EFFORT_WORDS = ("low", "medium", "high")


def check_thinking_budget(value: object, where: str) -> int | str:
    """A reasoning budget: a positive whole number of tokens or an effort word."""
    if isinstance(value, str) and value in EFFORT_WORDS:
        return value
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**31:
        raise AgentBuildError(
            f"{where}thinking_budget={value!r}: use a positive whole number of tokens (e.g. "
            "2048) or an effort word ('low', 'medium', 'high')"
        )
    return value


def check_tool_choice(choice: str | None, tools: Iterable[str], where: str) -> None:
    """A ``tool_choice`` naming a tool must name one of the agent's tools."""
    names = list(tools)
    if choice is None or choice in TOOL_CHOICES:
        if choice in ("required",) and not names:
            raise AgentBuildError(
                f"{where}tool_choice='required' but the agent has no tools; add a tool or drop "
                "tool_choice"
            )
        return
    if choice not in names:
        offered = ", ".join(repr(n) for n in names) or "none"
        raise AgentBuildError(
            f"{where}tool_choice={choice!r} is not 'auto', 'required', 'none' or one of the "
            f"agent's tools ({offered})"
        )
