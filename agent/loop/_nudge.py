"""The repeated-call nudge: the second time a call returns what it returned before in a
run, one sentence tells the model so (once per distinct call)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import orjson

from trackway.engine import StagePath, thaw
from trackway.engine.core._values import exact_bytes
from trackway.engine.run._scope import TrackedScope
from trackway.tools.define._assume import assumed_note

from ..context._config import emit as _emit

if TYPE_CHECKING:
    from ._served import Outcome

__all__ = ["NUDGE_LATER", "REPEATED", "nudged"]

NUDGE_LATER: ContextVar[bool] = ContextVar("trackway_nudge_later", default=False)
"""Set in a call run together with others: the nudge is judged afterwards, in call order."""


REPEATED = (
    " (You called {name} with these same arguments earlier in this turn and got this same "
    "result: calling it again will not change it.)"
)


def _fingerprint(data: Any) -> str:
    """What ``tools.repeated_call`` names a call or a result by (computed for the event
    only: the memo compares cheaper keys, see :class:`_CallMemo`)."""
    return hashlib.sha256(orjson.dumps(data, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def _call_key(name: str, args: Any) -> bytes:
    """A call's identity in the memo: its name and arguments as canonical JSON (copied to
    its exact size: the memo keeps it for the run's life)."""
    return exact_bytes(orjson.dumps((name, args), option=orjson.OPT_SORT_KEYS))


class _CallMemo:
    """The successful calls of this run by name and arguments (canonical JSON) and the
    ``hash`` of what they returned, for the repeated-call nudge. Rebuilt from the record
    when a run resumes in a fresh process, so a resumed run nudges exactly as an
    uninterrupted one."""

    __slots__ = ("built", "nudged", "seen")

    def __init__(self) -> None:
        self.built = False
        self.seen: dict[bytes, int] = {}
        self.nudged: set[bytes] = set()

    def rebuild(self, scope: TrackedScope) -> None:
        self.built = True
        rows = thaw(scope.get("tool_results", []))
        if not rows:
            return
        args: dict[str, Any] = {}
        served: dict[str, str] = {}
        findings = bool(scope["settings"].get("findings"))
        for message in thaw(scope["history"]):
            for call in message.get("tool_calls") or ():
                given = call.get("args", {})
                if findings and isinstance(given, dict):  # as dispatch saw them: peeled
                    given = {k: v for k, v in given.items() if k != "_findings"}
                args[call["id"]] = (call["name"], given)
            if message.get("role") == "tool":
                served[message["tool_call_id"]] = message["content"]
        for row in rows:
            if row["status"] != "success" or row["id"] not in args:
                continue
            text = served.get(row["id"], "")
            key = _call_key(*args[row["id"]])
            filled = [a for a in row.get("assumed", ()) if "proposed" not in a]
            if filled:  # the note on filled arguments came after the nudge
                text = text.removesuffix("\n" + assumed_note(row["name"], filled))
            if row.get("nudged"):
                self.nudged.add(key)
                text = text.removesuffix(REPEATED.format(name=row["name"]))
            self.seen.setdefault(key, hash(text))


def nudged(scope: TrackedScope, call: Mapping[str, Any], done: Outcome) -> Outcome:
    """The second time a call returns what it returned before in this turn, one sentence
    says so (once per distinct call); ``tools.repeated_call`` carries fingerprints only."""
    mount = StagePath.parent_of(scope.stage_path)  # the key only: no parse
    memo = scope.run_local(("agent-call-memo", mount), _CallMemo)
    if not memo.built:
        memo.rebuild(scope)
    args = call.get("args", {})
    key = _call_key(call["name"], args)
    result = hash(done.content)
    before = memo.seen.get(key)
    if before is None:
        memo.seen[key] = result
        return done
    if before != result or key in memo.nudged:
        return done
    memo.nudged.add(key)
    fingerprints = {
        "call": _fingerprint((call["name"], args)),
        "result": _fingerprint(done.content),
    }
    _emit(scope, "tools.repeated_call", {"id": call["id"], "name": call["name"], **fingerprints})
    note = REPEATED.format(name=call["name"])
    flags = {**(done.flags or {}), "nudged": True}
    flags.setdefault("tool_chars", len(done.content))  # where the tool's own text ends
    return done._replace(content=done.content + note, flags=flags)
