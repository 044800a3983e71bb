"""A history entry as the request's :class:`Message` and its canonical bytes.

Each entry was decoded once, when it was written, and is read here without another copy.
An entry of the shapes the loop writes (a tool result, an answer asking for calls) becomes
a message without re-validation, by its written shape; any other of the library's shape
takes a field-by-field check; anything else is validated as before (``message_of``).
"""

from __future__ import annotations

from typing import Any

import orjson
from pydantic import BaseModel

from trackway.engine import thaw

from ._messages import Message, ToolCall, canonical_json

__all__ = ["args_copy", "fields_set", "message_of", "trusted"]

_MESSAGE_KEYS = frozenset(Message.model_fields)
_CALL_KEYS = frozenset(ToolCall.model_fields)
_ROLES = frozenset(("user", "assistant", "tool"))
_new = object.__new__
# the slots of every pydantic model, set through their descriptors (no attribute lookup)
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


def trusted(cls: type[Any], fields: dict[str, Any], fields_set: set[str]) -> Any:
    """An instance of the pydantic model ``cls`` holding ``fields`` as they are (every field
    present, already of its type), ``fields_set`` its set fields (from :func:`fields_set`):
    ``model_construct`` without its per-field pass, for values the library built or checked
    itself."""
    instance = _new(cls)
    _set_dict(instance, fields)
    _set_fields_set(instance, fields_set)
    _set_extra(instance, None)
    _set_private(instance, None)
    return instance


_FIELDS_SETS: dict[tuple[str, ...], set[str]] = {}


def fields_set(given: Any) -> set[str]:
    """One set per shape of set fields, shared by the instances of that shape: a frozen
    model never changes it (``model_copy`` copies it first), and the run keeps no set per
    message for the garbage collector to walk."""
    key = tuple(given)
    known = _FIELDS_SETS.get(key)
    if known is None:
        known = _FIELDS_SETS[key] = set(key)
    return known


def message_of(entry: Any) -> tuple[Message, bytes]:
    """A history entry as a :class:`Message` and its piece of the request's canonical JSON
    (the message as the request serializes it: defaults filled in, ``None`` left out).

    The entry is the engine's decoded copy and is only read: the message gets copies of the
    arguments it holds. An entry of any shape but the one the library writes (plain str
    fields, known keys, ``tool_calls`` a list of ``{id, name, args}``) is validated, raising
    what validation raises."""
    if type(entry) is dict and tuple(entry) == _TOOL_RESULT_KEYS:  # a tool result, as written
        role, content, call_id, name = entry.values()
        if role == "tool" and type(content) is str and type(call_id) is str and type(name) is str:
            result = {
                "role": role,
                "content": content,
                "tool_calls": None,
                "tool_call_id": call_id,
                "name": name,
                "thinking": None,
                "origin": None,
            }
            return trusted(Message, result, _TOOL_RESULT_SET), canonical_json(entry)
    if type(entry) is dict and tuple(entry) == _ASKING_KEYS:  # calls, as the loop writes them
        asked = _asked_calls(entry)
        if asked is not None:
            result = {
                "role": "assistant",
                "content": entry["content"],
                "tool_calls": asked,
                "tool_call_id": None,
                "name": None,
                "thinking": None,
                "origin": None,
            }
            return trusted(Message, result, _ASKING_SET), canonical_json(entry)
    fields = _trusted_fields(entry)
    if fields is None:
        message = Message.model_validate(thaw(entry))
        return message, canonical_json(message.model_dump(mode="json", exclude_none=True))
    calls = fields["tool_calls"]
    # the entry as the request serializes it, unless it holds a None or a call without args
    wire = entry
    if "content" not in entry or None in entry.values():
        wire = {k: v for k, v in fields.items() if v is not None}
    if calls is not None:
        built = []
        for c in calls:
            args = c.get("args")
            if args is None:
                args = _EMPTY
                if wire is entry:
                    wire = {k: v for k, v in fields.items() if v is not None}
            copied = {"id": c["id"], "name": c["name"], "args": args_copy(args)}
            built.append(trusted(ToolCall, copied, fields_set(c)))
        if wire is not entry:
            wire["tool_calls"] = [
                {"id": c["id"], "name": c["name"], "args": c.get("args", _EMPTY)} for c in calls
            ]
        fields["tool_calls"] = tuple(built)
    return trusted(Message, fields, fields_set(entry)), canonical_json(wire)


_EMPTY: dict[str, Any] = {}
_TOOL_RESULT_KEYS = ("role", "content", "tool_call_id", "name")
_ASKING_KEYS = ("role", "content", "tool_calls")
_CALL_SHAPE = ("id", "name", "args")
_TOOL_RESULT_SET = fields_set(_TOOL_RESULT_KEYS)
_ASKING_SET = fields_set(_ASKING_KEYS)
_CALL_SET = fields_set(_CALL_SHAPE)


def _asked_calls(entry: dict[str, Any]) -> tuple[ToolCall, ...] | None:
    """The calls of an assistant entry of the shape the loop writes (``content`` a str, each
    call exactly ``{id, name, args}`` of str, str and dict) as trusted :class:`ToolCall`
    objects; ``None`` for any other."""
    calls = entry["tool_calls"]
    if entry["role"] != "assistant" or type(entry["content"]) is not str or type(calls) is not list:
        return None
    built = []
    for c in calls:
        if type(c) is not dict or tuple(c) != _CALL_SHAPE:
            return None
        call_id, name, args = c.values()
        if type(call_id) is not str or type(name) is not str or type(args) is not dict:
            return None
        copied = {"id": call_id, "name": name, "args": args_copy(args)}
        built.append(trusted(ToolCall, copied, _CALL_SET))
    return tuple(built)


def args_copy(args: dict[str, Any]) -> dict[str, Any]:
    """A plain copy of a committed call's arguments (plain JSON, never the engine's own
    dict): one level when they hold no list or dict."""
    for value in args.values():
        if type(value) is dict or type(value) is list:
            copied: dict[str, Any] = orjson.loads(orjson.dumps(args))
            return copied
    return dict(args)


def _trusted_fields(entry: Any) -> dict[str, Any] | None:
    """The fields of a :class:`Message` for ``entry`` when it is of the shape the library
    writes, exactly as validation would make them; ``None`` for anything else."""
    if type(entry) is not dict or not _MESSAGE_KEYS.issuperset(entry) or "thinking" in entry:
        return None  # reasoning blocks take the validated path
    get = entry.get
    role = get("role")
    content = get("content", "")
    if type(role) is not str or role not in _ROLES or type(content) is not str:
        return None
    call_id = get("tool_call_id")
    name = get("name")
    if (call_id is not None and type(call_id) is not str) or (
        name is not None and type(name) is not str
    ):
        return None
    origin = get("origin")
    if origin is not None and origin != "library":
        return None
    calls = get("tool_calls")
    if calls is not None:
        if type(calls) is not list:
            return None
        for c in calls:
            if (
                type(c) is not dict
                or not _CALL_KEYS.issuperset(c)
                or type(c.get("id")) is not str
                or type(c.get("name")) is not str
                or type(c.get("args", _EMPTY)) is not dict
            ):
                return None
    return {
        "role": role,
        "content": content,
        "tool_calls": calls,
        "tool_call_id": call_id,
        "name": name,
        "thinking": None,
        "origin": origin,
    }
