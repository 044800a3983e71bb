"""A redaction policy for what a conversation says, for ``Agent.create(redact=...)``."""

from __future__ import annotations

import traceback
from collections.abc import Mapping, Sequence
from dataclasses import replace

from trackway.engine import RedactionPolicy, Scope

__all__ = [
    "CONVERSATION_EMITS",
    "CONVERSATION_FIELDS",
    "CONVERSATION_KEYS",
    "TOOL_ERROR_EMITS",
    "TOOL_ERROR_FIELDS",
    "agent_policy",
    "conversation_redaction",
    "hidden_errors",
    "stack_of",
]

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
    "output_fallback",
    "pending_question",
    "abandoned_question",
    "memory_recall",
    "memory_written",
)
"""The agent's state keys that hold what the person, the model or a tool said."""

CONVERSATION_EMITS = (
    r"^stream\.",
    r"^agent\.(turn_start|turn_end|budget_exhausted|output_retry|paused|resumed|presented)$",
)
"""The agent's events whose payloads quote the conversation."""

CONVERSATION_FIELDS = {
    "middleware_decisions": ("value",),
    "tool_results": ("rewritten.value", "assumed.value", "nested"),
    "unsupported_values": ("values", "by_absence"),
    "answer_validation": ("checks.values.value",),
    "output_judged": ("error",),
}
"""Where the conversation is quoted inside the agent's other keys: the new value a
middleware link rewrote (a message, an answer, a call's arguments), an argument's value a
call ran with that no model or person gave, and what a tool's own calls were and why one
was refused (``ctx.tools.call``), the values the evidence gate found in no tool result
(or only in an absence), the values an answer stated for a claim contract, and the output
schema's words on an answer (as ``output_error``; the text's hash and the stage stay)."""

TOOL_ERROR_FIELDS = {
    "tool_results": ("error.message",),
    "tool_choices": ("message",),
    "memory_recall": ("error.message",),
    "memory_written": ("error.message",),
}
"""Where a failed call's error text sits in the agent's state (what the tool, an MCP server
or the argument check said), a failed classifier's (``tool_choices``) and a failed memory
store's or summarizer's (``memory_recall``, ``memory_written``), hidden under
``errors=True``."""
TOOL_ERROR_EMITS = {r"^tools\.error$": ("message",)}
"""The same text in the ``tools.error`` event."""


def conversation_redaction(
    *, keys: Sequence[str] = (), emits: Sequence[str] = (), marker: str = "[REDACTED]"
) -> RedactionPolicy:
    """A policy that keeps every message, tool argument, tool result, answer and error
    text out of what a run leaves behind (store rows, snapshots, recordings, events,
    narratives, the ``trackway`` log).

    The run itself sees real values (the model reads a failed tool's own words; ``run``
    raises the provider's error with the server's). A middleware link's rewrite (the new
    message, answer or arguments on its ``middleware_decisions`` row) is hidden too; the
    row keeps who decided what and why. What is kept: the chart's path,
    settings, receipts (hashes, usage, how each call was made), counters, and of each error
    its type and trackway's own words, with the text it quotes (a server's answer, what a
    tool or an MCP server said) masked. ``served_at`` and ``replay`` then need the
    conversation, which the record no longer holds: they say so. ``keys`` and ``emits``
    add more.
    """
    return RedactionPolicy(
        keys=[*CONVERSATION_KEYS, *keys],
        fields={key: list(paths) for key, paths in CONVERSATION_FIELDS.items()},
        emits=[*CONVERSATION_EMITS, *emits],
        marker=marker,
        pauses=True,  # a question, a call's arguments and a person's answer are said too
        errors=True,  # a server echoing the request, a tool naming what it refused
    )


def agent_policy(policy: RedactionPolicy | None) -> RedactionPolicy | None:
    """The policy an agent's runs go through: under ``errors=True`` a failed tool call's
    error text is hidden too (``TOOL_ERROR_FIELDS``, ``TOOL_ERROR_EMITS``), wherever the
    policy came from. Anything else is returned as it is (the executor judges it)."""
    if not isinstance(policy, RedactionPolicy) or not policy.errors:
        return policy
    fields = _with(policy.fields, TOOL_ERROR_FIELDS)
    emit_fields = _with(policy.emit_fields, TOOL_ERROR_EMITS)
    if fields is None and emit_fields is None:
        return policy
    return replace(
        policy,
        fields=policy.fields if fields is None else fields,
        emit_fields=policy.emit_fields if emit_fields is None else emit_fields,
    )


def _with(
    given: Mapping[str, Sequence[str]], needed: Mapping[str, Sequence[str]]
) -> dict[str, list[str]] | None:
    """``given`` with the ``needed`` paths added (``None`` when it holds them already)."""
    merged = {key: list(paths) for key, paths in given.items()}
    added = False
    for key, paths in needed.items():
        have = merged.setdefault(key, [])
        for path in paths:
            if path not in have:
                have.append(path)
                added = True
    return merged if added else None


def hidden_errors(scope: Scope) -> str | None:
    """The marker when the run's policy hides error text (``errors=True``), else ``None``:
    a log line leaves that text out too, since a log is kept like the record."""
    policy = scope.redaction
    return policy.marker if policy is not None and policy.errors else None


def stack_of(exc: BaseException, marker: str) -> str:
    """Where ``exc`` was raised, as a traceback shows it, without its message or the source
    lines (a line of source can hold the very text the policy hides)."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = [f'  File "{f.filename}", line {f.lineno}, in {f.name}' for f in frames]
    return "\n".join(
        ["Traceback (most recent call last):", *where, f"{type(exc).__name__}: {marker}"]
    )
