"""The agent's voice: its ``app_name`` and the two template maps that word what a run is
doing, first person for a chat bubble (``thinking_templates``) and third person for a replay
(``commentary_templates``). Bundled English by default; an override is checked key by key and
placeholder by placeholder when it is configured, never when a line is worded."""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from ..messages._errors import TemplateError

__all__ = [
    "COMMENTARY_TEMPLATES",
    "DEFAULT_APP_NAME",
    "THINKING_TEMPLATES",
    "Voice",
    "check_app_name",
    "check_templates",
    "per_tool_name",
    "render",
]

DEFAULT_APP_NAME = "Chatbot"

THINKING_TEMPLATES: Mapping[str, str] = MappingProxyType(
    {
        "thinking": "Thinking…",
        "tool": "Running {tool}…",
        "tool.progress": "{message}",
        "tool.progress.generic": "{tool} is still working ({reports} so far)…",
    }
)
"""First person, one line at a time, for the person waiting: while the model is called
(``thinking``), when a tool starts (``tool``, or ``tool.<name>`` for one tool) and when it
reports progress (``tool.progress`` for a ``message``, ``tool.progress.generic`` for
anything else, or ``tool.<name>.progress`` / ``tool.<name>.progress.generic``)."""

COMMENTARY_TEMPLATES: Mapping[str, str] = MappingProxyType(
    {
        "turn.start": "The user asked {app} a question.",
        "llm.start": "{app} asked the model {model}.",
        "tool.start": "{app} called {tool}.",
        "tool.progress": "The {tool} tool reported progress while it was still running.",
        "tool.end": "The {tool} tool finished ({status}).",
        "paused": "{app} paused to ask a person: {question}",
        "turn.end": "{app} answered after {iterations} model call(s).",
    }
)
"""Third person, one sentence per recorded event, for narrating a replay. Progress is told
as a fact, never its payload; per-tool variants are ``tool.<name>.start``,
``tool.<name>.progress`` and ``tool.<name>.end``."""

_THINKING_FIELDS: Mapping[str, frozenset[str]] = {
    "thinking": frozenset({"app"}),
    "tool": frozenset({"app", "tool"}),
    "tool.progress": frozenset({"app", "tool", "message", "count", "reports"}),
    "tool.progress.generic": frozenset({"app", "tool", "count", "reports"}),
}
_COMMENTARY_FIELDS: Mapping[str, frozenset[str]] = {
    "turn.start": frozenset({"app"}),
    "llm.start": frozenset({"app", "model"}),
    "tool.start": frozenset({"app", "tool"}),
    "tool.progress": frozenset({"app", "tool"}),
    "tool.end": frozenset({"app", "tool", "status"}),
    "paused": frozenset({"app", "question", "kind", "tool"}),
    "turn.end": frozenset({"app", "iterations"}),
}
_THINKING_PER_TOOL = re.compile(r"tool\.(?P<tool>.+?)(?P<kind>\.progress(?:\.generic)?)?")
_COMMENTARY_PER_TOOL = re.compile(r"tool\.(?P<tool>.+?)(?P<kind>\.start|\.progress|\.end)")

Which = Literal["thinking", "commentary"]


def _general_key(which: Which, key: str) -> str | None:
    """The bundled key whose placeholders ``key`` may use (itself, or the general key of a
    per-tool variant); None for a key that is neither."""
    fields = _THINKING_FIELDS if which == "thinking" else _COMMENTARY_FIELDS
    if key in fields:
        return key
    pattern = _THINKING_PER_TOOL if which == "thinking" else _COMMENTARY_PER_TOOL
    match = pattern.fullmatch(key)
    if match is None or match["tool"] in ("progress", "start", "end"):
        return None
    return "tool" + (match["kind"] or "") if which == "thinking" else "tool" + match["kind"]


def per_tool_name(which: Which, key: str) -> str | None:
    """The tool a per-tool key names (``tool.weather.progress`` → ``weather``), else None."""
    if _general_key(which, key) in (None, key):
        return None
    pattern = _THINKING_PER_TOOL if which == "thinking" else _COMMENTARY_PER_TOOL
    match = pattern.fullmatch(key)
    assert match is not None  # a per-tool key matched it
    return match["tool"]


def check_templates(which: Which, templates: Mapping[str, str]) -> dict[str, str]:
    """``templates`` checked: every key a known one (or a per-tool variant of one), every
    value a string whose ``{placeholders}`` that key offers. Raises :class:`TemplateError`
    naming the key and the valid ones."""
    if not isinstance(templates, Mapping):
        raise TemplateError(
            f"{which}_templates takes a mapping of template key to text, got "
            f"{type(templates).__name__}"
        )
    fields = _THINKING_FIELDS if which == "thinking" else _COMMENTARY_FIELDS
    variants = (
        "tool.<name>, tool.<name>.progress, tool.<name>.progress.generic"
        if which == "thinking"
        else "tool.<name>.start, tool.<name>.progress, tool.<name>.end"
    )
    checked: dict[str, str] = {}
    for key, text in templates.items():
        general = _general_key(which, key) if isinstance(key, str) else None
        if general is None:
            raise TemplateError(
                f"{which}_templates: unknown key {key!r}; the valid keys are "
                f"{', '.join(fields)} and the per-tool {variants}"
            )
        if not isinstance(text, str):
            raise TemplateError(
                f"{which}_templates[{key!r}] must be text, got {type(text).__name__}"
            )
        offered = fields[general]
        try:
            used = {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}
        except ValueError as exc:
            raise TemplateError(f"{which}_templates[{key!r}] = {text!r}: {exc}") from None
        unknown = sorted(n for n in used if n not in offered)
        if unknown:
            raise TemplateError(
                f"{which}_templates[{key!r}] uses {{{unknown[0]}}}, which this key does not "
                f"offer; it offers {', '.join('{' + n + '}' for n in sorted(offered))}"
            )
        checked[key] = text
    return checked


def check_app_name(name: object) -> str:
    """A non-empty name, stripped."""
    if not isinstance(name, str) or not name.strip():
        raise TemplateError(f"app_name must be a non-empty string, got {name!r}")
    return name.strip()


def render(text: str, values: Mapping[str, Any]) -> str:
    """``text`` with its placeholders filled from ``values`` (checked when configured)."""
    return text.format_map(values)


@dataclass(frozen=True)
class Voice:
    """An agent's voice: the name it narrates under and its two template maps, each the
    bundled English with the configured keys over it."""

    app_name: str = DEFAULT_APP_NAME
    thinking: Mapping[str, str] = field(default_factory=lambda: THINKING_TEMPLATES)
    commentary: Mapping[str, str] = field(default_factory=lambda: COMMENTARY_TEMPLATES)

    @classmethod
    def of(
        cls,
        *,
        app_name: str | None = None,
        thinking: Mapping[str, str] | None = None,
        commentary: Mapping[str, str] | None = None,
    ) -> Voice:
        """The bundled voice with these overrides, each checked."""
        return cls(
            app_name=DEFAULT_APP_NAME if app_name is None else check_app_name(app_name),
            thinking=MappingProxyType(
                {**THINKING_TEMPLATES, **check_templates("thinking", thinking or {})}
            ),
            commentary=MappingProxyType(
                {**COMMENTARY_TEMPLATES, **check_templates("commentary", commentary or {})}
            ),
        )
