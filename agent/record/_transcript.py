"""``agent.transcript()``: the conversation as it was served, call by call, with usage.

Each model call is told by what it was served that the call before was not (its new
messages: the person's message, the tool results), what it answered and the usage its
provider reported — read from the log alone, so a recording gives the same transcript.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from trackway.engine import Snapshot, thaw, write_value

from ..messages._members import member_of
from ..messages._messages import Message
from ._record import Record, _llm_commits, _snapshot, served_at

__all__ = ["TranscriptCall", "transcript"]


class TranscriptCall(NamedTuple):
    """One model call: ``served`` the messages new since the previous call of the same
    member (all of them for its first), ``answer`` the response as committed (``content``,
    ``tool_calls``, ``stop_reason``), ``usage`` as reported (``None``: not reported)."""

    k: int
    member: str
    served: tuple[Message, ...]
    answer: Mapping[str, Any]
    usage: Mapping[str, Any] | None


def transcript(record: Record) -> list[TranscriptCall]:
    """Every model call of a run (an agent, a recording, a snapshot), in commit order."""
    snap: Snapshot = _snapshot(record)
    calls: list[TranscriptCall] = []
    seen: dict[str, int] = {}  # member -> how many messages its previous call was served
    for k, commit in enumerate(_llm_commits(snap), start=1):
        member = member_of(commit.stage_path)
        messages = served_at(snap, k).messages
        start = seen.get(member, 0)
        seen[member] = len(messages)
        answer: Mapping[str, Any] = {}
        receipt: Mapping[str, Any] = {}
        for w in commit.writes:
            if w[1] == "response":
                answer = dict(thaw(write_value(w)))
            elif w[1] == "receipts":
                value = thaw(write_value(w))
                receipt = value[-1] if isinstance(value, list) else value
        usage = receipt.get("usage")
        calls.append(TranscriptCall(k, member, tuple(messages[start:]), answer, usage))
    return calls
