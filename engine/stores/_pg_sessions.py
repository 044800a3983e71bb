"""The sessions a :class:`PostgresStore` writes through: a ``psycopg_pool`` connection pool,
each transaction on a session of its own (runs in a process no longer queue on one
connection), and a dead session found at checkout and replaced before the caller sees it."""

from __future__ import annotations

import select
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from ..core._errors import ConfigurationError, StoreError

__all__ = ["PgSessions", "check_pool_size"]


def check_pool_size(pool_size: object) -> int:
    """``pool_size`` as given, or a :class:`ConfigurationError` that names the fix."""
    if isinstance(pool_size, bool) or not isinstance(pool_size, int) or pool_size < 1:
        raise ConfigurationError(
            f"PostgresStore(pool_size=...) takes an int >= 1 (the most sessions the store "
            f"opens at once), got {pool_size!r}"
        )
    return pool_size


def _check_idle(db: Any) -> None:
    """Raise ``OperationalError`` (the session marked broken) if the server ended it while
    it sat idle. Its last words (the ``FATAL`` of a ``pg_terminate_backend`` or a shutdown,
    or the end of the stream) wait unread on the socket, and a healthy idle session has
    nothing to read: a poll with no wait tells them apart at no round trip. A session with
    something unread is asked once (an empty query), which a dead one fails."""
    from psycopg_pool import ConnectionPool

    poller = select.poll()
    poller.register(db.pgconn.socket, select.POLLIN)
    if poller.poll(0):
        ConnectionPool.check_connection(db)


class PgSessions:
    """A pool of sessions to one server. ``checkout`` yields a session with a transaction
    begun on it. Health is checked at checkout, before anything of the caller's is sent:
    a session the server ended while it sat idle has its last words waiting on its socket
    (a poll with no wait finds them), and a ``BEGIN`` that fails is the second line. Such a
    session is dropped (with every other dead one in the pool) and the caller given a live
    one. No extra round trip is spent on a healthy session."""

    def __init__(
        self,
        dsn: Callable[[], str],
        *,
        pool_size: int,
        connect_timeout: int,
        reconnect_attempts: int,
        unreachable: Callable[[BaseException], StoreError],
        lost: Callable[[BaseException], StoreError],
    ) -> None:
        from psycopg_pool import ConnectionPool

        self._unreachable = unreachable
        self._lost = lost
        self._connect_timeout = connect_timeout
        self.reconnect_attempts = reconnect_attempts
        self.replaced = 0
        """Sessions found dead at checkout (or lost in a transaction) and replaced."""
        self.pool: Any = ConnectionPool(
            dsn,
            min_size=1,
            max_size=pool_size,
            kwargs={"connect_timeout": connect_timeout},
            open=False,
            timeout=float(connect_timeout),
            name="trackway",
        )
        self.pool.open(wait=False)

    @contextmanager
    def checkout(self, *, single: bool = False) -> Iterator[Any]:
        """A session with a transaction begun on it (``single``: in autocommit, for one
        statement that is its own transaction: one round trip, no ``BEGIN``/``COMMIT``),
        given back to the pool after. A session lost after it was found alive (in a
        statement, or at ``COMMIT``) fails the call with the ``lost`` error and is never
        retried (it may have committed); the pool drops it on return."""
        import psycopg

        db, begun = self._begin(single)
        try:
            with begun:
                yield db
        except psycopg.OperationalError as exc:
            if db.broken or db.closed:
                raise self._lost(exc) from exc
            raise
        finally:
            if db.broken or db.closed:
                self.replaced += 1
            elif single:
                db.autocommit = False
            self.pool.putconn(db)

    def _begin(self, single: bool) -> tuple[Any, ExitStack]:
        import psycopg

        # every pooled session can be dead at once (a restart): each is tried once at most,
        # and a failure to open any is retried ``reconnect_attempts`` times with backoff
        dead_left = self.pool.max_size + 1
        waits_left = self.reconnect_attempts + 1
        while True:
            try:
                db = self._getconn()
            except StoreError as exc:
                waits_left -= 1
                if waits_left <= 0:
                    raise StoreError(
                        f"{exc} ({self.reconnect_attempts + 1} attempts to open a session failed)"
                    ) from None
                time.sleep(min(2.0, 0.1 * 2 ** (self.reconnect_attempts - waits_left)))
                continue
            begun = ExitStack()
            try:
                _check_idle(db)
                if single:
                    db.autocommit = True
                else:
                    begun.enter_context(db.transaction())
            except psycopg.OperationalError as exc:
                alive = not (db.broken or db.closed)
                self.pool.putconn(db)
                if alive:
                    raise self._unreachable(exc) from None
                self.replaced += 1
                dead_left -= 1
                if dead_left <= 0:
                    raise self._unreachable(exc) from None
                self._drop_dead()
                continue
            return db, begun

    def _getconn(self) -> Any:
        from psycopg_pool import PoolClosed, PoolTimeout

        try:
            return self.pool.getconn()
        except PoolTimeout:
            raise self._unreachable(self._why_no_session()) from None
        except PoolClosed:
            raise StoreError("the PostgresStore is closed: open a new one") from None

    def _why_no_session(self) -> BaseException:
        """Why the pool has no session to give: one direct attempt, for the server's own
        reason (the pool's attempts are in its log only)."""
        import psycopg

        try:
            psycopg.connect(
                self.pool._resolve_conninfo(), connect_timeout=self._connect_timeout
            ).close()
        except psycopg.Error as exc:
            return exc
        return TimeoutError(
            f"no session free within {self._connect_timeout} s (every one of the "
            f"{self.pool.max_size} is busy: raise pool_size)"
        )

    def _drop_dead(self) -> None:
        """Drop every idle session that no longer answers (one found dead usually means the
        server ended them all); the pool opens new ones."""
        self.pool.check()

    def close(self) -> None:
        self.pool.close()
