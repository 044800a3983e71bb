"""Workers hear the queue: ``submit``, ``answer`` and a released lease ``NOTIFY``, and a
listening worker claims at once. Each worker here polls once an hour, so only a note can
wake it: a run that ends in these tests was claimed because it was heard."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import psycopg
import pytest

from tests.backends import run_async
from tests.pg import pg_schema
from trackway.engine import PostgresStore, Worker

from .charts import CHARTS

pytestmark = pytest.mark.usefixtures("async_backend")

HOURLY = 3600.0
PATIENCE = 30.0  # seconds before a test gives up waiting (a hang fails, never blocks CI)


def _deaf_unless_heard(store: PostgresStore, **kw: Any) -> Worker:
    kw.setdefault("lease_seconds", 2.0)
    return Worker(store, CHARTS, poll_interval=HOURLY, **kw)


def _drive(
    worker: Worker, steps: Callable[[], Any], *, until: Callable[[], bool] | None = None
) -> Any:
    """Run ``worker`` until it listens, do ``steps()``, wait for ``until()``, stop it."""

    async def main() -> Any:
        out: list[Any] = []

        async def drive() -> None:
            out.append(await worker.run())

        with anyio.fail_after(PATIENCE):
            async with anyio.create_task_group() as tg:
                tg.start_soon(drive)
                while not worker.listening:  # noqa: ASYNC110 - the listener's thread sets it
                    await anyio.sleep(0.005)
                await anyio.sleep(0.05)  # the claim loop is asleep on its hourly poll
                result = await anyio.to_thread.run_sync(steps)  # as another process would
                while until is not None and not until():  # noqa: ASYNC110 - another view
                    await anyio.sleep(0.005)
                worker.stop()  # wakes the claim loop: no hourly poll to wait out
        return out[0], result

    return run_async(main)


def test_a_submitted_run_is_claimed_when_heard(store: PostgresStore) -> None:
    worker = _deaf_unless_heard(store)
    rids: list[str] = []
    report, _ = _drive(
        worker,
        lambda: rids.append(store.submit("steps", {})),
        until=lambda: bool(rids) and store.queued(rids[0]).state == "done",
    )
    assert report.done == 1 and report.claimed == 1
    assert worker._listener is None and not worker.listening  # stopped with the worker


def test_an_answered_run_is_resumed_when_heard(store: PostgresStore) -> None:
    rid = store.submit("approval", {})
    worker = _deaf_unless_heard(store)

    def answer() -> None:
        deadline = time.monotonic() + PATIENCE
        while store.queued(rid).state != "paused":  # claimed when the listener connected
            assert time.monotonic() < deadline, "the submitted run never paused"
            time.sleep(0.005)
        store.answer(store.queued(rid).checkpoint_id or "", "yes")

    report, _ = _drive(worker, answer, until=lambda: store.queued(rid).state == "done")
    assert report.paused == 1 and report.done == 1
    assert store.load(rid).state["done"] == "answer=yes"


def test_a_worker_that_does_not_listen_waits_for_its_poll(store: PostgresStore) -> None:
    """The control: the same worker with ``listen=False`` claims nothing within a second,
    so the claims above were the notes' doing."""
    worker = _deaf_unless_heard(store, listen=False)

    async def main() -> str:
        async with anyio.create_task_group() as tg:
            tg.start_soon(worker.run)
            await anyio.sleep(0.2)
            rid = store.submit("steps", {})
            await anyio.sleep(1.0)
            state = store.queued(rid).state
            worker.stop()
        return state

    assert run_async(main) == "queued"
    assert not worker.listening


@pytest.fixture
def other_schema() -> Iterator[PostgresStore]:
    with pg_schema("tw") as dsn:
        s = PostgresStore(dsn)
        yield s
        s.close()


def test_notes_stay_in_their_schema(store: PostgresStore, other_schema: PostgresStore) -> None:
    """A store in another schema of the same database does not wake this worker."""
    worker = _deaf_unless_heard(store)
    report, _ = _drive(worker, lambda: [other_schema.submit("steps", {}) for _ in range(3)])
    assert worker._listener is None
    assert report.claimed == 0
    assert [e.state for e in other_schema.queue()] == ["queued"] * 3


def test_a_listener_whose_session_is_ended_listens_again(store: PostgresStore) -> None:
    """``pg_terminate_backend`` on the listener's session: it reconnects, and the next
    submit is still heard."""
    worker = _deaf_unless_heard(store)
    rids: list[str] = []

    def kill_then_submit() -> None:
        listener = worker._listener
        assert listener is not None
        with psycopg.connect(store._dsn, autocommit=True) as admin:
            killed = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = %s",
                (f"trackway-listen {worker.worker_id}"[:63],),
            ).fetchall()
        assert killed == [(True,)]
        deadline = time.monotonic() + PATIENCE
        while listener.reconnects == 0 or not listener.listening.is_set():
            assert time.monotonic() < deadline, "the listener never listened again"
            time.sleep(0.01)
        rids.append(store.submit("steps", {}))

    report, _ = _drive(
        worker,
        kill_then_submit,
        until=lambda: bool(rids) and store.queued(rids[0]).state == "done",
    )
    assert report.done == 1
