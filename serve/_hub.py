"""The event hub: a recorder attached to an agent that gives every event of its runs the id
of its place in the record, ``"{commit_seq}.{i}"`` (``i``: the event's index in that
commit's ``events``), and hands them, in record order, to everyone following the run.

An event of a stage on the run's root chain (its path has no ``/``) is sent as it is
emitted: nothing else runs beside such a stage, so its commit is the next one and the id is
certain. Events of stages inside a fork or a subflow (paths with ``/``; branch commits get
their seq only at the merge) are held until their commit lands, then sent in commit order.
When a commit lands, its events not yet sent are sent, and those sent early are checked
against it (``mismatches`` counts any that were not where their id said: none should be).
Events of a stage whose commit never lands are not in the record and are never sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson

from trackway.engine import (
    Commit,
    EmitEvent,
    Recorder,
    RunEndEvent,
    RunStartEvent,
    StageStartEvent,
    thaw,
)

__all__ = ["EventHub", "RunFeed", "SentEvent", "Ticket", "event_id", "parse_event_id"]

EventKey = tuple[int, int]
"""An event's place in the record: (commit seq, index in the commit's events)."""


def event_id(key: EventKey) -> str:
    """The SSE id of an event at ``key``: ``"{seq}.{i}"``."""
    return f"{key[0]}.{key[1]}"


def parse_event_id(text: str | None) -> EventKey | None:
    """The place a ``Last-Event-ID`` names, or ``None`` when absent or not an id of ours
    (then the stream starts at the run's first event)."""
    if not text:
        return None
    seq, dot, index = text.strip().partition(".")
    if not dot or not seq.isdigit() or not index.isdigit():
        return None
    return int(seq), int(index)


class SentEvent(NamedTuple):
    """One event as a stream sends it: its place in the record, name and (redacted)
    payload, as plain JSON data."""

    key: EventKey
    name: str
    payload: Any

    @property
    def id(self) -> str:
        return event_id(self.key)


def commit_events(commit: Commit) -> list[SentEvent]:
    """The events a commit holds, with their ids (the record's own bytes, as retained)."""
    return [
        SentEvent((commit.seq, i), name, orjson.loads(data))
        for i, (name, data) in enumerate(commit.emitted)
    ]


@dataclass
class _Stage:
    emitted: int = 0
    early: list[SentEvent] = field(default_factory=list)


class Ticket:
    """Set (as a context variable) around a run a server starts, so the hub can say which
    run id that run got as soon as it starts."""

    def __init__(self) -> None:
        self.run_id: str | None = None
        self.started = asyncio.Event()

    def start(self, run_id: str) -> None:
        if self.run_id is None:
            self.run_id = run_id
            self.started.set()


TICKET: contextvars.ContextVar[Ticket | None] = contextvars.ContextVar(
    "trackway_serve_ticket", default=None
)


class RunFeed:
    """One run's events in this process since it (re)started here: a journal in record
    order, its owner, and followers woken on each new event or when the run ends.

    Hooks may be called from a worker thread (a sync tool's progress), so the journal is
    guarded by a lock and followers are woken on their own event loop."""

    def __init__(self, run_id: str, first_seq: int, identity: Any) -> None:
        self.run_id = run_id
        self.first_seq = first_seq
        """Commits up to this seq were made before this process followed the run: read
        them from the store."""
        self.identity = identity
        self.started_at = time.time()
        self.journal: list[SentEvent] = []
        self.status: str | None = None
        """``None`` while running; then ``done``, ``failed``, ``paused``, ``broken``..."""
        self.mismatches = 0
        self._last_seq = first_seq
        self._stages: dict[str, _Stage] = {}
        self._lock = threading.Lock()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []

    # -- written by the hub (the run's thread) -----------------------------------------------

    def _publish(self, items: list[SentEvent]) -> None:
        with self._lock:
            self.journal.extend(items)
            waiters = list(self._waiters)
        for loop, ev in waiters:
            _wake(loop, ev)

    def stage_start(self, path: str) -> None:
        with self._lock:
            self._stages[path] = _Stage()

    def emit(self, event: EmitEvent) -> None:
        with self._lock:
            stage = self._stages.setdefault(event.stage_path, _Stage())
            index = stage.emitted
            stage.emitted += 1
            early = (
                "/" not in event.stage_path  # the root chain: nothing runs beside it
                and event.seq == self._last_seq  # every earlier commit is in
                and index == len(stage.early)  # and every earlier event of it was sent
            )
            if not early:  # sent when its commit lands
                return
            sent = SentEvent((self._last_seq + 1, index), event.name, thaw(event.payload))
            stage.early.append(sent)
        self._publish([sent])

    def commit(self, commit: Commit) -> None:
        with self._lock:
            self._last_seq = max(self._last_seq, commit.seq)
            stage = self._stages.pop(commit.stage_path, None)
        events = commit_events(commit)
        early = stage.early if stage is not None else []
        for sent, recorded in zip(early, events, strict=False):
            if sent.key != recorded.key or sent.name != recorded.name:
                self.mismatches += 1
        if len(early) > len(events):
            self.mismatches += len(early) - len(events)
        self._publish(events[len(early) :])

    def end(self, status: str) -> None:
        with self._lock:
            self.status = status
            self._stages.clear()
            waiters = list(self._waiters)
        for loop, ev in waiters:
            _wake(loop, ev)

    # -- read by followers (the server's event loop) -----------------------------------------

    def follow(self) -> tuple[asyncio.Event, Callable[[], None]]:
        """A wake-up for the calling task (set on each new event and at the run's end; the
        follower clears it before reading) and the function that removes it."""
        ev = asyncio.Event()
        entry = (asyncio.get_running_loop(), ev)
        with self._lock:
            self._waiters.append(entry)

        def leave() -> None:
            with self._lock:
                if entry in self._waiters:
                    self._waiters.remove(entry)

        return ev, leave

    def since(self, position: int) -> tuple[list[SentEvent], str | None]:
        """The journal from ``position`` on, and the run's end status (``None`` running)."""
        with self._lock:
            return self.journal[position:], self.status


def _wake(loop: asyncio.AbstractEventLoop, ev: asyncio.Event) -> None:
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        ev.set()
    else:
        with contextlib.suppress(RuntimeError):  # a closed loop: its follower is gone
            loop.call_soon_threadsafe(ev.set)


class EventHub(Recorder):
    """The recorder ``to_sse`` and ``serve_agent`` attach to an agent (once, before its
    runs): one :class:`RunFeed` per run running in this process, kept after the run ends
    for the last ``keep_ended`` runs (older ones are read from the store)."""

    name = "trackway.serve.hub"

    def __init__(self, *, keep_ended: int = 256) -> None:
        self.keep_ended = keep_ended
        self._feeds: OrderedDict[str, RunFeed] = OrderedDict()
        self._lock = threading.Lock()

    def feed(self, run_id: str) -> RunFeed | None:
        with self._lock:
            return self._feeds.get(run_id)

    def feeds(self) -> list[tuple[str, RunFeed]]:
        """The runs this process follows (running, or ended lately)."""
        with self._lock:
            return list(self._feeds.items())

    def on_run_start(self, event: RunStartEvent) -> None:
        initial = thaw(event.input) if event.input is not None else None
        identity = initial.get("identity") if isinstance(initial, dict) else None
        with self._lock:
            old = self._feeds.get(event.run_id)
            if old is None or old.status is not None:  # a resumed run starts a new feed
                feed = RunFeed(event.run_id, event.seq, identity or (old and old.identity))
                if old is not None:  # same process: the events before are still here
                    feed.first_seq = old.first_seq
                    feed.started_at = old.started_at
                    feed.journal = list(old.journal)
                self._feeds[event.run_id] = feed
                self._feeds.move_to_end(event.run_id)
        ticket = TICKET.get()
        if ticket is not None:
            ticket.start(event.run_id)

    def _of(self, run_id: str) -> RunFeed | None:
        return self._feeds.get(run_id)

    def on_stage_start(self, event: StageStartEvent) -> None:
        feed = self._of(event.run_id)
        if feed is not None:
            feed.stage_start(event.stage_path)

    def on_emit(self, event: EmitEvent) -> None:
        if event.seq < 0:  # heard outside any stage: in no commit, so in no record
            return
        feed = self._of(event.run_id)
        if feed is not None:
            feed.emit(event)

    def on_commit(self, commit: Commit) -> None:
        feed = self._of(commit.run_id)
        if feed is not None:
            feed.commit(commit)

    def on_run_end(self, event: RunEndEvent) -> None:
        feed = self._of(event.run_id)
        if feed is None:
            return
        feed.end(event.status)
        with self._lock:
            ended = [k for k, f in self._feeds.items() if f.status is not None]
            for run_id in ended[: max(0, len(ended) - self.keep_ended)]:
                del self._feeds[run_id]
