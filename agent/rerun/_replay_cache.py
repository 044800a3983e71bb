"""A replay's cache policy function: each call decides as its receipt says it did.

A run whose ``system_prompt_cache_policy`` was a function records ``settings["cache_policy"]
= "function"`` and, in each receipt's ``cache``, what it said (``"system"``). Without the
agent no user code runs: the recorded answers are given back in order. With the agent its
function is asked again, and an answer that differs is a :class:`ReplayDivergence` naming
the call.
"""

from __future__ import annotations

from typing import Any

from trackway.engine import Snapshot, thaw

from ..messages._errors import ReplayDivergence
from ..providers._caching import CacheCall, CachePolicy
from ..record._record import receipts

__all__ = ["RecordedCachePolicy", "replay_cache_policy"]


class RecordedCachePolicy:
    """The decisions of a recording, in call order; ``own`` (the agent's function) is asked
    again and checked against them."""

    def __init__(self, decisions: list[str], own: CachePolicy | None) -> None:
        self._decisions = decisions
        self._own = own
        self.__qualname__ = "the recorded decisions"

    def __call__(self, call: CacheCall) -> str:
        if not self._decisions:
            raise ReplayDivergence(
                f"call {call.k}: the replay asked the cache policy for a call the recording "
                "never made",
                stage_path="call-llm",
                key="receipts",
            )
        recorded = self._decisions.pop(0)
        if self._own is not None:
            said = self._own(call)
            if said != recorded:
                name = getattr(self._own, "__qualname__", repr(self._own))
                raise ReplayDivergence(
                    f"call {call.k}: system_prompt_cache_policy {name} decided {said!r}; the "
                    f"recording decided {recorded!r} (the function changed, or reads "
                    "something besides the call it is given)",
                    stage_path="call-llm",
                    key="receipts",
                )
        return recorded


def replay_cache_policy(builder: Any, own: CachePolicy | None, snap: Snapshot) -> None:
    """Give ``builder`` the recorded decisions when ``snap`` was decided by a function."""
    settings = thaw(snap.state.get("settings") or {})
    if settings.get("cache_policy") != "function":
        return
    decided = [str(r["cache"]["system"]) for r in receipts(snap) if "cache" in r]
    builder._cache_policy = RecordedCachePolicy(decided, own)
