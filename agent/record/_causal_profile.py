"""How a causal trace reads an agent's run: through the conversation, past the bookkeeping.

An answer depends on the model calls and the tool results they read (``history``,
``response``); the loop counter, settings, ledgers and receipts every stage touches are
bookkeeping, and the optional features an agent leaves unconfigured are read absent on
purpose. Registered when ``trackway.agent`` is imported.
"""

from __future__ import annotations

from trackway.engine import CausalProfile, Snapshot, register_causal_profile

__all__ = ["AGENT_PROFILE"]

_BOOKKEEPING = frozenset(
    {
        "iteration",
        "max_iterations",
        "settings",
        "receipts",
        "usage_total",
        "cost_total",
        "cost_budget_hit",
        "tools",
        "system_prompt",
        "resolved_instructions",
        "tool_results",
        "pending_question",
        "wrap_up_asked",
        "stopped_early",
        "findings_tickets",
        "skills",
        "skill_proposals",
        "skill_entry",
        "instruction_leases",
        "tool_choices",
    }
)


def _is_agent_run(snapshot: Snapshot) -> bool:
    return any(c.stage_id == "call-llm" for c in snapshot.history())


AGENT_PROFILE = CausalProfile("agent", _is_agent_run, _BOOKKEEPING, None)
register_causal_profile(AGENT_PROFILE)
