"""Hearing the queue: PostgreSQL ``LISTEN``/``NOTIFY`` so an idle worker claims a submitted
or answered run within milliseconds instead of at its next poll.

``submit``, ``answer`` and a released lease notify the channel in the same transaction as
their write (PostgreSQL delivers a notification only once that transaction commits, so a
worker never wakes for a row it cannot see yet). A :class:`QueueListener` holds its own
connection in a thread: the store's connection stays free for the worker's transactions,
and a listener that loses its connection opens another with backoff while the worker keeps
polling. Polling is never switched off: a notification can be missed (a listener between
connections, a server restart), and the poll interval bounds the wait then.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Collection
from typing import Any

__all__ = ["NOTIFY_SQL", "QUEUE_CHANNEL", "QueueListener"]

log = logging.getLogger("trackway.worker")

QUEUE_CHANNEL = "trackway_queue"
"""The channel ``submit``, ``answer`` and a released lease notify."""

NOTIFY_SQL = f"SELECT pg_notify('{QUEUE_CHANNEL}', current_schema() || '/' || %s)"
"""Run inside the writing transaction with the chart name: the payload is
``<schema>/<name>``, so stores in other schemas of one database do not wake each other."""

_WAIT = 0.5  # how long one wait for notifications lasts before the stop flag is read again
_MAX_BACKOFF = 5.0


class QueueListener:
    """A daemon thread that ``LISTEN``s on :data:`QUEUE_CHANNEL` on its own connection and
    calls ``heard()`` when a run of one of ``names`` became claimable.

    ``heard`` runs on the listener's thread and must not block for long (the worker's wakes
    a waiting claim loop). It is also called once each time the listener (re)connects, since
    a note sent while it was not listening is lost."""

    def __init__(
        self,
        dsn: str,
        names: Collection[str],
        heard: Callable[[], None],
        *,
        label: str = "",
        connect_timeout: int = 10,
    ) -> None:
        self._dsn = dsn
        self._names = frozenset(names)
        self._heard = heard
        self._label = label
        self._connect_timeout = connect_timeout
        self._stop = threading.Event()
        self._conn: Any = None
        self.listening = threading.Event()
        """Set while ``LISTEN`` is active on a live connection."""
        self.notes = 0
        """How many notifications for this listener's names it heard."""
        self.reconnects = 0
        """How often the listener connected again after losing its connection."""
        self._started_once = False
        self._thread = threading.Thread(
            target=self._run, name=f"trackway-listen-{label}", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop listening and close the connection (waits up to ``timeout`` seconds)."""
        self._stop.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                self._listen()
                failures = 0
            except Exception as exc:  # the connection went away: poll until it is back
                self.listening.clear()
                failures += 1
                pause = min(_MAX_BACKOFF, 0.1 * 2 ** (failures - 1))
                log.warning(
                    "the queue listener lost its connection (%s); listening again in %.2f s "
                    "(the worker polls meanwhile)",
                    type(exc).__name__,
                    pause,
                    extra={"event": "listen_lost", "worker": self._label, "fields": {}},
                )
                self._stop.wait(pause)
            finally:
                self._close()

    def _listen(self) -> None:
        import psycopg

        self._conn = conn = psycopg.connect(
            self._dsn,
            autocommit=True,
            connect_timeout=self._connect_timeout,
            application_name=f"trackway-listen {self._label}"[:63],
        )
        conn.execute(f"LISTEN {QUEUE_CHANNEL}")
        row = conn.execute("SELECT current_schema()").fetchone()
        schema = row[0] if row is not None else None
        wanted = {f"{schema}/{name}" for name in self._names}
        if self._started_once:
            self.reconnects += 1
        self._started_once = True
        self.listening.set()
        self._heard()  # anything submitted while nobody listened is claimable now
        while not self._stop.is_set():
            for note in conn.notifies(timeout=_WAIT):
                if note.payload in wanted:
                    self.notes += 1
                    self._heard()
                if self._stop.is_set():
                    return

    def _close(self) -> None:
        conn, self._conn = self._conn, None
        self.listening.clear()
        if conn is not None:
            with contextlib.suppress(Exception):  # already broken: nothing to close
                conn.close()
