"""The trace tools and the guide of ``.self_explain()``: what the model is given to answer
"why did you ...?" about its last completed run in the conversation.

Five read-only tools, each answering with JSON read from the bound run's record alone and
bounded to ``max_chars`` (what was cut is said in the result), and a guide served after the
system prompt: which tool answers what, to quote the record, and to say plainly when there
is no completed run. Their results are ordinary tool results: recorded in the run that asked,
rebuilt by ``served_at`` and served again by a replay from the recording.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from trackway.tools import Tool, ToolContext, define_tool

from ._binding import BoundRuns, conversation_key
from ._fit import fitted
from ._readers import Read, commit_in_full, model_calls, outline, tool_calls, why

__all__ = ["GUIDE", "NO_COMPLETED_RUN", "TRACE_TOOLS", "SelfExplain"]

NO_COMPLETED_RUN = "No completed run is available yet"
"""What every trace tool answers before a run of the conversation has completed."""

TRACE_TOOLS: tuple[str, ...] = (
    "trace_outline",
    "trace_model_calls",
    "trace_tool_calls",
    "trace_why",
    "trace_commit",
)
"""The names of the trace tools ``.self_explain()`` gives the model, in the order served."""

GUIDE = """\
## Explaining your last run

When you are asked why you did something, what you did, or how you reached an earlier \
answer in this conversation, answer from the record of your last completed run in this \
conversation, read with the trace tools, never from what you think you meant:
- trace_outline: the run's message, answer, status and steps with the decisions taken; \
call it first.
- trace_model_calls: what each of your model calls answered.
- trace_tool_calls: each tool call with its arguments, its status and what it returned.
- trace_why(key): the chain of steps behind a value of the run, e.g. key "final_answer".
- trace_commit(seq): one step of the run in full.
Quote the record (values, statuses, step numbers) and say when a result says part of it was \
cut. The record is of your last completed run, not of this one. If a trace tool answers \
"No completed run is available yet", say plainly that there is no completed run to explain \
yet, and do not guess."""
"""The guide served after the system prompt of an agent built with ``.self_explain()``."""

_FROM = {
    "type": "integer",
    "minimum": 1,
    "description": "The number of the first item to show (1 when left out); a result that "
    "was cut says the number to ask next.",
}


def _schema(properties: Mapping[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": dict(properties),
        "additionalProperties": False,
    }
    if required:
        schema["required"] = list(required)
    return schema


def _int(value: Any, default: int) -> int:
    """A number the model gave (arguments are checked against the schema unless the agent
    turned that off: then anything else reads as ``default``)."""
    number = isinstance(value, int) and not isinstance(value, bool)
    return value if number and value >= 1 else default


_SPECS: dict[str, tuple[str, dict[str, Any], Callable[..., Read]]] = {
    "trace_outline": (
        "Your last completed run in this conversation, in outline: the person's message, "
        "your answer, how the run ended, and each step with the decisions taken (read from "
        "the run's record; read-only). Call it first for any question about why you did "
        "something.",
        _schema({"from": _FROM}),
        lambda snap, args: outline(snap, _int(args.get("from"), 1)),
    ),
    "trace_model_calls": (
        "What each model call of your last completed run in this conversation answered: "
        "its text, the tools it called with their arguments, why it stopped, the usage.",
        _schema({"from": _FROM}),
        lambda snap, args: model_calls(snap, _int(args.get("from"), 1)),
    ),
    "trace_tool_calls": (
        "Each tool call of your last completed run in this conversation: its arguments, "
        "its status (success, failure, denied, invalid, ...), its flags and the text you "
        "read back.",
        _schema({"from": _FROM}),
        lambda snap, args: tool_calls(snap, _int(args.get("from"), 1)),
    ),
    "trace_why": (
        "Why a value of your last completed run in this conversation is what it is: the "
        "chain of steps that wrote it and what each read. An unknown key lists the keys.",
        _schema(
            {
                "key": {
                    "type": "string",
                    "description": "A key of the run's state, e.g. final_answer.",
                }
            },
            ("key",),
        ),
        lambda snap, args: why(snap, str(args.get("key", "final_answer"))),
    ),
    "trace_commit": (
        "One step (commit) of your last completed run in this conversation in full: what "
        "it read, wrote and emitted, and what it decided. seq is a step number from "
        "trace_outline.",
        _schema({"seq": {"type": "integer", "minimum": 1}}, ("seq",)),
        lambda snap, args: commit_in_full(snap, _int(args.get("seq"), 0)),
    ),
}


class SelfExplain:
    """What ``.self_explain()`` configured: the bound runs the tools read, the bound on
    their results, the guide; ``given``: the tools are already registered (a replay's
    stand-ins serve the recorded results), so none are added."""

    def __init__(
        self, bound: BoundRuns, max_chars: int, guide: str = GUIDE, *, given: bool = False
    ) -> None:
        self.bound = bound
        self.max_chars = max_chars
        self.guide = guide
        self.given = given

    def tools(self) -> dict[str, Tool]:
        """The trace tools, by name (none when a replay registered its own)."""
        if self.given:
            return {}
        return {name: self._tool(name) for name in TRACE_TOOLS}

    def _tool(self, name: str) -> Tool:
        description, schema, reader = _SPECS[name]
        bound, max_chars = self.bound, self.max_chars

        def execute(args: dict[str, Any], ctx: ToolContext) -> str:
            key = conversation_key(ctx.identity, ctx.session_id)
            found = bound.find(key, exclude=ctx.run_id)
            if found.snapshot is None:
                return found.note or NO_COMPLETED_RUN
            read = reader(found.snapshot, args)
            return fitted(read.payload, max_chars, read.page, read.start)

        made = define_tool(name=name, description=description, input_schema=schema, execute=execute)
        return dataclasses.replace(made, source=".self_explain()")

    def record(self) -> dict[str, Any]:
        """What ``settings["self_explain"]`` keeps: the tools, their bound, the guide (a
        replay rebuilds the agent's system prompt and its tools from it, without code)."""
        return {"tools": list(TRACE_TOOLS), "max_chars": self.max_chars, "guide": self.guide}

    def served_after(self, text: str | None) -> str:
        """The system prompt with the guide after the author's text (or the guide alone)."""
        return self.guide if text is None else f"{text}\n\n{self.guide}"

    def replayed(self) -> SelfExplain:
        """The same configuration for a replay: its tools registered by the replay, its runs
        bound nowhere that matters (the replay's own, in memory)."""
        return SelfExplain(
            BoundRuns(self.bound.chart_id, None, 1), self.max_chars, self.guide, given=True
        )

    @staticmethod
    def from_record(record: Mapping[str, Any], chart_id: str) -> SelfExplain:
        """The configuration a recording's ``settings["self_explain"]`` kept, for a replay."""
        return SelfExplain(
            BoundRuns(chart_id, None, 1),
            int(record.get("max_chars", 4000)),
            str(record.get("guide", GUIDE)),
            given=True,
        )
