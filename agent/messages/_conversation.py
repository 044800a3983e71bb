"""Conversations: a conversation so far, to continue in any process (``continue_from``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import (
    Any,
    NotRequired,  # pydantic validates it on 3.11
)

import orjson
from typing_extensions import TypedDict

from trackway.engine import check_document, load_document

from ._errors import ConversationFormatError

__all__ = ["CONVERSATION_FORMAT", "Conversation"]

CONVERSATION_FORMAT = "trackway.conversation/1"


@dataclass(frozen=True)
class Conversation:
    """A conversation so far (history including the last answer): continue it anywhere."""

    history: list[dict[str, Any]]
    agent: str
    carry: dict[str, Any] | None = None
    """What goes on with the conversation besides its messages (the skill cursor under
    ``continuity="conversation"``); ``None`` when nothing does."""

    def to_json(self) -> bytes:
        doc: dict[str, Any] = {
            "format": CONVERSATION_FORMAT,
            "agent": self.agent,
            "history": self.history,
        }
        if self.carry is not None:
            doc["carry"] = self.carry
        return orjson.dumps(doc)

    @classmethod
    def from_json(cls, data: bytes | str, *, source: str | None = None) -> Conversation:
        """Read :meth:`to_json` output; anything else raises :class:`ConversationFormatError`."""
        return load_document(
            data,
            document="conversation",
            readers={CONVERSATION_FORMAT: _read_conversation},
            source=source,
            error=ConversationFormatError,
        )


class _ConversationDoc(TypedDict):
    format: str
    agent: str
    history: list[dict[str, Any]]
    carry: NotRequired[dict[str, Any]]


def _read_conversation(doc: dict[str, Any]) -> Conversation:
    checked: _ConversationDoc = check_document(
        _ConversationDoc, doc, document="conversation", error=ConversationFormatError
    )
    carry = checked.get("carry")
    return Conversation(
        history=list(checked["history"]),
        agent=checked["agent"],
        carry=None if carry is None else dict(carry),
    )
