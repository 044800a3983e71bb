"""A redaction policy for what a conversation says, for ``Agent.create(redact=...)``."""

from __future__ import annotations

from collections.abc import Sequence

from trackway.engine import RedactionPolicy

__all__ = ["CONVERSATION_EMITS", "CONVERSATION_KEYS", "conversation_redaction"]

CONVERSATION_KEYS = (
    "message",
    "user_message",
    "prior_history",
    "history",
    "response",
    "final_answer",
    "stopped_early",
    "output_error",
    "output_contract_unmet",
    "pending_question",
    "abandoned_question",
)
"""The agent's state keys that hold what the person, the model or a tool said."""

CONVERSATION_EMITS = (
    r"^stream\.",
    r"^agent\.(turn_start|turn_end|budget_exhausted|output_retry|paused|resumed)$",
)
"""The agent's events whose payloads quote the conversation."""


def conversation_redaction(
    *, keys: Sequence[str] = (), emits: Sequence[str] = (), marker: str = "[REDACTED]"
) -> RedactionPolicy:
    """A policy that keeps every message, tool argument, tool result and answer out of what
    a run leaves behind (store rows, snapshots, recordings, events, narratives).

    The run itself sees real values. What is kept: the chart's path, settings, receipts
    (hashes, usage, how each call was made) and counters. ``served_at`` and ``replay`` then
    need the conversation, which the record no longer holds: they say so. ``keys`` and
    ``emits`` add more.
    """
    return RedactionPolicy(
        keys=[*CONVERSATION_KEYS, *keys],
        emits=[*CONVERSATION_EMITS, *emits],
        marker=marker,
        pauses=True,  # a question, a call's arguments and a person's answer are said too
    )
