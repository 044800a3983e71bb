"""A read-only view of committed state through a stage's scope, and the keys each reader is
about: what a request is assembled from, what a tool provider, an instruction's
``active_when`` or a route's ``when`` may read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trackway.engine.run._scope import TrackedScope

__all__ = ["PROVIDER_KEYS", "REQUEST_KEYS", "StateView"]


class StateView(Mapping[str, Any]):
    """Committed state read through the scope (read-only, every read tracked), listing the
    ``keys`` its reader is about: ``REQUEST_KEYS`` for ``assemble``, ``PROVIDER_KEYS`` for a
    tool provider."""

    def __init__(self, scope: TrackedScope, keys: tuple[str, ...]) -> None:
        self._scope = scope
        self._keys = keys

    def __getitem__(self, key: str) -> Any:
        return self._scope[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self._scope.get(key, default)

    def __iter__(self) -> Any:
        return iter([k for k in self._keys if k in self._scope])

    def __len__(self) -> int:
        return sum(1 for k in self._keys if k in self._scope)


REQUEST_KEYS = (
    "history",
    "settings",
    "system_prompt",
    "system_pieces",
    "memory_recall",
    "tools",
    "wrap_up_asked",
    "window_view",
)
"""What a model request is assembled from."""
PROVIDER_KEYS = (
    "user_message",
    "history",
    "iteration",
    "tool_results",
    "settings",
    "identity",
    "session_id",
    "tools",
)
"""What a tool provider may read to decide its offer."""
