"""What a tool call came to: its status, what the model reads, and the argument checks.

Statuses are one closed vocabulary (:data:`TOOL_RESULT_STATUSES`). A tool may declare its
own outcome by returning an envelope ``{"content": ..., "effects": [...], "status": ...}``:
the ``effects`` list is the marker, so a domain object that happens to have ``content`` and
``status`` stays data (and trackway warns once about the likely miss).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any, Literal

import jsonschema
import orjson
import referencing.exceptions

from trackway.engine import TrackwayWarning

__all__ = [
    "TOOL_RESULT_STATUSES",
    "UNPARSED_ARGUMENTS",
    "RecordedOutcome",
    "ToolResultStatus",
    "argument_errors",
    "read_envelope",
    "unparsed",
]

ToolResultStatus = Literal[
    "success", "failure", "denied", "invalid", "partial", "pending", "absent"
]
TOOL_RESULT_STATUSES: tuple[str, ...] = (
    "success",
    "failure",
    "denied",
    "invalid",
    "partial",
    "pending",
    "absent",
)
UNPARSED_ARGUMENTS = "_unparsed_arguments"
"""The key a provider files arguments under when they were not a JSON object."""

_QUOTE = 80
_warned: set[str] = set()


def unparsed(args: Mapping[str, Any]) -> bool:
    """Whether ``args`` are arguments a provider could not read as a JSON object (a malformed
    or unfinished call): such a call never runs, whatever the validation mode."""
    return len(args) == 1 and isinstance(args.get(UNPARSED_ARGUMENTS), str)


def _quote(value: Any) -> str:
    text = orjson.dumps(value, default=str).decode()
    return text if len(text) <= _QUOTE else text[: _QUOTE - 1] + "…"


def _describe(error: jsonschema.ValidationError) -> str:
    where = "/".join(str(p) for p in error.absolute_path) or "arguments"
    kind = error.validator
    if kind in ("required", "additionalProperties", "dependentRequired"):
        return f"{where}: {error.message}"  # names keys, not values
    expected = orjson.dumps(error.validator_value, default=str).decode()
    if len(expected) > _QUOTE:
        expected = expected[: _QUOTE - 1] + "…"
    return f"{where}: expected {kind} {expected}, got {_quote(error.instance)}"


def argument_errors(validator: jsonschema.Validator, args: Any) -> list[str]:
    """Each failing path of ``args`` and what was expected, quoting at most 80 characters
    of an offending value; empty when the arguments are valid. A check that cannot finish
    (arguments nested deeper than Python's stack lets a recursive schema follow, or a
    ``$ref`` that does not resolve in a schema ``define_tool`` never saw) is an error of
    this call, never of the run."""
    try:
        found = sorted(validator.iter_errors(args), key=lambda e: [str(p) for p in e.absolute_path])
    except RecursionError:
        return [
            "arguments: nested too deeply to check against the schema; send them with fewer "
            "levels of nesting"
        ]
    except referencing.exceptions.Unresolvable as exc:
        return [
            f"arguments: could not be checked: the tool's schema has a $ref {exc.ref!r} "
            "that does not resolve; the tool cannot be called until its schema is fixed"
        ]
    return [_describe(e) for e in found]


def read_envelope(tool: str, result: Any) -> tuple[Any, str | None, list[Any]] | None:
    """``(content, status, effects)`` when ``result`` is an envelope, else ``None``.

    An envelope is a dict with ``content`` and an ``effects`` list (and, optionally, a
    ``status`` from :data:`TOOL_RESULT_STATUSES`). A dict with ``content`` and ``status``
    but no ``effects`` is data; the first time a tool returns one, a
    :class:`~trackway.engine.TrackwayWarning` says how to mark it.
    """
    if not isinstance(result, Mapping) or "content" not in result:
        return None
    effects = result.get("effects")
    if not isinstance(effects, list):
        if "status" in result and "effects" not in result and tool not in _warned:
            _warned.add(tool)
            warnings.warn(
                f"tool {tool!r} returned {{'content', 'status'}} without 'effects', so it is "
                "plain data, not an envelope: the status is not taken. Add 'effects': [] to "
                "declare the outcome.",
                TrackwayWarning,
                stacklevel=2,
            )
        return None
    status = result.get("status")
    if status is not None and status not in TOOL_RESULT_STATUSES:
        raise ValueError(
            f"tool {tool!r} returned an envelope with status {status!r}; use one of "
            f"{', '.join(TOOL_RESULT_STATUSES)}"
        )
    return result["content"], status, list(effects)


class RecordedOutcome:
    """A call's outcome as a recording kept it, handed back by a replay: served as it was,
    with nothing measured, cut or added again."""

    __slots__ = ("content", "declared", "row", "runs")

    def __init__(
        self,
        content: str,
        row: Mapping[str, Any],
        declared: Mapping[str, Any] | None = None,
        runs: tuple[dict[str, Any], ...] = (),
    ) -> None:
        self.content = content
        self.row = dict(row)
        self.declared = None if declared is None else dict(declared)
        self.runs = runs
