"""The agent's side of ``.self_explain()``: binding each run that ends, and
``can_explain()``, the program's answer to what the trace tools tell the model. A part of
``Agent``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trackway.engine import RunResult
from trackway.tools import Identity

from ..context._config import AgentConfig
from ..loop._inputs import as_identity
from ._binding import ConversationKey, conversation_key

__all__ = ["Explaining"]


class Explaining:
    """``can_explain()`` and the binding of runs (mixed into ``Agent``)."""

    _cfg: AgentConfig
    _live: Any
    _running: bool

    def can_explain(
        self,
        *,
        session_id: str | None = None,
        identity: Identity | Mapping[str, Any] | None = None,
    ) -> bool:
        """Whether the trace tools of ``.self_explain()`` have a run to answer from now:
        ``False`` when the agent was built without it, or when no run of the conversation
        has completed (the trace tools would answer ``NO_COMPLETED_RUN``).

        The conversation is the one ``session_id`` and ``identity`` name, as ``run`` takes
        them; without either, the conversation of the run in flight (one started here with
        ``run``), or, between runs, of the run that ended last."""
        setup = self._cfg.self_explain
        if setup is None:
            return False
        key: ConversationKey | None
        if session_id is not None or identity is not None:
            key = conversation_key(as_identity(identity), session_id)
        else:
            key = self._conversation_now(setup.bound.last_key)
        if key is None:  # nothing has run: no conversation to answer for
            return False
        return setup.bound.find(key).snapshot is not None

    def _conversation_now(self, last: ConversationKey | None) -> ConversationKey | None:
        """The conversation of the run in flight when its input is known, else ``last``."""
        initial = self._live.initial if self._running else None
        if initial and "message" in initial:
            return conversation_key(initial.get("identity"), initial.get("session_id"))
        return last

    def _bind_explained(self, result: RunResult) -> None:
        """A run ended here: bind it for its conversation (a paused run binds when it is
        resumed to its end)."""
        setup = self._cfg.self_explain
        if setup is not None and result.status != "paused":
            setup.bound.bind(result.snapshot, result.state)
