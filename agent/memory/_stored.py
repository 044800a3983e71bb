"""What memory keeps of a turn: the person's message and the answer, each as stored.

Memory is a retained surface like the store's run rows and a recording: a text read from a
state key the run's redaction policy hides (whole, or in part) is kept as the policy's
marker, never raw. The message counts as hidden when the policy hides ``message``,
``user_message`` or ``history`` (which quotes it); the answer when it hides
``final_answer``, ``response`` or ``history``. A text a tool marked hidden
(``ctx.redact``) is masked inside what is kept. ``summarize`` and ``extract`` are handed the
turn as stored, so what they derive cannot hold what was hidden either.
"""

from __future__ import annotations

from collections.abc import Callable

from trackway.engine import RedactionPolicy
from trackway.engine.observe._redact import Redactor

from ._define import MemoryTurn

__all__ = ["ANSWER_SOURCES", "USER_SOURCES", "stored_text", "stored_turn"]

USER_SOURCES = ("message", "user_message", "history")
"""The state keys that hold the person's message."""
ANSWER_SOURCES = ("final_answer", "response", "history")
"""The state keys that hold the answer."""


def stored_text(
    redactor: Redactor | None,
    sources: tuple[str, ...],
    value: str,
    unquoted: Callable[[str], str] | None = None,
) -> str:
    """The form of ``value`` memory keeps: the marker when the policy hides any of the keys
    it is read from (``sources``), else the value with every text the run hides
    (``ctx.redact``, ``scope.hide_value``) masked by ``unquoted``."""
    if redactor is not None and any(redactor.verdict(key) is not None for key in sources):
        return redactor.marker
    return value if unquoted is None else unquoted(value)


def stored_turn(
    policy: RedactionPolicy | None,
    user: str,
    answer: str,
    unquoted: Callable[[str], str] | None = None,
) -> MemoryTurn:
    """The turn as memory keeps it under ``policy`` (the run's) and the texts it hides."""
    redactor = None if policy is None else Redactor(policy)
    return MemoryTurn(
        stored_text(redactor, USER_SOURCES, user, unquoted),
        stored_text(redactor, ANSWER_SOURCES, answer, unquoted),
    )
