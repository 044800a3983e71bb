"""``.self_explain()`` on the agent's builder, checked at ``build()`` with the agent's other
tools; and how a replay declares it again (from a recording's settings, or from the agent it
replays against), with the recorded results standing in for the trace tools."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from trackway.engine.core._keywords import checked_keywords
from trackway.tools import Tool

from ..loop._inputs import Runtime
from ..messages._errors import AgentBuildError
from ._binding import BoundRuns
from ._fit import MIN_MAX_CHARS
from ._tools import TRACE_TOOLS, SelfExplain

__all__ = ["ExplainBuilding", "replay_self_explain", "replay_self_explain_of"]


class ExplainBuilding:
    """``.self_explain()``."""

    _explain: tuple[int, int] | SelfExplain | None = None
    _tools: dict[str, Tool]
    _provided: dict[str, tuple[Tool, Any]]
    _runtime: Runtime
    _options: dict[str, Any]
    _system: str | None

    @checked_keywords
    def self_explain(self, *, max_chars: int = 4000, keep: int = 64) -> Self:
        """Let the model answer "why did you ...?" about its last completed run in the
        conversation: it is given five read-only trace tools (``TRACE_TOOLS``), each
        answering from that run's record with JSON of at most ``max_chars`` characters
        (what was cut is said in the result), and a guide served after the system prompt.
        Before a run of the conversation has completed they answer ``NO_COMPLETED_RUN``.

        A run binds when it ends (answered or failed; a paused run when it is resumed to
        its end), for its conversation: its ``session_id``, else its identity's
        ``conversation_id``, within its tenant and principal. This process keeps the latest
        ``keep`` conversations; with a store, any process finds the run there."""
        for name, value, least in (("max_chars", max_chars, MIN_MAX_CHARS), ("keep", keep, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise AgentBuildError(
                    f"self_explain({name}={value!r}): use a whole number of at least {least}"
                )
        if self._explain is not None:
            raise AgentBuildError("self_explain() was called twice; an agent explains itself once")
        self._explain = (max_chars, keep)
        return self

    def _explained(self) -> tuple[SelfExplain | None, dict[str, Tool]]:
        """At ``build()``: the configuration, and the trace tools to add to the agent's (none
        when a replay registered its stand-ins), checked against the tools it has."""
        plan = self._explain
        if plan is None:
            return None, {}
        if isinstance(plan, SelfExplain):  # a replay's: its stand-ins are registered
            missing = [n for n in TRACE_TOOLS if n not in self._tools]
            if missing:
                raise AgentBuildError(
                    f"a replay of self_explain() needs the recorded trace tools {missing}; "
                    "the recording served none of that name"
                )
            return plan, {}
        hidden = [s.id for s in getattr(self, "_skills", ()) if s.hidden]
        if hidden:
            raise AgentBuildError(
                f"self_explain() reads the record of a run back to the model, and the record "
                f"names the hidden skills {hidden} (the skills catalog, the skill cursor), "
                "which are never named to the model; drop hidden=True from them, or leave "
                "self_explain() out"
            )
        max_chars, keep = plan
        store = self._runtime.store
        setup = SelfExplain(BoundRuns(f"agent-{self._options['name']}", store, keep), max_chars)
        tools = setup.tools()
        for name in tools:
            source = (
                self._tools[name].source or ".tool()"
                if name in self._tools
                else f"tools_from({self._provided[name][1]!r})"
                if name in self._provided
                else None
            )
            if source is not None:
                raise AgentBuildError(
                    f"tool {name!r} from {source} has the name of a trace tool .self_explain() "
                    f"gives the model ({', '.join(TRACE_TOOLS)}); rename the tool"
                )
        return setup, tools


def replay_self_explain(builder: Any, settings: Mapping[str, Any]) -> None:
    """Declare on a replay's ``builder`` the ``self_explain()`` a recording's settings kept:
    its tools are the recorded stand-ins already registered, and the system prompt it was
    given is the recorded one without the guide (the stage adds it again)."""
    record = settings.get("self_explain")
    if not record:
        return
    chart_id = f"agent-{builder._options['name']}"
    setup = SelfExplain.from_record(record, chart_id)
    builder._explain = setup
    system = builder._system
    if system == setup.guide:
        builder._system = None
    elif system is not None and system.endswith("\n\n" + setup.guide):
        builder._system = system[: -len(setup.guide) - 2]


def replay_self_explain_of(builder: Any, cfg: Any) -> None:
    """Declare on a replay's ``builder`` the ``self_explain()`` of the agent it replays
    against (its trace tools registered as the recorded stand-ins)."""
    if cfg.self_explain is not None:
        builder._explain = cfg.self_explain.replayed()
