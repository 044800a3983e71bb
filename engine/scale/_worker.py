"""Workers: processes that claim submitted runs from a PostgreSQL store and drive them.

Any number of workers (``trackway worker``, or :class:`Worker` in Python) share one store.
Each claims runnable runs — new, answered after a pause, or left by a dead worker — under a
lease it renews from a thread of its own while it drives them (so a stage that blocks the
event loop cannot cost the lease). A run is driven by one worker at a time: the claim is
``FOR UPDATE SKIP LOCKED``, the lease says who holds it, and every write the worker makes
for the run checks the claim's lease token in its own transaction, so a worker that lost its
lease without knowing (frozen past it) can change nothing, not even how the run ended.
A run whose worker died is continued by another with ``recover()`` from its log: nothing that
committed runs again, nothing that did not is skipped. It is continued *solo* (its worker
takes nothing else meanwhile), and only a solo claim whose worker died counts as an
attempt: a run that kills its worker is failed after ``max_attempts``, alone.

Stopping (``stop()``, SIGTERM under ``trackway worker``): no new claims; each run finishes
its stage in flight, writes its commits and is let go with its lease expired, so another
worker continues it at once. A second signal cancels what is still running.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Mapping
from typing import Any, cast

import anyio
from anyio import TASK_STATUS_IGNORED
from anyio.abc import TaskStatus
from anyio.lowlevel import current_token

from ..core._errors import (
    ConfigurationError,
    SealError,
    SealRequiredError,
    StoreError,
)
from ..core._sync import run_sync
from ..execute._recovery import RECOVERABLE_FAILURES
from ..observe._redact import RedactionPolicy, Redactor
from ..run._release import Released, StopSignal, driving_with
from ..stores._postgres import PostgresStore
from ..stores._store import Durability
from ..stores.queue._listen import QueueListener
from ..stores.queue._run_queue import Claim, PgRunQueue, new_worker_id
from ._worker_attempt import attempt, frames, give_up
from ._worker_leases import leave, renew_leases
from ._worker_listen import start_listening, wake_from_thread
from ._worker_target import WorkerReport, WorkOutcome, WorkTarget, bind_target, log_line

__all__ = ["Worker", "WorkerReport"]


class Worker:
    """Claims and drives runs submitted to ``store`` (``store.submit(name, input)``).

    ``charts`` maps each name runs are submitted under to a built chart or an agent (an
    agent without a store is bound to this one). ``lease_seconds``: how long a claim holds
    without renewal (renewed every third of it; a dead worker's runs are picked up that long
    after its last renewal). ``max_concurrent_runs``: runs this worker drives at once.
    ``max_attempts``: claims of one run before it is failed as unrecoverable (a run that
    kills its worker every time must not kill them all; only claims that died driving the
    run alone count, never a pause, an answer or a refused answer). ``listen``: hear
    submitted, answered and released runs through PostgreSQL ``LISTEN``/``NOTIFY`` and claim
    them at once. ``poll_interval``: how often an idle worker asks for work anyway (the
    fallback for a note missed while the listener reconnects).
    """

    def __init__(
        self,
        store: Any,
        charts: Mapping[str, Any],
        *,
        lease_seconds: float = 30.0,
        max_concurrent_runs: int = 4,
        max_attempts: int = 5,
        poll_interval: float = 0.25,
        durability: Durability = "sync",
        worker_id: str | None = None,
        listen: bool = True,
    ) -> None:
        if not isinstance(store, PgRunQueue):
            raise ConfigurationError(
                f"Worker needs a store with a run queue, got {type(store).__name__}: workers "
                "share runs through PostgreSQL, PostgresStore('postgresql://...') (the "
                "postgres extra); on one machine, run_many() drives many runs in one process"
            )
        if not isinstance(charts, Mapping) or not charts:
            raise ConfigurationError(
                "Worker(store, charts={name: chart_or_agent}): give at least one chart or agent "
                "under the name runs are submitted with"
            )
        for what, value, low in (
            ("lease_seconds", lease_seconds, 0.5),
            ("poll_interval", poll_interval, 0.001),
        ):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < low:
                raise ConfigurationError(f"{what} must be a number >= {low}, got {value!r}")
        for what, count in (
            ("max_concurrent_runs", max_concurrent_runs),
            ("max_attempts", max_attempts),
        ):
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise ConfigurationError(f"{what} must be an int >= 1, got {count!r}")
        self.store = cast(PostgresStore, store)
        self.worker_id = worker_id or new_worker_id()
        self.lease_seconds = float(lease_seconds)
        self.max_concurrent_runs = max_concurrent_runs
        self.max_attempts = max_attempts
        self.poll_interval = float(poll_interval)
        self.listen = bool(listen)
        self._listener: QueueListener | None = None
        self._targets = {
            name: bind_target(name, c, store, durability) for name, c in charts.items()
        }
        self._names = sorted(self._targets)
        self._redacting = [n for n in self._names if getattr(self._targets[n], "redacts", False)]
        # error text the queue and the log keep of a redacted target's runs, masked as its
        # record masks it (RedactionPolicy(errors=True))
        self._error_text: dict[str, Redactor] = {}
        for n in self._redacting:
            policy = getattr(self._targets[n], "policy", None)
            if isinstance(policy, RedactionPolicy) and policy.errors:
                self._error_text[n] = Redactor(policy)
        if self._redacting and getattr(store, "seal", None) is None:
            raise SealRequiredError(
                f"Worker charts {self._redacting!r} run under a redaction policy, and the "
                f"worker's store has no seal: what the policy hides would be lost to the "
                "pool (a paused run could not be answered, a crashed one not recovered) or "
                "rest in clear in the queue. Give the store a seal every worker and submitter "
                "shares: PostgresStore(dsn, seal=Seal(key)) (Seal.new_key() makes a key; "
                "trackway worker reads TRACKWAY_SEAL_KEY)"
            )
        self._active: dict[str, StopSignal] = {}
        self._tokens: dict[str, str] = {}  # run id -> the lease token of its claim
        self._solo: str | None = None  # the run driven alone, if any: claim nothing meanwhile
        self._lock = threading.Lock()
        self._stopping = False
        # made in run(): set when a run ends or a signal arrives (claim again now), and
        # the scope of the runs (a second signal cancels it)
        self._wake: anyio.Event | None = None
        self._token: Any = None  # the running loop (run() sets it), for wakes from threads
        self._loop_thread: int | None = None
        self._runs_scope: anyio.CancelScope | None = None
        self._counts = dict.fromkeys(
            ("claimed", "done", "failed", "broken", "paused", "released"), 0
        )

    def __repr__(self) -> str:
        return f"<Worker {self.worker_id} charts={self._names} runs={len(self._active)}>"

    @property
    def listening(self) -> bool:
        """Whether the worker hears the queue now (``LISTEN`` active on a live connection);
        False before ``run()``, with ``listen=False``, and while the listener reconnects."""
        return self._listener is not None and self._listener.listening.is_set()

    @property
    def active(self) -> list[str]:
        """The runs this worker drives now."""
        with self._lock:
            return sorted(self._active)

    def stop(self, reason: str = "the worker is stopping") -> None:
        """Stop claiming; let every run go at its next stage boundary (safe from any
        thread and from a signal handler). ``run()`` returns once they are let go."""
        self._stopping = True
        with self._lock:
            for sig in self._active.values():
                sig.request(reason)
        self._wake_soon()  # an idle claim loop hears it now, not at its next poll

    def _wake_soon(self) -> None:
        """Wake the claim loop from any thread without waiting for it: on the loop's own
        thread the event is set here; from another thread a short-lived thread hands the
        wake to the loop (the caller may be what the loop is waiting for)."""
        token = self._token
        if token is None:
            return
        if threading.get_ident() == self._loop_thread:
            self._poke()
            return
        threading.Thread(target=wake_from_thread, args=(self._poke, token), daemon=True).start()

    # -- running -------------------------------------------------------------------------

    def run_sync(self, *, idle_exit: bool = False, handle_signals: bool = False) -> WorkerReport:
        """``run`` for callers without an event loop (it starts one)."""
        return run_sync(
            lambda: self.run(idle_exit=idle_exit, handle_signals=handle_signals),
            name="Worker.run_sync",
            twin="await worker.run(...)",
        )

    async def run(self, *, idle_exit: bool = False, handle_signals: bool = False) -> WorkerReport:
        """Claim and drive runs until ``stop()`` (or, with ``handle_signals``, SIGTERM or
        SIGINT: a second one cancels the runs still going). ``idle_exit``: return once no
        run is runnable and no other worker holds a live lease (so a run whose worker dies
        is still picked up)."""
        started = time.monotonic()
        store = self.store
        self._token = current_token()
        self._loop_thread = threading.get_ident()
        self._stopping = False
        self._counts = dict.fromkeys(self._counts, 0)
        await anyio.to_thread.run_sync(
            lambda: store._worker_register(
                self.worker_id,
                self.lease_seconds,
                self.max_concurrent_runs,
                self._names,
                self._redacting,
            )
        )
        done = threading.Event()
        renewer = threading.Thread(
            target=renew_leases,
            args=(self, done),
            name=f"trackway-lease-{self.worker_id}",
            daemon=True,
        )
        renewer.start()
        if self.listen:
            self._listener = start_listening(store, self._names, self.worker_id, self._poke)
        try:
            async with anyio.create_task_group() as outer:
                if handle_signals:  # listening before the first claim: no run held unheard
                    await outer.start(self._on_signals)
                log_line(
                    logging.INFO,
                    "started",
                    f"worker {self.worker_id} started",
                    self,
                    charts=self._names,
                    lease_seconds=self.lease_seconds,
                    max_concurrent_runs=self.max_concurrent_runs,
                )
                try:
                    await self._claim_loop(idle_exit)
                finally:
                    outer.cancel_scope.cancel()
        finally:
            done.set()
            with anyio.CancelScope(shield=True):
                listener, self._listener = self._listener, None
                if listener is not None:  # joined off the loop: a wake in flight completes
                    await anyio.to_thread.run_sync(listener.stop)
                await anyio.to_thread.run_sync(renewer.join)
                await anyio.to_thread.run_sync(leave, self)
        seconds = time.monotonic() - started
        report = WorkerReport(self.worker_id, seconds=seconds, **self._counts)
        log_line(logging.INFO, "stopped", f"worker {self.worker_id} stopped", self, **self._counts)
        return report

    async def _claim_loop(self, idle_exit: bool) -> None:
        """Claim while there is room, start each claimed run, wait for them when stopping."""
        store = self.store
        self._wake = wake = anyio.Event()
        failures = 0
        async with anyio.create_task_group() as runs:
            self._runs_scope = runs.cancel_scope
            while not self._stopping:
                free = self.max_concurrent_runs - len(self._active)
                claims: list[Claim] = []
                try:
                    if free > 0 and self._solo is None:
                        claims = await self._claim(free)
                    if not claims and idle_exit and not self._active:
                        runnable, held = await anyio.to_thread.run_sync(
                            store._queue_outstanding, self.worker_id, self._names
                        )
                        if runnable == 0 and held == 0:
                            return
                    failures = 0
                except StoreError as exc:  # the database is away: wait, then ask again
                    failures += 1
                    pause = min(5.0, self.poll_interval * 2**failures)
                    log_line(
                        logging.WARNING,
                        "claim_failed",
                        f"could not claim ({exc}); trying again in {pause:.2f} s",
                        self,
                        attempt=failures,
                    )
                    await anyio.sleep(pause)
                    continue
                for claim in claims:
                    if claim.solo and self.max_concurrent_runs > 1:
                        self._solo = claim.run_id
                    runs.start_soon(self._drive, claim)
                if claims:
                    await anyio.lowlevel.checkpoint()
                    continue
                with anyio.move_on_after(self.poll_interval):
                    await wake.wait()
                self._wake = wake = anyio.Event()

    async def _claim(self, free: int) -> list[Claim]:
        """Claim up to ``free`` runs on a worker thread (the loop keeps driving runs
        meanwhile). Shielded, and each claim is held in ``_active`` before the next
        checkpoint, so a cancelled worker gives back what it claimed instead of dropping it."""
        store = self.store
        with anyio.CancelScope(shield=True):
            claims = await anyio.to_thread.run_sync(
                lambda: store._queue_claim(
                    self.worker_id, self.lease_seconds, free, self._names, idle=not self._active
                )
            )
            for claim in claims:
                with self._lock:
                    self._active[claim.run_id] = StopSignal()
                    self._tokens[claim.run_id] = claim.token
                store._fence(claim.run_id, claim.token)
        return claims

    def _poke(self) -> None:
        """Wake the claim loop (the listener heard a claimable run)."""
        if self._wake is not None:
            self._wake.set()

    async def _on_signals(self, *, task_status: TaskStatus[None] = TASK_STATUS_IGNORED) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            task_status.started()
            async for signum in signals:
                if self._stopping:
                    log_line(
                        logging.WARNING,
                        "cancelled",
                        "second signal: cancelling the runs "
                        "still going (each is continued by another worker)",
                        self,
                    )
                    if self._runs_scope is not None:
                        self._runs_scope.cancel()
                    return
                name = signal.Signals(signum).name
                log_line(logging.INFO, "stopping", f"{name}: finishing the stages in flight", self)
                self.stop(f"the worker got {name}")
                if self._wake is not None:
                    self._wake.set()

    # -- one claim -------------------------------------------------------------------------

    async def _drive(self, claim: Claim) -> None:
        with self._lock:
            sig = self._active[claim.run_id]
        if self._stopping:
            sig.request("the worker is stopping")
        with self._lock:
            self._counts["claimed"] += 1
        log_line(
            logging.INFO,
            "claimed",
            f"claimed {claim.run_id} ({claim.name}, {claim.was})",
            self,
            run_id=claim.run_id,
            chart=claim.name,
            was=claim.was,
            attempt=claim.attempts,
            solo=claim.solo,
        )
        target = self._targets[claim.name]
        try:
            if claim.attempts >= self.max_attempts:
                outcome = give_up(self.store, claim)
            else:
                with driving_with(sig):
                    outcome = await self._attempt(target, claim)
        except Released as exc:
            outcome = WorkOutcome("running", None, None, retry=True)
            reason = exc.reason
            log_line(
                logging.INFO,
                "released",
                f"let {claim.run_id} go after commit {exc.commits}: {reason}",
                self,
                run_id=claim.run_id,
                commits=exc.commits,
            )
        except Exception as exc:
            retry = isinstance(exc, StoreError) or type(exc).__name__ in RECOVERABLE_FAILURES
            retry = retry and not isinstance(exc, SealError)  # no other worker would fare better
            said = self._said(claim, exc)
            outcome = WorkOutcome("failed", None, f"{type(exc).__name__}: {said}", retry)
            log_line(
                logging.ERROR,
                "error",
                f"{claim.run_id}: {type(exc).__name__}: {said}",
                self,
                run_id=claim.run_id,
                # under a policy hiding error text: the frames, never the message
                exc_info=exc if claim.name not in self._error_text else None,
                frames=frames(exc) if claim.name in self._error_text else None,
            )
        # (cancelled: the run stays in _active, and leave() gives its lease up)
        with self._lock:
            self._active.pop(claim.run_id, None)
        try:
            if self.store.offloads_io:  # the settle waits on the server: not on the loop
                await anyio.to_thread.run_sync(self._settle, claim, outcome)
            else:
                self._settle(claim, outcome)
        finally:
            with self._lock:
                self._tokens.pop(claim.run_id, None)
            self.store._unfence(claim.run_id)
            if self._solo == claim.run_id:
                self._solo = None
        if self._wake is not None:
            self._wake.set()

    def _said(self, claim: Claim, exc: BaseException) -> str:
        """An error's message as the queue and the log keep it: masked as the run's record
        masks it when its target's policy hides error text."""
        redactor = self._error_text.get(claim.name)
        return str(exc) if redactor is None else redactor.error_text(str(exc), exc)

    def _settle(self, claim: Claim, outcome: WorkOutcome) -> None:
        state = "running" if outcome.retry else outcome.status
        try:
            kept = self.store._queue_settle(
                claim.run_id,
                claim.token,
                state,
                checkpoint_id=outcome.checkpoint_id,
                error=outcome.error,
            )
        except Exception as exc:
            # a connection lost during the settle may have committed it: read the row back
            try:
                kept = self.store._queue_settled(claim, state)
            except Exception:
                kept = False
            if not kept:
                log_line(
                    logging.ERROR,
                    "settle_failed",
                    f"could not record how {claim.run_id} went "
                    f"({exc}); its lease expires and another worker finds out from its log",
                    self,
                    run_id=claim.run_id,
                )
                return
        if not kept:
            log_line(
                logging.WARNING,
                "lease_lost",
                f"{claim.run_id}: the lease was lost before "
                "the outcome was recorded; the worker holding it now records its own",
                self,
                run_id=claim.run_id,
            )
            return
        key = "released" if outcome.retry else outcome.status
        with self._lock:  # settles of several runs may end at once, in worker threads
            self._counts[key] = self._counts.get(key, 0) + 1
        log_line(
            logging.INFO,
            "settled",
            f"{claim.run_id}: {state}",
            self,
            run_id=claim.run_id,
            state=state,
            checkpoint_id=outcome.checkpoint_id,
            error=outcome.error,
        )

    async def _attempt(self, target: WorkTarget, claim: Claim) -> WorkOutcome:
        if claim.name in self._redacting and self.store._queue_reseal(claim):
            log_line(
                logging.WARNING,
                "sealed_late",
                f"{claim.run_id}: its input or answer was given in clear (before any worker "
                "said its runs are redacted); it is sealed now. Submit and answer through a "
                "store given the seal",
                self,
                run_id=claim.run_id,
            )
        return await attempt(self.store, target, claim, lambda exc: self._said(claim, exc))
