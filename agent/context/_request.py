"""Request assembly: the one pure function from committed state to the model request.

``call-llm`` and ``served_at`` both use :func:`assemble`, so a request rebuilt from the log
is the request that was sent. Hashes are kept running over per-message pieces during a run,
so a call costs O(new messages), not O(history).

The history is read as the engine holds it: each entry was decoded once, when it was
written, and becomes a :class:`Message` without another copy or re-validation when it has a
shape the library writes (``_history_messages``); any other entry is validated as before.
The parts of the request that change only with the settings, the system prompt or the
tools are built once per value of those keys (``_Frame``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from operator import is_ as _is
from typing import Any, NamedTuple

from trackway.engine import thaw
from trackway.engine.core._values import FrozenDict, FrozenList
from trackway.engine.run._scope import TrackedScope

from ..messages._history_messages import fields_set, message_of, trusted
from ..messages._messages import LLMRequest, Message, ToolSpec, canonical_json, sha256
from ..ontology._piece import served_ontology
from ._findings_piece import LedgerPiece, findings_piece
from ._window import standing_in_message

__all__ = [
    "Assembled",
    "MessageCache",
    "assemble",
    "receipt_for",
    "ticket_text",
]


class MessageCache:
    """Per-run memo of the history: Message objects, and running hashes of its canonical
    bytes, so each call hashes only the messages added since the last one."""

    __slots__ = (
        "_alt",
        "_backing",
        "_findings",
        "_frame",
        "_msg",
        "_overlay",
        "_prefix",
        "_req",
        "_served",
        "bytes",
        "messages",
    )

    def __init__(self) -> None:
        self._backing: int | None = None
        self._served: _Served | None = None
        self._frame: _Frame | None = None
        self._findings: LedgerPiece | None = None
        self._overlay: tuple[Any, Any, _Overlay] | None = None
        self.messages: list[Message] = []
        self.bytes: list[bytes] = []
        self._prefix = b""
        self._msg = hashlib.sha256(b"[")
        self._req = hashlib.sha256()
        self._alt: tuple[bytes, Any] | None = None

    def advance(self, history: Sequence[Any], prefix: bytes, alt: bytes | None = None) -> None:
        """Take in the messages added to ``history``; ``prefix`` is the request's JSON before
        its message list (it changes only if the settings do). ``alt``: a second prefix
        hashed alongside (a cache policy function's other answer), so a call that switches
        between them costs O(new messages) too."""
        backing = id(getattr(history, "_backing", history))
        if backing != self._backing or len(history) < len(self.messages):
            if self._backing is not None:  # another history (another mount): start over
                self.__init__()  # type: ignore[misc]
            self._backing = backing
        if prefix != self._prefix:  # new settings: hash the request from the start again
            self._prefix = prefix
            self._req = hashlib.sha256(prefix + b"[" + b",".join(self.bytes))
        if alt is not None and (self._alt is None or self._alt[0] != alt):
            self._alt = (alt, hashlib.sha256(alt + b"[" + b",".join(self.bytes)))
        other = None if self._alt is None else self._alt[1]
        start = len(self.messages)
        if type(history) is FrozenList:  # the engine's own decoded entries: read, not copied
            entries: Sequence[Any] = history._backing[start : history._n]
        else:
            entries = history[start:]
        for entry in entries:
            message, piece = message_of(entry)
            chunk = b"," + piece if self.bytes else piece
            self.messages.append(message)
            self.bytes.append(piece)
            self._msg.update(chunk)
            self._req.update(chunk)
            if other is not None:
                other.update(chunk)

    def overlaid(
        self, n: int, prefix: bytes, suffix: bytes, overlay: _Overlay, both: tuple[bytes, ...] = ()
    ) -> tuple[tuple[Message, ...], str, str]:
        """The served messages and hashes under ``overlay`` (a window view, findings
        tickets). While the overlay and the prefix stay as they were, only new messages are
        added; a changed overlay rebuilds the served list once (O(served))."""
        served = self._served
        stale = served is None or served.key != overlay.key or served.upto > n
        if stale or served is None or prefix not in served.reqs:  # or the settings changed
            served = self._served = _Served(overlay.key, both or (prefix,))
            overlay.build(self, n, served)
        else:
            for i in range(served.upto, n):
                overlay.add(self, i, served)
        served.upto = n
        req = served.reqs[prefix].copy()
        req.update(b"]" + suffix)
        msg = served.msg.copy()
        msg.update(b"]")
        return _upto(served.messages, len(served.messages)), req.hexdigest(), msg.hexdigest()

    def hashes(self, suffix: bytes, prefix: bytes | None = None) -> tuple[str, str]:
        """(request hash, messages hash) with the message list closed and ``suffix`` added
        (under the ``alt`` prefix when ``prefix`` is it)."""
        alt = self._alt
        req = (alt[1] if alt is not None and prefix == alt[0] else self._req).copy()
        req.update(b"]" + suffix)
        msg = self._msg.copy()
        msg.update(b"]")
        return req.hexdigest(), msg.hexdigest()


class _Served:
    """The served list under one overlay, with running hashes of its pieces."""

    __slots__ = ("key", "messages", "msg", "reqs", "upto")

    def __init__(self, key: Any, prefixes: tuple[bytes, ...]) -> None:
        self.key = key
        self.messages: list[Message] = []
        self.upto = 0
        self.reqs = {p: hashlib.sha256(p + b"[") for p in prefixes}
        self.msg = hashlib.sha256(b"[")

    def append(self, message: Message, piece: bytes) -> None:
        sep = b"," if self.messages else b""
        self.messages.append(message)
        for req in self.reqs.values():
            req.update(sep + piece)
        self.msg.update(sep + piece)


class _Overlay:
    """What a call serves instead of the history as is: the window view (dropped ranges and
    the library message standing in for them) and findings tickets (a result the model
    judged noise or ruled-out, served as a short ticket)."""

    __slots__ = ("drop", "key", "standing", "tickets")

    def __init__(self, view: Mapping[str, Any], tickets: Mapping[str, str]) -> None:
        self.drop = [(int(a), int(b)) for a, b in view.get("drop", ())]
        message = standing_in_message(view) if self.drop else None
        self.standing = None if message is None else Message.model_validate(message)
        self.tickets = dict(tickets)
        self.key = canonical_json({"view": dict(view), "tickets": self.tickets})

    def build(self, cache: MessageCache, n: int, served: _Served) -> None:
        at = 0
        for number, (start, end) in enumerate(self.drop):
            for i in range(at, min(start, n)):
                self.add(cache, i, served)
            if number == 0 and self.standing is not None:
                piece = canonical_json(self.standing.model_dump(mode="json", exclude_none=True))
                served.append(self.standing, piece)
            at = max(at, end)
        for i in range(at, n):
            self.add(cache, i, served)

    def add(self, cache: MessageCache, i: int, served: _Served) -> None:
        message = cache.messages[i]
        standing = self.tickets.get(message.tool_call_id or "") if message.role == "tool" else None
        if standing is None:
            served.append(message, cache.bytes[i])
            return
        ticket = ticket_text(message.tool_call_id or "", standing)
        short = message.model_copy(update={"content": ticket})
        served.append(short, canonical_json(short.model_dump(mode="json", exclude_none=True)))


def ticket_text(call_id: str, standing: str) -> str:
    """What the model reads in place of a result it judged noise or ruled-out."""
    return canonical_json({"collapsed": True, "standing": standing, "id": call_id}).decode()


class Assembled(NamedTuple):
    request: LLMRequest
    request_hash: str
    messages_hash: str
    tools_hash: str | None
    tool_hashes: dict[str, str]
    system_hash: str | None = None


def _field(name: str, value: bytes) -> bytes:
    return b'"' + name.encode() + b'":' + value


_BEFORE_MESSAGES = ("cache", "extra_body", "max_tokens")
"""Request fields whose keys sort before ``messages`` (the hash is over sorted keys)."""
_AFTER_MODEL = ("response_format", "seed", "stop")
_AFTER_SYSTEM = ("temperature", "thinking_budget")
_AFTER_TOOLS = ("top_p",)


def _settings_fields(settings: Mapping[str, Any], names: tuple[str, ...]) -> bytes:
    return b"".join(
        b"," + _field(name, canonical_json(settings[name]))
        for name in names
        if settings.get(name) is not None
    )


class _Frame(NamedTuple):
    """What a request takes from ``settings``, ``system_prompt``, ``tools``, the system
    pieces and what memory recalled: built once per value of those keys (``source``,
    compared by identity: committed values are immutable, so the same object means the same
    bytes)."""

    source: tuple[Any, Any, Any, Any, Any, Any, Any, Any]
    prefix: bytes
    suffix: bytes
    fields: dict[str, Any]
    tools_hash: str | None
    tool_hashes: dict[str, str]
    system_hash: str | None
    alt: tuple[tuple[str, ...], bytes] | None = None
    """Under a cache policy function: the breakpoints of a call it answers ``"never"`` for,
    and the request's prefix with them."""


def _prefix_of(settings: Mapping[str, Any], cache: Any) -> bytes:
    prefix = b"{"
    for name in _BEFORE_MESSAGES:
        value = cache if name == "cache" else settings.get(name)
        if value is not None:
            prefix += _field(name, canonical_json(value)) + b","
    return prefix + b'"messages":'


def served_system(
    system: Any,
    pieces: Any,
    recalled: Any = None,
    ontology: str | None = None,
    findings: str | None = None,
) -> str | None:
    """The system text a call is served: the prompt, then what memory recalled for the turn
    (each non-empty ``memory_recall`` text), then each committed system piece (an active
    skill's body, instructions, leases, notes), then the ontology's piece (``ontology``: its
    ask and the map, the same bytes every call), then the findings ledger piece LAST
    (``findings``: composed from the record), each after a blank line."""
    if not pieces and not recalled and ontology is None and findings is None:
        return system if system is None else str(system)
    texts = [str(r["text"]) for r in recalled or () if r["text"]]
    texts += [str(p["text"]) for p in pieces or ()]
    if ontology is not None:  # after the committed pieces, before the findings piece
        texts.append(ontology)
    if findings is not None:  # last: injections, recovery, ontology, then findings
        texts.append(findings)
    if not texts:
        return system if system is None else str(system)
    return "\n\n".join([str(system), *texts] if system is not None else texts)


def _frame_of(
    settings_value: Any,
    system_value: Any,
    tools_state: Any,
    system_pieces: Any,
    recalled: Any,
    ontology: Any = None,
    skills: Any = None,
    findings: str | None = None,
) -> _Frame:
    settings = thaw(settings_value)
    onto = settings.get("ontology")
    mapped = None if ontology is None else served_ontology(ontology, onto["ask"], skills)
    system = served_system(system_value, system_pieces, recalled, mapped, findings)
    prefix = _prefix_of(settings, settings.get("cache"))
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
    stop = settings.get("stop")
    fields = {
        "model": settings["model"],
        "system": system,
        "messages": (),
        "tools": tools,
        "temperature": settings.get("temperature"),
        "max_tokens": settings.get("max_tokens"),
        "tool_choice": tool_choice,
        "seed": settings.get("seed"),
        "top_p": settings.get("top_p"),
        "stop": None if stop is None else tuple(stop),
        "response_format": settings.get("response_format"),
        "extra_body": settings.get("extra_body"),
        "thinking_budget": settings.get("thinking_budget"),
        "cache": None if settings.get("cache") is None else tuple(settings["cache"]),
    }
    system_hash = None if system is None else sha256(canonical_json(system))
    alt = None
    if settings.get("cache_policy") is not None and "system" in (settings.get("cache") or ()):
        never = tuple(b for b in settings["cache"] if b != "system")
        alt = (never, _prefix_of(settings, list(never)))
    return _Frame(
        (
            settings_value,
            system_value,
            tools_state,
            system_pieces,
            recalled,
            ontology,
            skills,
            findings,
        ),
        prefix,
        suffix + b"}",
        fields,
        tools_hash,
        tool_hashes,
        system_hash,
        alt,
    )


def assemble(
    state: Mapping[str, Any] | TrackedScope,
    cache: MessageCache | None = None,
    breakpoints: tuple[str, ...] | None = None,
) -> Assembled:
    """The request for the next model call, from state alone (pure: no clock, no config).

    ``state`` is committed state, or the stage's scope (its reads tracked). The hashes are
    of the request's canonical JSON (sorted keys), built from pieces so that
    they equal ``sha256(request.canonical_json())`` without serializing the whole request.
    The settings were made plain JSON when ``seed`` committed them (floats as floats, ``stop``
    as a list), so their bytes here are the bytes the request model dumps. With a ``cache``
    (one per run and mount), a call costs O(new messages): the frame is reused while the
    settings, system prompt and tools are the committed values they were. ``breakpoints``:
    this call's ``cache``, as a cache policy function decided it (else the settings').
    """
    cache = cache if cache is not None else MessageCache()
    history = state["history"]
    settings_value = state["settings"]
    system = state.get("system_prompt")
    tools_state = None if state.get("wrap_up_asked") else state.get("tools")
    # read only where the settings say calls are served pieces: no other call reads the key
    pieces = state.get("system_pieces") if settings_value.get("system_pieces") else None
    # what memory recalled: committed once per turn, so the frame is built once per turn
    recalled = state.get("memory_recall") if settings_value.get("memory") else None
    # the map: the run constant, read only where the settings say calls are served it
    ontology = state.get("ontology") if settings_value.get("ontology") else None
    # the skill join names no hidden skill: the committed declarations say which are
    skills = state.get("skills") if ontology is not None and ontology.get("tools") else None
    # the findings ledger piece, composed from the record (only under .findings())
    ledger_piece = None
    if settings_value.get("findings"):
        if cache._findings is None:
            cache._findings = LedgerPiece()
        ledger_piece = findings_piece(state, cache._findings)
    frame = cache._frame
    source = (settings_value, system, tools_state, pieces, recalled, ontology, skills, ledger_piece)
    if frame is None or not _same(frame.source, source):
        frame = cache._frame = _frame_of(*source)
    alt = frame.alt
    cache.advance(history, frame.prefix, None if alt is None else alt[1])
    prefix = frame.prefix
    if breakpoints is not None and breakpoints != frame.fields["cache"]:
        if alt is None or breakpoints != alt[0]:  # not a decision the run can make
            raise ValueError(f"assemble: breakpoints={breakpoints!r} differ from the settings'")
        prefix = alt[1]
    n = len(history)
    view = state.get("window_view")
    tickets = state.get("findings_tickets")
    if view or tickets:  # what is served differs from history: the committed overlay
        known = cache._overlay
        if known is not None and known[0] is view and known[1] is tickets:
            overlay = known[2]
        else:
            overlay = _Overlay(thaw(view or {}), thaw(tickets or {}))
            cache._overlay = (view, tickets, overlay)
        messages, request_hash, messages_hash = cache.overlaid(
            n,
            prefix,
            frame.suffix,
            overlay,
            (frame.prefix,) if alt is None else (frame.prefix, alt[1]),
        )
    else:
        request_hash, messages_hash = cache.hashes(frame.suffix, prefix)
        messages = _upto(cache.messages, n)
    fields = dict(frame.fields)
    fields["messages"] = messages
    if prefix is not frame.prefix:
        fields["cache"] = breakpoints
    request = trusted(LLMRequest, fields, _REQUEST_FIELDS)
    return _new_tuple(  # Assembled(...) without its Python-level __new__
        Assembled,
        (
            request,
            request_hash,
            messages_hash,
            frame.tools_hash,
            frame.tool_hashes,
            frame.system_hash,
        ),
    )


def _same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return (
        _same_value(a[0], b[0])
        and (a[1] is b[1] or (type(a[1]) is str and a[1] == b[1]))
        and _same_value(a[2], b[2])
        and a[3] is b[3]
        and a[4] is b[4]
        and a[5] is b[5]
        and a[6] is b[6]
        and a[7] == b[7]  # the findings piece: text, compared by value
    )


def _same_value(a: Any, b: Any) -> bool:
    """``a`` and ``b`` are one committed value, or views of the same engine-owned data (two
    runs' settings or tools written through ``AcrossRuns``): identity, never ``==``, which
    holds for ``1``, ``1.0`` and ``True`` though their JSON differs."""
    if a is b:
        return True
    t = type(a)
    if t is not type(b):
        return False
    if t is FrozenDict:
        return a._data is b._data
    if t is FrozenList:
        n = a._n
        return n == b._n and all(map(_is, a._backing[:n], b._backing[:n]))
    return False


def _upto(items: list[Message], n: int) -> tuple[Message, ...]:
    return tuple(items) if n == len(items) else tuple(items[:n])


_REQUEST_FIELDS = fields_set(LLMRequest.model_fields)
_new_tuple = tuple.__new__


def receipt_for(
    k: int, assembled: Assembled, usage: Any, stop_reason: str | None
) -> dict[str, Any]:
    """What ``call-llm`` commits about call ``k``: hashes of what was sent, usage reported."""
    request = assembled.request
    receipt: dict[str, Any] = {
        "k": k,
        "request_hash": assembled.request_hash,
        "system_hash": assembled.system_hash
        if assembled.system_hash is not None or request.system is None
        else sha256(canonical_json(request.system)),
        "messages_hash": assembled.messages_hash,
        "tools_hash": assembled.tools_hash,
        "tool_schema_hashes": assembled.tool_hashes,
        "model": request.model,
        "usage": usage,
        "stop_reason": stop_reason,
    }
    if request.cache is not None:  # the call's cache decision, only where configured
        receipt["cache"] = {"breakpoints": list(request.cache)}
    return receipt
