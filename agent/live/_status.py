"""Live status lines: the one sentence a chat bubble shows while a turn runs.

:func:`status_line` words one event (pure: the serving layer uses it too);
:func:`chat_bubble_live_status` is the strategy ``.live_status(strategy=...)`` takes: it keeps
one line per tool call of each run, hands the newest to ``on_line`` and clears lines as calls
and turns end. It listens to events the run emits anyway (``stream.llm_start``,
``stream.tool_start``, ``stream.tool_progress``, ``stream.tool_end``) and writes nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from trackway.engine import EmitEvent, Recorder, RunEndEvent

from ._templates import THINKING_TEMPLATES, Voice, check_app_name, check_templates, render

__all__ = [
    "MESSAGE_LIMIT",
    "ChatBubbleLiveStatus",
    "LiveStatusRecorder",
    "LiveStatusStrategy",
    "StatusLine",
    "chat_bubble_live_status",
    "cut_message",
    "status_line",
    "worded",
]

MESSAGE_LIMIT = 120
"""A progress ``message`` longer than this many characters is cut here, the cut stated."""

HEARD = frozenset(
    {"stream.llm_start", "stream.tool_start", "stream.tool_progress", "stream.tool_end"}
)


@dataclass(frozen=True, slots=True)
class StatusLine:
    """One status sentence: its ``text``, the template ``key`` that worded it, and the tool
    call it is about (``call_id`` and ``tool``; both None for the model's ``thinking``
    line). ``str(line)`` is the text."""

    key: str
    text: str
    call_id: str | None = None
    tool: str | None = None

    def __str__(self) -> str:
        return self.text


def cut_message(message: str) -> str:
    """``message`` stripped and, past :data:`MESSAGE_LIMIT` characters, cut there with the
    cut stated: ``"… (+N more)"``, N the characters cut."""
    text = message.strip()
    if len(text) <= MESSAGE_LIMIT:
        return text
    return f"{text[:MESSAGE_LIMIT]}… (+{len(text) - MESSAGE_LIMIT} more)"


def _message_of(payload: Any) -> str | None:
    """The one field a progress payload is read for: a top-level, non-blank string
    ``message``. Anything else (no message, another type, a bare string) is None."""
    if isinstance(payload, Mapping):
        message = payload.get("message")
        if isinstance(message, str) and message.strip():
            return message
    return None


def worded(
    name: str, payload: Any, templates: Mapping[str, str], app_name: str, count: int = 1
) -> StatusLine | None:
    """:func:`status_line` on templates already checked and merged (the hot path)."""
    if not isinstance(payload, Mapping):
        return None
    if name == "stream.llm_start":
        return StatusLine("thinking", render(templates["thinking"], {"app": app_name}))
    if name not in ("stream.tool_start", "stream.tool_progress"):
        return None
    tool, call_id = str(payload.get("name", "")), payload.get("id")
    values: dict[str, Any] = {"app": app_name, "tool": tool}
    ladder: tuple[str, ...]
    if name == "stream.tool_start":
        ladder = (f"tool.{tool}", "tool")
    else:
        message = _message_of(payload.get("payload"))
        values |= {"count": count, "reports": f"{count} report{'' if count == 1 else 's'}"}
        if message is not None:
            values["message"] = cut_message(message)
            ladder = (f"tool.{tool}.progress", f"tool.{tool}", "tool.progress")
        else:
            ladder = (f"tool.{tool}.progress.generic", f"tool.{tool}", "tool.progress.generic")
    key = next(k for k in ladder if k in templates)
    return StatusLine(
        key, render(templates[key], values), None if call_id is None else str(call_id), tool
    )


def status_line(
    event_name: str,
    payload: Any,
    *,
    templates: Mapping[str, str] | None = None,
    app_name: str | None = None,
    count: int = 1,
) -> StatusLine | None:
    """The status line one event gives, or None for an event that gives none.

    ``stream.llm_start`` → the ``thinking`` line; ``stream.tool_start`` → ``tool.<name>``,
    else ``tool``; ``stream.tool_progress`` with a string ``message`` in its payload → that
    message verbatim, stripped and cut at 120 characters (``"… (+N more)"``), worded by
    ``tool.<name>.progress``, else ``tool.<name>``, else ``tool.progress``; any other
    progress payload → ``tool.<name>.progress.generic``, else ``tool.<name>``, else
    ``tool.progress.generic`` (the payload itself is never shown). ``count`` is how many
    reports this call has made, this one included. ``templates`` go over the bundled
    :data:`~trackway.agent.THINKING_TEMPLATES` (checked: :class:`TemplateError`)."""
    merged = (
        THINKING_TEMPLATES
        if not templates
        else {**THINKING_TEMPLATES, **check_templates("thinking", templates)}
    )
    app = Voice().app_name if app_name is None else check_app_name(app_name)
    return worded(event_name, payload, merged, app, count)


@runtime_checkable
class LiveStatusStrategy(Protocol):
    """What ``.live_status(strategy=...)`` takes: told each status event of a run as it is
    emitted (with the agent's voice), and when the run ends (done, failed or paused)."""

    def heard(self, run_id: str, name: str, payload: Any, voice: Voice) -> None: ...

    def ended(self, run_id: str) -> None: ...


class ChatBubbleLiveStatus:
    """One status sentence at a time, keyed by (run, tool call): see
    :func:`chat_bubble_live_status`."""

    def __init__(self, on_line: Callable[[StatusLine | None], Any]) -> None:
        if not callable(on_line):
            raise TypeError("chat_bubble_live_status(on_line=...): on_line must be callable")
        self._on_line = on_line
        self._lock = threading.RLock()  # parallel calls report from worker threads
        self._lines: dict[tuple[str, str | None], StatusLine] = {}
        self._counts: dict[tuple[str, str], int] = {}
        self._shown: tuple[tuple[str, str | None], StatusLine] | None = None

    @property
    def line(self) -> StatusLine | None:
        """The line shown now (None when cleared)."""
        return None if self._shown is None else self._shown[1]

    def heard(self, run_id: str, name: str, payload: Any, voice: Voice) -> None:
        with self._lock:
            if name == "stream.tool_end":
                self._drop(lambda key: key == (run_id, str(payload.get("id"))))
                return
            count = 1
            if name == "stream.tool_progress":
                counted = (run_id, str(payload.get("id")))
                count = self._counts[counted] = self._counts.get(counted, 0) + 1
            line = worded(name, payload, voice.thinking, voice.app_name, count)
            if line is None:
                return
            if line.call_id is not None:  # a tool is running: the model is not thinking
                self._lines.pop((run_id, None), None)
            key = (run_id, line.call_id)
            self._lines.pop(key, None)
            self._lines[key] = line  # newest last
            self._show((key, line))

    def ended(self, run_id: str) -> None:
        with self._lock:
            self._drop(lambda key: key[0] == run_id)
            for counted in [k for k in self._counts if k[0] == run_id]:
                del self._counts[counted]

    def _drop(self, which: Callable[[tuple[str, str | None]], bool]) -> None:
        for key in [k for k in self._lines if which(k)]:
            del self._lines[key]
            if key[1] is not None:
                self._counts.pop((key[0], key[1]), None)
        if self._shown is not None and self._shown[0] not in self._lines:
            newest = next(reversed(self._lines.items()), None)
            self._show(newest)  # a sibling still running keeps its line

    def _show(self, shown: tuple[tuple[str, str | None], StatusLine] | None) -> None:
        before = self._shown
        self._shown = shown
        if (before is None) != (shown is None) or (
            before is not None and shown is not None and before[1] != shown[1]
        ):
            self._on_line(None if shown is None else shown[1])


def chat_bubble_live_status(*, on_line: Callable[[StatusLine | None], Any]) -> ChatBubbleLiveStatus:
    """A live status strategy for a chat bubble: one sentence at a time.

    ``on_line(line)`` is called each time the shown line changes, with the
    :class:`StatusLine` to show (``str(line)`` is its text) or ``None`` to clear the bubble.
    Lines are kept per tool call (and per run, when runs overlap): the newest report wins
    the line; when a call ends (``stream.tool_end``) its line goes and the newest line of a
    call still running comes back; when the turn ends (done, failed or paused) every line of
    that run goes. The model's ``thinking`` line shows while it is called and goes when a
    tool starts. An ``on_line`` that raises does not break the run: the engine keeps the
    failure on ``snapshot.recorder_failures`` (and logs it), as for any recorder."""
    return ChatBubbleLiveStatus(on_line)


class LiveStatusRecorder(Recorder):
    """What a configured live status attaches to each run: hands the status events to the
    strategy with the agent's voice, and the run's end. An observer: it writes nothing."""

    name = "live-status"

    def __init__(self, strategy: LiveStatusStrategy, voice: Voice) -> None:
        self.strategy, self.voice = strategy, voice

    def wants_emit(self, name: str) -> bool:
        return name in HEARD

    def on_emit(self, event: EmitEvent) -> None:
        if event.name in HEARD and isinstance(event.payload, Mapping):
            self.strategy.heard(event.run_id, event.name, event.payload, self.voice)

    def on_run_end(self, event: RunEndEvent) -> None:
        self.strategy.ended(event.run_id)
