"""Reading provider payloads: tool-call arguments, and fields of the shape a parser expects.

A parser that meets a field of the wrong shape raises :class:`MalformedPayload` naming it;
the HTTP provider turns that into a :class:`ProviderResponseError` quoting the payload.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = [
    "SHAPE_ERRORS",
    "UNPARSED_ARGUMENTS",
    "MalformedPayload",
    "optional_int",
    "optional_list",
    "optional_object",
    "optional_str",
    "parse_arguments",
    "required_object",
    "required_str",
    "shared_id_arguments",
]

UNPARSED_ARGUMENTS = "_unparsed_arguments"
SHAPE_ERRORS = (TypeError, KeyError, AttributeError, IndexError, ValueError)
"""What a parser raises on a payload it did not expect (pydantic's errors are ValueErrors)."""


def parse_arguments(raw: str | None) -> dict[str, Any]:
    """Tool-call arguments from the JSON text the model wrote.

    Empty text or ``null`` is ``{}``. Text that is not a JSON object is kept verbatim as
    ``{"_unparsed_arguments": raw}``: the model wrote it, so it is data, not a provider
    failure; argument validation then tells the model what to fix.
    """
    if raw is None or not raw.strip():
        return {}
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {UNPARSED_ARGUMENTS: raw}
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    return {UNPARSED_ARGUMENTS: raw}


def shared_id_arguments(raw: str) -> dict[str, Any]:
    """The arguments of one of several streamed calls that share an id, kept as written.

    Some gateways split one call into blocks that share its id, each with a piece of the
    arguments; the pieces are kept verbatim (``{}`` for none) so the agent can join them
    exactly (``_tool_ids``); pieces that turn out to be whole calls are parsed there.
    """
    return {UNPARSED_ARGUMENTS: raw} if raw else {}


# -- the shape of a payload -------------------------------------------------------------------


class MalformedPayload(Exception):
    """A parser met a payload of the wrong shape; ``why`` names the field.

    Never leaves the provider: :class:`HTTPProvider` turns it into a
    :class:`ProviderResponseError` that names the event and quotes the payload.
    """

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _wrong(where: str, value: object, expected: str) -> MalformedPayload:
    return MalformedPayload(f"{where} is {_kind(value)}, not {expected}")


def optional_object(value: object, where: str) -> dict[str, Any] | None:
    """``value`` if it is a JSON object, ``None`` if it is missing; else malformed."""
    if value is None or isinstance(value, dict):
        return value
    raise _wrong(where, value, "an object")


def required_object(value: object, where: str) -> dict[str, Any]:
    """``value`` if it is a JSON object; else (missing too) malformed."""
    if isinstance(value, dict):
        return value
    raise _wrong(where, value, "an object")


def required_str(value: object, where: str) -> str:
    """``value`` if it is a string; else (missing too) malformed."""
    if isinstance(value, str):
        return value
    raise _wrong(where, value, "a string")


def optional_list(value: object, where: str) -> list[Any]:
    """``value`` if it is a JSON list, ``[]`` if it is missing; else malformed."""
    if value is None:
        return []
    if isinstance(value, list):
        return value
    raise _wrong(where, value, "a list")


def optional_str(value: object, where: str) -> str | None:
    """``value`` if it is a string, ``None`` if it is missing; else malformed."""
    if value is None or isinstance(value, str):
        return value
    raise _wrong(where, value, "a string")


def optional_int(value: object, where: str) -> int | None:
    """``value`` if it is an integer, ``None`` if it is missing; else malformed."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise _wrong(where, value, "an integer")


# -- scrubbing the API key ----------------------------------------------------------------------
