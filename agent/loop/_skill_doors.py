"""A door call answered in the ``tool-calls`` stage: the pure answer of
:func:`~trackway.agent.skills._doors.door_answer` over the committed cursor, with the pick
filed on the call's row for the ``offer`` stage to judge before the next call."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trackway.engine.run._scope import TrackedScope

from ..context._config import AgentConfig
from ..context._config import emit as _emit
from ..skills._doors import door_answer
from ._served import Outcome

__all__ = ["door_outcome"]


def door_outcome(cfg: AgentConfig, scope: TrackedScope, call: Mapping[str, Any]) -> Outcome:
    cursor = scope.get("skill_cursor")
    skill = None if cursor is None else cursor["skill"]
    args = call.get("args") or {}
    answer = door_answer(cfg.skills.data, skill, call["name"], args)
    if call["name"] == "present" and isinstance(args.get("content"), str):
        _emit(scope, "agent.presented", {"id": call["id"], "content": args["content"]})
    flags = {"pick": answer.pick} if answer.picks else None
    return Outcome(answer.status, answer.text, (), flags)
