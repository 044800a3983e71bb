"""Commentary: a recorded run told in the third person, one sentence per event, from the
record alone (no agent, no model, no tools): what a teaching view or a log tail shows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..record._record import Record, _snapshot
from ._templates import Voice, check_app_name, check_templates, render

__all__ = ["commentary"]

_KEYS = {
    "agent.turn_start": "turn.start",
    "stream.llm_start": "llm.start",
    "stream.tool_start": "tool.start",
    "stream.tool_progress": "tool.progress",
    "stream.tool_end": "tool.end",
    "agent.paused": "paused",
    "agent.turn_end": "turn.end",
}


def commentary(
    record: Record,
    *,
    templates: Mapping[str, str] | None = None,
    app_name: str | None = None,
) -> list[str]:
    """The run ``record`` holds (a recording's path, a snapshot, or an agent: its last run)
    narrated in the third person: one sentence per ``agent.turn_start``, ``stream.llm_start``,
    ``stream.tool_start``, ``stream.tool_progress``, ``stream.tool_end``, ``agent.paused``
    and ``agent.turn_end`` event, in commit order.

    ``templates`` go over the bundled :data:`~trackway.agent.COMMENTARY_TEMPLATES` (per tool:
    ``tool.<name>.start``, ``tool.<name>.progress``, ``tool.<name>.end``); ``app_name`` is
    the actor ("Chatbot called weather."). Given an agent, its own ``commentary_templates``
    and ``app_name`` are the defaults. A progress report is told as a fact, never its
    payload."""
    own = getattr(record, "voice", None)
    base = own if isinstance(own, Voice) else Voice()
    merged = (
        base.commentary
        if not templates
        else {**base.commentary, **check_templates("commentary", templates)}
    )
    app = base.app_name if app_name is None else check_app_name(app_name)
    lines: list[str] = []
    for commit in _snapshot(record).history():
        for event in commit.events:
            key = _KEYS.get(event.name)
            if key is None:
                continue
            payload = event.payload
            if not isinstance(payload, Mapping):
                continue
            lines.append(_told(key, payload, merged, app))
    return lines


def _told(key: str, payload: Mapping[str, Any], templates: Mapping[str, str], app: str) -> str:
    values: dict[str, Any] = {"app": app}
    if key == "llm.start":
        values["model"] = payload.get("model", "")
    elif key == "paused":
        call = payload.get("call")
        values |= {
            "question": payload.get("question", ""),
            "kind": payload.get("kind", ""),
            "tool": call.get("name", "") if isinstance(call, Mapping) else "",
        }
    elif key == "turn.end":
        values["iterations"] = payload.get("iterations", "")
    elif key.startswith("tool."):
        tool = str(payload.get("name", ""))
        values |= {"tool": tool, "status": payload.get("status", "")}
        own = f"tool.{tool}.{key.removeprefix('tool.')}"
        if own in templates:
            key = own
    return render(templates[key], values)
