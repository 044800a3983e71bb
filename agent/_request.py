"""Request assembly: the one pure function from committed state to the model request.

``call-llm`` and ``served_at`` both use :func:`assemble`, so a request rebuilt from the log
is the request that was sent. Hashes are kept running over per-message pieces during a run,
so a call costs O(new messages), not O(history).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from trackway.engine import thaw

from ._messages import LLMRequest, Message, ToolSpec, canonical_json, sha256
from ._window import standing_in_message

__all__ = ["Assembled", "MessageCache", "assemble", "receipt_for"]


class MessageCache:
    """Per-run memo of the history: Message objects, and running hashes of its canonical
    bytes, so each call hashes only the messages added since the last one."""

    __slots__ = ("_backing", "_msg", "_prefix", "_req", "bytes", "messages")

    def __init__(self) -> None:
        self._backing: int | None = None
        self.messages: list[Message] = []
        self.bytes: list[bytes] = []
        self._prefix = b""
        self._msg = hashlib.sha256(b"[")
        self._req = hashlib.sha256()

    def advance(self, history: Sequence[Any], prefix: bytes) -> None:
        """Take in the messages added to ``history``; ``prefix`` is the request's JSON before
        its message list (it changes only if the settings do)."""
        backing = id(getattr(history, "_backing", history))
        if backing != self._backing or len(history) < len(self.messages):
            if self._backing is not None:  # another history (another mount): start over
                self.__init__()  # type: ignore[misc]
            self._backing = backing
        if prefix != self._prefix:  # new settings: hash the request from the start again
            self._prefix = prefix
            self._req = hashlib.sha256(prefix + b"[" + b",".join(self.bytes))
        for entry in history[len(self.messages) :]:
            message = Message.model_validate(thaw(entry))
            # the piece is the message as the request serializes it (defaults, types)
            piece = canonical_json(message.model_dump(mode="json", exclude_none=True))
            sep = b"," if self.bytes else b""
            self.messages.append(message)
            self.bytes.append(piece)
            self._msg.update(sep + piece)
            self._req.update(sep + piece)

    def hashes(self, suffix: bytes) -> tuple[str, str]:
        """(request hash, messages hash) with the message list closed and ``suffix`` added."""
        req = self._req.copy()
        req.update(b"]" + suffix)
        msg = self._msg.copy()
        msg.update(b"]")
        return req.hexdigest(), msg.hexdigest()


class Assembled(NamedTuple):
    request: LLMRequest
    request_hash: str
    messages_hash: str
    tools_hash: str | None
    tool_hashes: dict[str, str]


def _field(name: str, value: bytes) -> bytes:
    return b'"' + name.encode() + b'":' + value


_BEFORE_MESSAGES = ("extra_body", "max_tokens")
"""Request fields whose keys sort before ``messages`` (the hash is over sorted keys)."""
_AFTER_MODEL = ("response_format", "seed", "stop")
_AFTER_SYSTEM = ("temperature",)
_AFTER_TOOLS = ("top_p",)


def _settings_fields(settings: Mapping[str, Any], names: tuple[str, ...]) -> bytes:
    return b"".join(
        b"," + _field(name, canonical_json(settings[name]))
        for name in names
        if settings.get(name) is not None
    )


def assemble(state: Mapping[str, Any], cache: MessageCache | None = None) -> Assembled:
    """The request for the next model call, from state alone (pure: no clock, no config).

    The hashes are of the request's canonical JSON (sorted keys), built from pieces so that
    they equal ``sha256(request.canonical_json())`` without serializing the whole request.
    The settings were made plain JSON when ``seed`` committed them (floats as floats, ``stop``
    as a list), so their bytes here are the bytes the request model dumps.
    """
    cache = cache if cache is not None else MessageCache()
    history = state["history"]
    settings = thaw(state["settings"])
    system = state.get("system_prompt")
    tools_state = None if state.get("wrap_up_asked") else state.get("tools")
    prefix = b"{"
    for name in _BEFORE_MESSAGES:
        if settings.get(name) is not None:
            prefix += _field(name, canonical_json(settings[name])) + b","
    prefix += b'"messages":'
    cache.advance(history, prefix)
    n = len(history)
    suffix = b"," + _field("model", canonical_json(settings["model"]))
    suffix += _settings_fields(settings, _AFTER_MODEL)
    if system is not None:
        suffix += b"," + _field("system", canonical_json(system))
    suffix += _settings_fields(settings, _AFTER_SYSTEM)
    tools: tuple[ToolSpec, ...] | None = None
    tools_hash = None
    tool_hashes: dict[str, str] = {}
    tool_choice = None
    if tools_state:
        tools = tuple(ToolSpec.model_validate(t) for t in thaw(tools_state))
        pieces = [canonical_json(t.model_dump(mode="json", exclude_none=True)) for t in tools]
        tool_hashes = {t.name: sha256(b) for t, b in zip(tools, pieces, strict=True)}
        tools_bytes = b"[" + b",".join(pieces) + b"]"
        tools_hash = sha256(tools_bytes)
        tool_choice = settings.get("tool_choice")  # sent only with the tools it chooses from
        if tool_choice is not None:
            suffix += b"," + _field("tool_choice", canonical_json(tool_choice))
        suffix += b"," + _field("tools", tools_bytes)
    suffix += _settings_fields(settings, _AFTER_TOOLS)
    view = state.get("window_view")
    if view:  # a window: the served list is history with the view applied, O(window)
        messages, pieces = _windowed(cache, n, thaw(view))
        listed = b"[" + b",".join(pieces) + b"]"
        request_hash = sha256(prefix + listed + suffix + b"}")
        messages_hash = sha256(listed)
    else:
        request_hash, messages_hash = cache.hashes(suffix + b"}")
        messages = tuple(cache.messages[:n])
    stop = settings.get("stop")
    request = LLMRequest.model_construct(
        model=settings["model"],
        system=system,
        messages=messages,
        tools=tools,
        temperature=settings.get("temperature"),
        max_tokens=settings.get("max_tokens"),
        tool_choice=tool_choice,
        seed=settings.get("seed"),
        top_p=settings.get("top_p"),
        stop=None if stop is None else tuple(stop),
        response_format=settings.get("response_format"),
        extra_body=settings.get("extra_body"),
    )
    return Assembled(request, request_hash, messages_hash, tools_hash, tool_hashes)


def _windowed(
    cache: MessageCache, n: int, view: Mapping[str, Any]
) -> tuple[tuple[Message, ...], list[bytes]]:
    """The served messages and their canonical pieces: history minus the dropped ranges,
    with the library message that stands in for them where the first range was."""
    drop = [(int(a), int(b)) for a, b in view.get("drop", ())]
    standing = standing_in_message(view)
    messages: list[Message] = []
    pieces: list[bytes] = []
    at = 0
    for start, end in drop:
        messages += cache.messages[at:start]
        pieces += cache.bytes[at:start]
        if standing is not None and start == drop[0][0]:
            message = Message.model_validate(standing)
            messages.append(message)
            pieces.append(canonical_json(message.model_dump(mode="json", exclude_none=True)))
        at = max(at, end)
    messages += cache.messages[at:n]
    pieces += cache.bytes[at:n]
    return tuple(messages), pieces


def receipt_for(
    k: int, assembled: Assembled, usage: Any, stop_reason: str | None
) -> dict[str, Any]:
    """What ``call-llm`` commits about call ``k``: hashes of what was sent, usage reported."""
    request = assembled.request
    return {
        "k": k,
        "request_hash": assembled.request_hash,
        "system_hash": None if request.system is None else sha256(canonical_json(request.system)),
        "messages_hash": assembled.messages_hash,
        "tools_hash": assembled.tools_hash,
        "tool_schema_hashes": assembled.tool_hashes,
        "model": request.model,
        "usage": usage,
        "stop_reason": stop_reason,
    }
