"""``Paused``: what ``run`` returns when the run waits for a person."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from trackway.engine import Checkpoint

__all__ = ["Paused", "is_paused"]


@dataclass(frozen=True)
class Paused:
    """The run waits for a person: ``question`` (of ``kind`` ``"ask_human"``,
    ``"request_input"`` — with its ``schema`` —, ``"check_in"``, ``"arguments"`` or
    ``"consent"``: may a tool use a credential, answered ``"approve"`` or ``"decline"``;
    ``"time_choice"``: which of ``choices`` the person's words meant, under ``.time()``)
    about the pending
    ``call`` (``id``, ``name``, ``args``). ``checkpoint`` is an engine ``Checkpoint``: keep
    it (``checkpoint.to_json()``) and pass it to ``agent.resume(checkpoint, answer)`` in
    this process or any other, once."""

    question: str
    kind: str
    call: Mapping[str, Any]
    checkpoint: Checkpoint
    schema: Mapping[str, Any] | None = None
    format: str | None = None
    """A time ask's format (``"instant"``, ``"time-range"``, ``"zone"``), else ``None``."""
    refused: Mapping[str, Any] | None = None
    """The same ask again: ``{"answer", "reason"}`` of the answer it did not take."""
    repeat: Mapping[str, int] | None = None
    """``{"count": n}``: how many answers this ask has refused (with ``refused``)."""
    choices: Sequence[Any] | None = None
    """A ``time_choice`` question's choices (answer with an index or the text), or a time
    ask's offered answers."""

    @property
    def run_id(self) -> str:
        """The paused run (it keeps its id when resumed)."""
        return self.checkpoint.run_id


def is_paused(outcome: object) -> bool:
    """Whether ``outcome`` (what ``run`` or ``resume`` returned) is a :class:`Paused`."""
    return isinstance(outcome, Paused)
