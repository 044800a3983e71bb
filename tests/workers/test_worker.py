"""Workers in this process, on the real PostgreSQL: claims, pauses answered, failures,
stopping between stages, a dead worker's lease, an agent driven by name."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import anyio
import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from tests.backends import run_async
from trackway import Executor, MemoryStore, PostgresStore
from trackway.agent import Agent, mock, served_at
from trackway.engine import ConfigurationError, StoreError, UnknownRunError, Worker
from trackway.engine.run._release import Released, StopSignal, driving_with
from trackway.tools import ask_human

from .charts import CHARTS, QUESTIONS, STAGES, STEPS

pytestmark = pytest.mark.usefixtures("async_backend")

EXPECTED_PATHS = [f"s{n}#{n - 1}" for n in range(1, STAGES + 1)]


def _worker(store: PostgresStore, **kw: Any) -> Worker:
    kw.setdefault("lease_seconds", 2.0)
    kw.setdefault("poll_interval", 0.02)
    return Worker(store, CHARTS, **kw)


def _run_until(
    worker: Worker, ready: Callable[[], bool], then: Callable[[], Any] = lambda: None
) -> Any:
    """Drive ``worker`` in a task until ``ready()`` holds (polled: the store is another
    process's view), call ``then()``, stop the worker; returns its report."""

    async def main() -> Any:
        out: list[Any] = []

        async def drive() -> None:
            out.append(await worker.run())

        async with anyio.create_task_group() as tg:
            tg.start_soon(drive)
            while not ready():  # noqa: ASYNC110 - polling
                await anyio.sleep(0.005)
            then()
            worker.stop()
        return out[0]

    return run_async(main)


def _paths(store: PostgresStore, run_id: str) -> list[str]:
    return [c.stage_path for c in store.load(run_id).commits]


def test_runs_paused_and_failing_runs_settle(store: PostgresStore) -> None:
    ok = [store.submit("steps", {"seed": i}) for i in range(6)]
    bad = store.submit("steps", {"fail_at": 3})
    asks = store.submit("approval", {"seed": 7})
    refused = store.submit("steps", ["not", "a", "dict"])
    report = _worker(store).run_sync(idle_exit=True)
    assert (report.claimed, report.done, report.failed, report.paused) == (9, 6, 2, 1)
    for rid in ok:
        assert store.queued(rid).state == "done"
        snap = store.load(rid)
        assert snap.status == "done" and snap.state["total"] == sum(range(1, STAGES + 1))
        assert _paths(store, rid) == EXPECTED_PATHS
    failed = store.queued(bad)
    assert failed.state == "failed" and "stage 3 fails on purpose" in (failed.error or "")
    assert store.load(bad).status == "failed"
    entry = store.queued(refused)
    assert entry.state == "failed" and "input" in (entry.error or "")
    waiting = store.queued(asks)
    assert waiting.state == "paused" and waiting.checkpoint_id == f"{asks}@2"
    assert not waiting.ended  # a pause is not an end
    store.answer(waiting.checkpoint_id, "yes")
    with pytest.raises(UnknownRunError, match="answered already"):
        store.answer(waiting.checkpoint_id, "again")
    again = _worker(store).run_sync(idle_exit=True)
    assert (again.claimed, again.done) == (1, 1)
    assert store.queued(asks).state == "done" and store.queued(asks).ended
    assert store.load(asks).state["done"] == "answer=yes"
    assert store.queue_counts() == {"done": 7, "failed": 2}


def test_a_name_no_worker_registered_stays_queued(store: PostgresStore) -> None:
    other = store.submit("elsewhere", {})
    mine = store.submit("steps", {})
    report = _worker(store).run_sync(idle_exit=True)
    assert report.claimed == 1
    assert store.queued(mine).state == "done"
    assert store.queued(other).state == "queued" and store.queued(other).attempts == 0


def test_a_dead_workers_run_is_picked_up_after_its_lease(store: PostgresStore) -> None:
    """A claim nobody drives (its worker died before the run began, or mid-run) waits for
    its lease, and idle_exit waits with it instead of leaving the run behind."""
    never_began = store.submit("steps", {"seed": 1})
    mid_run = store.submit("steps", {"seed": 2})
    (claimed,) = store._queue_claim("ghost-1", 0.6, 1, ["steps"])
    assert claimed.run_id == never_began
    # the other dies after five commits: its log holds them, its lease runs out
    (second,) = store._queue_claim("ghost-2", 0.6, 1, ["steps"])
    sig = StopSignal()

    class Cut:  # the run's driver "dies" at the first stage boundary after commit 5
        def on_commit(self, event: Any) -> None:
            if event.seq == 5:
                sig.request("simulated death")

    ex = Executor(STEPS, store=store, recorders=[Cut()])

    async def die() -> None:
        with driving_with(sig), pytest.raises(Released):
            await ex.run({"seed": 2, "delay": 0.006}, run_id=mid_run)

    run_async(die)
    assert store.load(mid_run).status == "running"
    before = len(store.load(mid_run).commits)
    assert 5 <= before < STAGES
    started = time.monotonic()
    report = _worker(store).run_sync(idle_exit=True)
    assert time.monotonic() - started >= 0.3  # it waited for the leases
    assert report.claimed == 2 and report.done == 2
    for rid in (never_began, mid_run):
        entry = store.queued(rid)
        # each ghost claimed alone and "died": one attempt charged, two claims in all
        assert (entry.state, entry.attempts, entry.claims) == ("done", 1, 2)
        assert _paths(store, rid) == EXPECTED_PATHS
    assert second.run_id == mid_run


def test_stop_lets_runs_go_between_stages_and_another_worker_finishes(store: PostgresStore) -> None:
    runs = [store.submit("steps", {"seed": i, "delay": 0.01}) for i in range(3)]
    first = _worker(store, max_concurrent_runs=3)
    done = lambda: sum(len(store.history(r)) if _began(store, r) else 0 for r in runs) >= 6  # noqa: E731
    report = _run_until(first, done)
    assert report.released == 3 and report.done == 0
    for rid in runs:
        entry = store.queued(rid)
        assert entry.state == "running" and entry.worker is None  # let go, lease expired
        assert store.load(rid).status == "running"
        assert 0 < len(store.history(rid)) < STAGES
    report2 = _worker(store).run_sync(idle_exit=True)
    assert report2.done == 3
    for rid in runs:
        assert _paths(store, rid) == EXPECTED_PATHS
        assert store.load(rid).state["total"] == sum(range(1, STAGES + 1))


def _began(store: PostgresStore, run_id: str) -> bool:
    try:
        store.history(run_id)
    except UnknownRunError:
        return False
    return True


def test_a_lost_lease_lets_the_run_go_and_records_nothing(
    store: PostgresStore, pg_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Another worker took the lease (this one's renewal came too late): the run stops at
    its next stage boundary, and this worker's outcome is not recorded over the holder's."""
    rid = store.submit("steps", {"delay": 0.05})
    worker = _worker(store, lease_seconds=0.6)
    thief = PostgresStore(pg_dsn)

    def steal() -> None:
        while not _began(thief, rid) or len(thief.history(rid)) < 2:
            time.sleep(0.01)
        with thief._tx() as db:
            db.execute(
                "UPDATE trackway_queue SET worker = 'thief', lease_until = 1e12, "
                "lease_token = 'thief-token' WHERE run_id = %s",
                (rid,),
            )

    t = threading.Thread(target=steal)
    t.start()
    with caplog.at_level(logging.INFO, logger="trackway.worker"):
        report = _run_until(worker, lambda: t.is_alive() is False and not worker.active)
    t.join()
    assert report.done == 0
    entry = store.queued(rid)
    assert entry.worker == "thief" and entry.state == "running"
    assert len(store.history(rid)) < STAGES
    assert any(getattr(r, "event", "") == "lease_lost" for r in caplog.records)
    thief.close()


def test_a_run_that_keeps_killing_its_workers_is_given_up(store: PostgresStore) -> None:
    rid = store.submit("steps", {})
    for n in range(3):
        store._queue_claim(f"ghost-{n}", 0.0, 1, ["steps"])
        time.sleep(0.01)
    report = _worker(store, max_attempts=3).run_sync(idle_exit=True)
    assert report.failed == 1
    entry = store.queued(rid)
    assert entry.state == "failed" and "gave up after 3 attempts" in (entry.error or "")


def test_workers_lists_live_workers_and_their_leases(store: PostgresStore) -> None:
    rid = store.submit("steps", {"delay": 0.03})
    worker = _worker(store, lease_seconds=1.0)
    seen: list[Any] = []
    _run_until(worker, lambda: bool(worker.active), lambda: seen.extend(store.workers()))
    (info,) = seen
    assert info.worker_id == worker.worker_id and info.live and info.held == (rid,)
    assert info.charts == tuple(sorted(CHARTS)) and info.max_runs == 4
    assert store.workers() == []
    (gone,) = store.workers(include_gone=True)
    assert gone.state == "stopped" and not gone.live


def test_refusals_name_the_fix(store: PostgresStore) -> None:
    with pytest.raises(ConfigurationError, match="PostgresStore"):
        Worker(MemoryStore(), CHARTS)
    with pytest.raises(ConfigurationError, match="at least one chart"):
        Worker(store, {})
    with pytest.raises(ConfigurationError, match=r"charts\['x'\] is int"):
        Worker(store, {"x": 3})
    with pytest.raises(ConfigurationError, match="lease_seconds"):
        Worker(store, CHARTS, lease_seconds=0)
    with pytest.raises(ConfigurationError, match="must be JSON"):
        store.submit("steps", {"when": object()})
    with pytest.raises(UnknownRunError, match="no queued run waits"):
        store.answer("run-x@3", 1)
    rid = store.submit("steps", {})
    with pytest.raises(ConfigurationError, match="already in the queue"):
        store.submit("steps", {}, run_id=rid)


def _respond(request: Any) -> Any:
    last = request.messages[-1]
    if last.role == "user":
        return {"tool_calls": [{"id": "a1", "name": "ask_human", "args": {"question": "Which?"}}]}
    return f"Noted: {last.content}"


def test_an_agent_by_name_pauses_resumes_and_keeps_the_served_at_law(store: PostgresStore) -> None:
    agent = (
        Agent.create(provider=mock(respond=_respond), model="m", name="desk")
        .tool(ask_human())
        .build()
    )
    rid = store.submit("desk", "Please help")
    worker = Worker(store, {"desk": agent}, lease_seconds=2.0, poll_interval=0.02)
    assert worker.run_sync(idle_exit=True).paused == 1
    entry = store.queued(rid)
    assert entry.state == "paused"
    store.answer(entry.checkpoint_id, 12)  # not text: refused before the checkpoint is used
    assert worker.run_sync(idle_exit=True).paused == 1
    entry = store.queued(rid)
    assert entry.state == "paused" and "answer refused" in (entry.error or "")
    store.answer(entry.checkpoint_id, "order 42")
    assert worker.run_sync(idle_exit=True).done == 1
    snap = store.load(rid)
    assert snap.state["final_answer"] == "Noted: order 42"
    receipts = snap.state["receipts"]
    assert len(receipts) == 2
    for k, receipt in enumerate(receipts, 1):
        assert served_at(snap, k).hash == receipt["request_hash"]


def test_an_agent_with_another_store_is_refused(store: PostgresStore) -> None:
    agent = Agent.create(provider=mock(reply="x"), model="m", store=MemoryStore()).build()
    with pytest.raises(ConfigurationError, match="without store="):
        Worker(store, {"a": agent})


def test_a_worker_rides_out_a_database_outage(
    pg_dsn: str, store: PostgresStore, caplog: pytest.LogCaptureFixture
) -> None:
    """The worker's connection is lost and cannot be opened for a while: it logs, backs off
    and claims again once the database answers."""
    own_name = f"tw-outage-{uuid.uuid4().hex[:8]}"
    real = make_conninfo(pg_dsn, application_name=own_name)
    own = PostgresStore(real, reconnect_attempts=0, connect_timeout=1)
    worker = Worker(own, CHARTS, lease_seconds=2.0, poll_interval=0.01)

    async def main() -> Any:
        async with anyio.create_task_group() as tg:
            out: list[Any] = []

            async def drive() -> None:
                out.append(await worker.run())

            tg.start_soon(drive)
            while worker.worker_id not in {w.worker_id for w in store.workers()}:  # noqa: ASYNC110
                await anyio.sleep(0.01)
            own._dsn = "postgresql://nobody@127.0.0.1:1/none"  # the server is away ...
            with psycopg.connect(pg_dsn, autocommit=True) as admin:  # ... its sessions gone
                admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE application_name = %s",
                    (own_name,),
                )
            with anyio.fail_after(30):  # a claim waits up to connect_timeout, then fails
                while not any(getattr(r, "event", "") == "claim_failed" for r in caplog.records):  # noqa: ASYNC110
                    await anyio.sleep(0.05)
            rid = store.submit("steps", {})
            own._dsn = real  # ... and back
            while store.queued(rid).state != "done":  # noqa: ASYNC110
                await anyio.sleep(0.01)
            worker.stop()
        return out[0], rid

    with caplog.at_level(logging.WARNING, logger="trackway.worker"):
        report, rid = run_async(main)
    assert any(getattr(r, "event", "") == "claim_failed" for r in caplog.records)
    assert report.done == 1 and store.queued(rid).state == "done"
    own.close()


def test_pauses_answered_do_not_count_as_attempts(store: PostgresStore) -> None:
    """A run that asks more questions than max_attempts, each answered, ends done: resuming
    with an answer is progress, not a crash (issue 30)."""
    rid = store.submit("questions", {})
    worker = _worker(store, max_attempts=2)
    for n in range(1, QUESTIONS + 1):
        assert worker.run_sync(idle_exit=True).paused == 1
        entry = store.queued(rid)
        assert entry.state == "paused" and entry.attempts == 0, entry
        store.answer(entry.checkpoint_id or "", f"answer {n}")
    assert worker.run_sync(idle_exit=True).done == 1
    entry = store.queued(rid)
    assert (entry.state, entry.attempts, entry.claims) == ("done", 0, QUESTIONS + 1)
    state = store.load(rid).state
    assert [state[f"a{n}"] for n in range(1, QUESTIONS + 1)] == [
        f"answer {n}" for n in range(1, QUESTIONS + 1)
    ]


def test_refused_answers_do_not_count_as_attempts(store: PostgresStore) -> None:
    """Four mistyped answers, each refused before the checkpoint is used, then a good one:
    the run ends done, not "gave up after 5 attempts"."""
    agent = (
        Agent.create(provider=mock(respond=_respond), model="m", name="desk")
        .tool(ask_human())
        .build()
    )
    rid = store.submit("desk", "Please help")
    worker = Worker(store, {"desk": agent}, lease_seconds=2.0, poll_interval=0.02, max_attempts=2)
    assert worker.run_sync(idle_exit=True).paused == 1
    for _ in range(4):
        store.answer(store.queued(rid).checkpoint_id or "", 12)  # not text: refused
        assert worker.run_sync(idle_exit=True).paused == 1
        entry = store.queued(rid)
        assert entry.state == "paused" and "answer refused" in (entry.error or "")
        assert entry.attempts == 0
    store.answer(store.queued(rid).checkpoint_id or "", "order 42")
    assert worker.run_sync(idle_exit=True).done == 1
    assert store.queued(rid).state == "done"
    assert store.load(rid).state["final_answer"] == "Noted: order 42"


def test_opening_a_store_takes_no_lock_on_tables_in_use(store: PostgresStore, pg_dsn: str) -> None:
    """A worker starting beside busy ones: its store must not run ALTER TABLE (an exclusive
    lock, even for a column that exists) on tables others hold rows of. Under load it waited
    behind them, and deadlocked with them once (issue 30)."""
    import psycopg

    rid = store.submit("steps", {})
    opened: list[PostgresStore] = []
    with psycopg.connect(pg_dsn) as busy:  # a transaction holding a queue row, as a write does
        busy.execute("SELECT 1 FROM trackway_queue WHERE run_id = %s FOR SHARE", (rid,))
        t = threading.Thread(target=lambda: opened.append(PostgresStore(pg_dsn)))
        t.start()
        t.join(5)
        blocked = t.is_alive()
        busy.rollback()
    t.join()
    assert not blocked, "opening the store waited for another transaction's locks"
    opened[0].close()


def test_every_write_of_a_fenced_run_holds_its_lease(store: PostgresStore) -> None:
    """Each kind of write a worker makes for a run is refused once its claim's lease token is
    no longer the queue's, and lands while it is: one commit, a group, many commits, the
    run's opening and ending, its checkpoint and a claim of it."""
    from trackway.engine import LeaseLostError
    from trackway.engine.stores._group_commit import append_group

    rid = store.submit("approval", {})
    (claim,) = store._queue_claim("w1", 30, 1, ["approval"])
    store._fence(rid, claim.token)
    paused = Executor(CHARTS["approval"], store=store).run_sync({}, run_id=rid)
    assert paused.status == "paused" and len(store.history(rid)) == 2  # all of it landed
    cp = paused.checkpoint
    assert cp is not None
    later = [paused.snapshot.commits[0]._replace(seq=2 + n) for n in range(1, 10)]
    with store._tx() as db:  # another worker claims the run: a new token
        db.execute("UPDATE trackway_queue SET lease_token = 'other' WHERE run_id = %s", (rid,))
    writes: dict[str, Callable[[], Any]] = {
        "begin_run": lambda: store.begin_run(rid, CHARTS["approval"].id, {}),
        "one commit": lambda: store.append(rid, [later[0]]),
        "many commits": lambda: store.append(rid, later),
        "a group": lambda: _raise_first(append_group(store, [(rid, [later[0]])])),
        "finish_run": lambda: store.finish_run(rid, "failed", None),
        "save_checkpoint": lambda: store.save_checkpoint(cp),
        "claim_checkpoint": lambda: store.claim_checkpoint(cp.checkpoint_id, b"1"),
    }
    for what, write in writes.items():
        with pytest.raises(LeaseLostError, match="lease on it was lost"):
            write()
        assert store.load(rid).status == "paused" and len(store.history(rid)) == 2, what
    assert not store.checkpoint_claim(cp.checkpoint_id).claimed  # type: ignore[union-attr]
    store._unfence(rid)


def _raise_first(failed: dict[str, Exception]) -> None:
    for error in failed.values():
        raise error


@pytest.mark.parametrize("landed", [True, False])
def test_a_settle_whose_connection_is_lost_is_read_back(
    store: PostgresStore, caplog: pytest.LogCaptureFixture, landed: bool
) -> None:
    """The connection is lost during the settle (a restart): it may have committed. The
    worker reads the row back: a settle that landed is reported settled, once; one that
    did not is reported failed, and the next worker takes the run over once its lease runs
    out. (The lost connection is injected: it cannot be timed against a real COMMIT here.)"""
    rid = store.submit("steps", {"seed": 1})
    real = store._queue_settle
    calls: list[str] = []

    def settle(run_id: str, token: str, state: str, **kw: Any) -> bool:
        calls.append(state)
        if len(calls) == 1:
            if landed:
                real(run_id, token, state, **kw)
            raise StoreError("the connection to PostgreSQL was lost during a transaction")
        return real(run_id, token, state, **kw)

    store._queue_settle = settle  # type: ignore[method-assign]
    with caplog.at_level(logging.INFO, logger="trackway.worker"):
        report = _worker(store, lease_seconds=0.6).run_sync(idle_exit=True)
        if not landed:  # still leased to the first worker: the next one takes it over
            assert store.queued(rid).state == "running" and report.done == 0
            time.sleep(0.7)
            report = _worker(store).run_sync(idle_exit=True)
    events = [getattr(r, "event", "") for r in caplog.records]
    assert store.queued(rid).state == "done" and store.load(rid).status == "done"
    assert events.count("settled") == 1 and report.done == 1
    assert events.count("settle_failed") == (0 if landed else 1)
    assert calls == (["done"] if landed else ["done", "done"])


def test_a_settle_read_back_tells_a_later_claim_apart(store: PostgresStore) -> None:
    """A settle read back counts only if no worker claimed the run since (the row's claim
    count), so another worker's settle is never taken for this one's."""
    rid = store.submit("steps", {})
    (first,) = store._queue_claim("w1", 0.0, 1, ["steps"])
    assert not store._queue_settled(first, "done")  # not settled: still running, leased
    (second,) = store._queue_claim("w2", 30.0, 1, ["steps"], idle=True)  # w1's lease ran out
    assert second.claims == first.claims + 1
    assert store._queue_settle(rid, second.token, "done")
    assert store._queue_settled(second, "done") and not store._queue_settled(second, "failed")
    assert not store._queue_settled(first, "done")  # w2 settled it, not w1


def test_a_settle_waits_on_the_server_off_the_event_loop(store: PostgresStore) -> None:
    """How each run went is recorded from a worker thread: the loop serves the other runs
    meanwhile (the store offloads, as ``PostgresStore`` does by default)."""
    rids = [store.submit("steps", {"seed": i}) for i in range(3)]
    real = store._queue_settle
    threads: list[int] = []

    def settle(*args: Any, **kw: Any) -> bool:
        threads.append(threading.get_ident())
        return real(*args, **kw)

    store._queue_settle = settle  # type: ignore[method-assign]
    report = _worker(store).run_sync(idle_exit=True)  # its event loop runs in this thread
    assert report.done == 3 and all(store.queued(r).state == "done" for r in rids)
    assert len(threads) == 3 and threading.get_ident() not in threads
