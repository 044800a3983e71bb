"""The builder methods and agent readers of the voice and live status: ``.live_status``,
``.thinking_templates``, ``.commentary_templates`` and ``.app_name`` on the builder;
``agent.app_name``, ``agent.thinking_templates``, ``agent.commentary_templates`` and
``agent.voice`` on the agent. None of it reaches the chart, the state or the settings: a
voice words what the record holds, it does not change it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Self

from ..messages._errors import TemplateError
from ._status import LiveStatusRecorder, LiveStatusStrategy
from ._templates import Voice, Which, check_app_name, check_templates, per_tool_name

__all__ = ["LiveBuilding", "Voiced"]


class LiveBuilding:
    """Mixed into ``AgentBuilder``."""

    _live_strategies: tuple[LiveStatusStrategy, ...] = ()
    _voice_app: str | None = None
    _voice_thinking: Mapping[str, str] = {}
    _voice_commentary: Mapping[str, str] = {}

    def live_status(self, *, strategy: LiveStatusStrategy) -> Self:
        """Hand the status line of each run to ``strategy`` as it changes, e.g.
        ``chat_bubble_live_status(on_line=...)``. An observer: it mounts no stage and writes
        nothing (the record is the same with and without it). May be called again to add
        another strategy; each hears every event."""
        if not isinstance(strategy, LiveStatusStrategy):
            raise TemplateError(
                f"live_status(strategy={strategy!r}): a strategy has heard(run_id, name, "
                "payload, voice) and ended(run_id); use chat_bubble_live_status(on_line=...)"
            )
        self._live_strategies = (*self._live_strategies, strategy)
        return self

    def thinking_templates(self, templates: Mapping[str, str]) -> Self:
        """Reword the first-person status lines (keys ``thinking``, ``tool``,
        ``tool.progress``, ``tool.progress.generic`` and per tool ``tool.<name>``,
        ``tool.<name>.progress``, ``tool.<name>.progress.generic``); the keys not given keep
        the bundled English. An unknown key or placeholder: :class:`TemplateError`."""
        self._voice_thinking = {**self._voice_thinking, **check_templates("thinking", templates)}
        return self

    def commentary_templates(self, templates: Mapping[str, str]) -> Self:
        """Reword the third-person commentary of a replay (keys ``turn.start``,
        ``llm.start``, ``tool.start``, ``tool.progress``, ``tool.end``, ``paused``,
        ``turn.end`` and per tool ``tool.<name>.start|progress|end``)."""
        self._voice_commentary = {
            **self._voice_commentary,
            **check_templates("commentary", templates),
        }
        return self

    def app_name(self, name: str) -> Self:
        """The actor the agent's lines and commentary name ("Chatbot called weather.")."""
        self._voice_app = check_app_name(name)
        return self

    def _live_plan(
        self, tools: Iterable[str], open_ended: bool
    ) -> tuple[Voice | None, list[LiveStatusRecorder]]:
        """The agent's voice (None when nothing was configured) and the recorders its live
        status strategies need. A per-tool key for a tool the agent cannot call is refused,
        unless tools come from a provider at run time (``open_ended``)."""
        if not (
            self._live_strategies
            or self._voice_app
            or self._voice_thinking
            or self._voice_commentary
        ):
            return None, []
        known = set(tools)
        maps: tuple[tuple[Which, Mapping[str, str]], ...] = (
            ("thinking", self._voice_thinking),
            ("commentary", self._voice_commentary),
        )
        for which, given in maps:
            for key in given:
                tool = per_tool_name(which, key)
                if tool is not None and tool not in known and not open_ended:
                    raise TemplateError(
                        f"{which}_templates[{key!r}] names the tool {tool!r}, which this "
                        f"agent does not have (tools: {', '.join(sorted(known)) or 'none'})"
                    )
        voice = Voice.of(
            app_name=self._voice_app,
            thinking=self._voice_thinking,
            commentary=self._voice_commentary,
        )
        return voice, [LiveStatusRecorder(s, voice) for s in self._live_strategies]


class Voiced:
    """Mixed into ``Agent``: its voice, as configured (bundled English otherwise)."""

    _voice: Voice = Voice()

    @property
    def voice(self) -> Voice:
        """The agent's :class:`Voice` (``app_name`` and both template maps, merged)."""
        return self._voice

    @property
    def app_name(self) -> str:
        """The actor the agent's commentary names (``.app_name(...)``; "Chatbot")."""
        return self._voice.app_name

    @property
    def thinking_templates(self) -> Mapping[str, str]:
        """The first-person status templates: the bundled ones with the configured keys."""
        return self._voice.thinking

    @property
    def commentary_templates(self) -> Mapping[str, str]:
        """The third-person commentary templates: bundled, with the configured keys."""
        return self._voice.commentary

    def _give_voice(self, voice: Voice | None) -> Any:
        if voice is not None:
            self._voice = voice
        return self
