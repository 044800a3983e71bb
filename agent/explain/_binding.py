"""Where the evidence of ``.self_explain()`` is kept: the last completed run of each
conversation, bound when a run ends and never before.

A run's conversation is its caller's ``(tenant, principal)`` and its ``session_id``, else its
identity's ``conversation_id``. A run with neither belongs to its caller's unnamed
conversation: the last such run of the same tenant and principal (of runs with no identity
at all, when it had none), so an anonymous caller never reads a named conversation's run, nor
one tenant another's.

A run is *completed* when it ended, with an answer or an error (``done``, ``failed``,
``broken``): a failed run is a run to explain too. A paused run is not: it goes on when it
is resumed, and binds when that ends. A run cancelled by its caller returns no result and
binds nothing.

In one process the agent keeps the snapshot of the last completed run of its latest
``keep`` conversations (the least recently bound or read is dropped first; a dropped
conversation's tools say so rather than that nothing ran). With a store, the store is the
truth: each run's end also writes one row naming the run in the store's memory tables
(scope: a digest of the agent and the conversation), so another process, or another worker
of the same store, finds the last completed run with one keyed read and loads it. A store
without memory tables is searched instead: its newest ended runs of this agent, at most
:data:`LOOKBACK` of them.
"""

from __future__ import annotations

import hashlib
import json
import threading
import warnings
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, NamedTuple

import orjson

from trackway.engine import MemoryRows, RunStore, Snapshot, UnknownRunError, thaw

__all__ = [
    "ENDED",
    "LOOKBACK",
    "MEMORY_ID",
    "BoundRuns",
    "ConversationKey",
    "Found",
    "conversation_key",
]

ConversationKey = tuple[str | None, str | None, str | None]
"""``(tenant, principal, session_id or conversation_id)`` as the caller gave them."""

ENDED = frozenset({"done", "failed", "broken"})
"""The statuses of a completed run: it ended, with an answer or an error."""

MEMORY_ID = "trackway.self-explain"
"""The memory id of the rows naming each conversation's last completed run in a store."""

LOOKBACK = 50
"""How many of its newest ended runs a store without memory tables is searched through."""


def conversation_key(identity: Any, session_id: str | None) -> ConversationKey:
    """The conversation of a run for ``identity`` (an ``Identity``, its committed dict or
    ``None``) and ``session_id``."""
    if identity is not None and hasattr(identity, "model_dump"):
        identity = identity.model_dump()
    fields = thaw(identity) if isinstance(identity, Mapping) else {}
    named = session_id if session_id is not None else fields.get("conversation_id")
    return (fields.get("tenant"), fields.get("principal"), named)


def _scope(chart_id: str, key: ConversationKey) -> str:
    """The store scope of a conversation: a digest, so no caller string reaches the store."""
    material = json.dumps(
        ["self-explain", chart_id, *key], ensure_ascii=True, separators=(",", ":")
    )
    return hashlib.sha256(material.encode("ascii")).hexdigest()


class Found(NamedTuple):
    """The last completed run of a conversation (``None``: none), and why not, when there
    is more to say than that no run has completed."""

    snapshot: Snapshot | None
    note: str | None = None


class BoundRuns:
    """The last completed run of each conversation of one agent: in this process (bounded by
    ``keep``) and, with a store, in the store."""

    def __init__(self, chart_id: str, store: RunStore | None, keep: int) -> None:
        self.chart_id = chart_id
        self.store = store
        self.keep = keep
        self.last_key: ConversationKey | None = None
        """The conversation of the run bound last (what ``can_explain()`` answers for
        between runs)."""
        self._kept: OrderedDict[ConversationKey, Snapshot] = OrderedDict()
        self._dropped: OrderedDict[ConversationKey, None] = OrderedDict()
        self._lock = threading.Lock()

    def bind(self, snapshot: Snapshot, state: Mapping[str, Any]) -> None:
        """Bind a run that ended: ``snapshot`` as the record keeps it, ``state`` its real
        values (who the run was for)."""
        key = conversation_key(state.get("identity"), state.get("session_id"))
        with self._lock:
            self._keep(key, snapshot)
            self.last_key = key
        store: Any = self.store  # a run store, and with memory tables its row is written
        if isinstance(store, MemoryRows):
            doc = orjson.dumps({"run_id": snapshot.run_id, "status": snapshot.status})
            try:
                store.memory_put_facts(_scope(self.chart_id, key), MEMORY_ID, [("last-run", doc)])
            except Exception as exc:  # the run is over and answered: say it, never raise
                warnings.warn(
                    f"self_explain: run {snapshot.run_id} ended, but {store!r} could not note "
                    f"it as its conversation's last completed run ({type(exc).__name__}: "
                    f"{exc}); other processes will not find it there",
                    RuntimeWarning,
                    stacklevel=3,
                )

    def _keep(self, key: ConversationKey, snapshot: Snapshot) -> None:
        self._kept[key] = snapshot
        self._kept.move_to_end(key)
        self._dropped.pop(key, None)
        while len(self._kept) > self.keep:
            gone, _ = self._kept.popitem(last=False)
            self._dropped[gone] = None
            if len(self._dropped) > 16 * self.keep:
                self._dropped.popitem(last=False)

    def find(self, key: ConversationKey, exclude: str | None = None) -> Found:
        """The last completed run of conversation ``key`` (never run ``exclude``, the one
        asking)."""
        with self._lock:
            cached = self._kept.get(key)
            if cached is not None:
                self._kept.move_to_end(key)
            dropped = key in self._dropped
        store: Any = self.store
        if store is None:
            if cached is not None and cached.run_id != exclude:
                return Found(cached)
            if dropped:
                return Found(
                    None,
                    "The last completed run of this conversation is no longer kept: this agent "
                    f"keeps the latest {self.keep} conversations in memory (give it a store to "
                    "keep them all)",
                )
            return Found(None)
        runs: RunStore = store
        if isinstance(store, MemoryRows):
            rows = store.memory_facts(_scope(self.chart_id, key), MEMORY_ID, 1)
            if not rows:
                return Found(None)
            run_id = str(orjson.loads(rows[0][1])["run_id"])
            if run_id == exclude:
                return Found(None)
            if cached is not None and cached.run_id == run_id:
                return Found(cached)
            try:
                loaded = runs.load(run_id)
            except UnknownRunError:
                return Found(
                    None,
                    f"The last completed run of this conversation ({run_id}) is no longer in "
                    "the store: it was pruned or deleted",
                )
            return self._kept_now(key, loaded)
        return self._searched(runs, key, exclude, cached)

    def _kept_now(self, key: ConversationKey, snapshot: Snapshot) -> Found:
        with self._lock:
            self._keep(key, snapshot)
        return Found(snapshot)

    def _searched(
        self, store: RunStore, key: ConversationKey, exclude: str | None, cached: Snapshot | None
    ) -> Found:
        """A store without memory tables: its newest ended runs of this agent, read until
        one is of the conversation (at most :data:`LOOKBACK`)."""
        runs = [
            r
            for r in store.list_runs()
            if r.chart_id == self.chart_id and r.status in ENDED and r.run_id != exclude
        ]
        runs.sort(key=lambda r: (r.ended_at or r.started_at, r.started_at), reverse=True)
        for info in runs[:LOOKBACK]:
            if cached is not None and cached.run_id == info.run_id:
                return Found(cached)
            snapshot = store.load(info.run_id)
            initial = snapshot.initial_state
            if conversation_key(initial.get("identity"), initial.get("session_id")) == key:
                return self._kept_now(key, snapshot)
        if len(runs) > LOOKBACK:
            return Found(
                None,
                f"No completed run of this conversation is among the latest {LOOKBACK} ended "
                f"runs of this agent in the store ({len(runs) - LOOKBACK} older ones were not "
                "read)",
            )
        return Found(None)
