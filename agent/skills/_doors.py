"""The doors: ``read_skill``, ``list_skills``, ``skip_step`` and ``present``, served to every
call of an agent with skills. Each is library code over the committed cursor, so a replay
runs them again and compares; none names a hidden skill."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from trackway.tools import Tool, define_tool

from ._declare import next_from, reachable_from

__all__ = ["DoorAnswer", "door_answer", "door_tools", "reachable_in"]

_NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}


def _unreachable(args: dict[str, Any], ctx: Any) -> str:  # pragma: no cover - never run
    raise AssertionError("the doors are answered by the offer stage, not executed")


def door_tools(visible: Sequence[str]) -> dict[str, Tool]:
    """The door tools; ``read_skill``'s ``id`` is an enum of the skills the model may be
    told of (a hidden one is never listed), and no door takes an extra field."""
    skill_id: dict[str, Any] = {
        "type": "string",
        "description": "The id of the skill to take up (list_skills lists them).",
    }
    if visible:
        skill_id["enum"] = list(visible)
    specs = [
        (
            "read_skill",
            "Take up a skill: its instructions are served and its tools offered from the "
            "next step on.",
            {
                "type": "object",
                "properties": {"id": skill_id},
                "required": ["id"],
                "additionalProperties": False,
            },
        ),
        ("list_skills", "List the skills you may take up, and which one is active.", _NO_ARGS),
        (
            "skip_step",
            "Leave the active skill when it does not apply; the next step of the path, if "
            "there is one, is taken up.",
            {
                "type": "object",
                "properties": {"reason": {"type": "string", "description": "Why it is skipped."}},
                "additionalProperties": False,
            },
        ),
        (
            "present",
            "Show something to the person now, before your final answer.",
            {
                "type": "object",
                "properties": {"content": {"type": "string"}},
                "required": ["content"],
                "additionalProperties": False,
            },
        ),
    ]
    return {
        name: define_tool(
            name=name, description=description, input_schema=schema, execute=_unreachable
        )
        for name, description, schema in specs
    }


class DoorAnswer(NamedTuple):
    """What a door call came to: status, what the model reads, and the pick it makes (the
    skill the cursor is asked to take up; ``None`` leaves the active one), if any."""

    status: str
    text: str
    picks: bool = False
    pick: str | None = None


def _named(ids: Sequence[str], hidden: frozenset[str]) -> str:
    shown = [i for i in ids if i not in hidden]
    return ", ".join(shown) if shown else "none"


def door_answer(
    record: Mapping[str, Any], cursor: str | None, name: str, args: Mapping[str, Any]
) -> DoorAnswer:
    """The answer of door ``name`` given the skills record and the cursor (pure)."""
    catalog = {s["id"]: s for s in record["catalog"]}
    hidden = frozenset(i for i, s in catalog.items() if s["hidden"])
    graph = record.get("graph")
    strictness = "assist" if graph is None else graph["strictness"]
    reachable = reachable_in(record, cursor)
    here = "the start" if cursor is None or cursor in hidden else repr(cursor)
    if name == "read_skill":
        wanted = args.get("id")
        skill = catalog.get(wanted) if isinstance(wanted, str) else None
        if skill is None or skill["hidden"]:
            return DoorAnswer(
                "invalid",
                # the id is not echoed: a guessed hidden id reads like any unknown one
                f"Error: read_skill takes the id of a listed skill. Skills: "
                f"{_named(list(catalog), hidden)}.",
            )
        if wanted == cursor:
            already = f"Skill {skill['title']!r} is already active."
            return DoorAnswer("success", already, True, cursor)
        if strictness == "rails":
            return DoorAnswer(
                "invalid",
                f"Skill {wanted!r} cannot be taken up by reading it: the path through the "
                f"skills is set here, and you are at {here}. Carry on with the active step.",
            )
        if strictness == "guard" and wanted not in reachable:
            return DoorAnswer(
                "invalid",
                f"Skill {wanted!r} is not reachable from {here}. Reachable now: "
                f"{_named(reachable, hidden)}.",
            )
        tools = ", ".join(skill["tools"]) or "none"
        return DoorAnswer(
            "success",
            f"Skill {skill['title']!r} ({wanted}) is taken up from your next step: its "
            f"instructions are served in the system prompt and its tools are offered: {tools}.",
            True,
            wanted,
        )
    if name == "list_skills":
        lines = []
        for sid, skill in catalog.items():
            if skill["hidden"]:
                continue
            marks = []
            if sid == cursor:
                marks.append("active")
            elif strictness != "assist" and sid in reachable:
                marks.append("reachable")
            mark = f" ({', '.join(marks)})" if marks else ""
            lines.append(f"- {sid}: {skill['title']}{mark}")
        if strictness == "rails":
            lines.append("The path through the skills is set here: reading one does not move it.")
        return DoorAnswer("success", "\n".join(lines) if lines else "No skills to list.")
    if name == "skip_step":
        if cursor is None:
            return DoorAnswer("invalid", "No skill is active, so there is no step to skip.")
        if strictness == "rails":
            return DoorAnswer(
                "invalid",
                "The path through the skills is set here: a step cannot be skipped. Carry on "
                "with the active step.",
            )
        following = None if graph is None else next_from(graph, cursor)
        if following is None:
            return DoorAnswer("success", "The active skill is left; no skill is active now.", True)
        return DoorAnswer(
            "success", "The active skill is left; the next step is taken up.", True, following
        )
    # present: the content is in the call's arguments, in the history
    return DoorAnswer("success", "Shown to the person.")


def reachable_in(record: Mapping[str, Any], cursor: str | None) -> list[str]:
    """Where the cursor may go from ``cursor``: the recorded graph's law, or, without a
    graph, any other skill."""
    graph = record.get("graph")
    if graph is None:
        return [s["id"] for s in record["catalog"] if s["id"] != cursor]
    return reachable_from(graph, cursor)
