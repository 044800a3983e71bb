"""The input door: every new turn's message (``run``, ``continue_from``, ``follow_up``,
``resume_on_error``) passes the input links before the ``seed`` stage admits it. A resume
answers a paused turn, so it passes no door.

Mounted only when some link stands at the input door: the ``seed`` stage keeps its id and
runs the links first, in its one commit. A refusal writes the decisions and
``message_denied`` and ends the run there: no settings chosen (``configure()`` does not run
for a refused message), no history, no model call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trackway.engine import Scope

from ..context._config import AgentConfig
from ._links import is_async
from ._message_doors import Passed, message_context, refuse, walk_message, walk_message_now

__all__ = ["admitting"]


def admitting(
    cfg: AgentConfig, seed: Callable[[Scope, str | None], None]
) -> Callable[[Scope], Any]:
    """The ``seed`` stage behind the input door: ``seed(scope, admitted)`` runs with the text
    the links passed (``None``: as given). A plain function when no link there is async."""
    links = cfg.links("input")

    def admitted(scope: Scope, passed: Passed) -> None:
        if passed.denied is None:
            seed(scope, passed.text if passed.rewrites else None)
        else:
            refuse(scope, passed, "input", 1)

    if not any(is_async(link, "input") for link in links):

        def seed_admitting_now(scope: Scope) -> None:
            ctx = message_context(scope, cfg.name, "input", 1)
            admitted(scope, walk_message_now(scope, links, "input", scope["message"], ctx))

        return seed_admitting_now

    async def seed_admitting(scope: Scope) -> None:
        ctx = message_context(scope, cfg.name, "input", 1)
        admitted(scope, await walk_message(scope, links, "input", scope["message"], ctx))

    return seed_admitting
