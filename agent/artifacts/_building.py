"""The builder's ``.artifacts(store, max_inline_chars=...)``, the check at ``build()`` that
every tool that ``wants`` artifacts has a store to redeem from, the agent's
``get_artifact_store()``, and what a replay rebuilds from ``settings["artifacts"]``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Self

from trackway.engine.stores._artifact_rows import ArtifactRows
from trackway.tools import Tool, check_tool_wants
from trackway.tools.artifacts import ArtifactStore, RunStoreArtifacts

from ..messages._errors import AgentBuildError
from ._plan import DEFAULT_MAX_INLINE_CHARS, ArtifactsPlan

__all__ = ["ArtifactsBuilding", "ArtifactsReading", "replay_artifacts"]


class ArtifactsBuilding:
    """``.artifacts(...)``."""

    _artifacts: ArtifactsPlan | None = None

    def artifacts(self, store: Any, *, max_inline_chars: int = DEFAULT_MAX_INLINE_CHARS) -> Self:
        """Keep large results out of the context window: a tool result longer than
        ``max_inline_chars`` is put in ``store`` and the model reads an ``art_…`` ticket;
        tools that declare ``wants`` get the data behind the tickets the model passes them.
        ``store``: an :class:`~trackway.tools.artifacts.ArtifactStore`
        (``FolderArtifacts(path)``, ``MemoryArtifacts()``) or a run store that keeps
        artifacts (``SqliteStore``, ``PostgresStore``, ``MemoryStore``: its
        ``trackway_artifacts`` table)."""
        if isinstance(store, ArtifactRows) and not isinstance(store, ArtifactStore):
            store = RunStoreArtifacts(store)
        if not isinstance(store, ArtifactStore):
            raise AgentBuildError(
                f".artifacts({store!r}): use an artifact store (FolderArtifacts('artifacts/'), "
                "MemoryArtifacts()) or a run store that keeps them (SqliteStore('runs.db'), "
                "PostgresStore(dsn), MemoryStore())"
            )
        limit = max_inline_chars
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise AgentBuildError(
                f".artifacts(max_inline_chars={limit!r}): use a positive whole number of "
                "characters (a longer result is stored and the model reads its ticket)"
            )
        self._artifacts = ArtifactsPlan(store, limit)
        return self

    def _artifacts_plan(self, tools: Iterable[Tool]) -> ArtifactsPlan | None:
        """The plan, checked: a tool that wants artifacts needs a store to redeem from, and
        its declaration is checked as ``define_tool`` checks it (a hand-built ``Tool``)."""
        tools = list(tools)
        for t in tools:
            if t.wants or t.result_kind is not None:
                check_tool_wants(t)
        if self._artifacts is None:
            wanting = sorted((t for t in tools if t.wants), key=lambda t: t.name)
            if wanting:
                first = wanting[0]
                args = ", ".join(repr(a) for a in first.wants or {})
                raise AgentBuildError(
                    f"tool {first.name!r} wants artifacts (its {args} argument takes an "
                    "art_... ticket), and this agent has no artifact store to redeem them "
                    "from: add .artifacts(store), e.g. .artifacts(SqliteStore('runs.db')) or "
                    ".artifacts(FolderArtifacts('artifacts/'))"
                )
        return self._artifacts


class ArtifactsReading:
    """``agent.get_artifact_store()``."""

    _cfg: Any

    def get_artifact_store(self) -> ArtifactStore | None:
        """The store this agent places results in and redeems tickets from (``None``: the
        agent has none, or it is a replay, which needs none)."""
        plan = self._cfg.artifacts
        return None if plan is None else plan.store


def replay_artifacts(builder: Any, recorded: dict[str, Any] | None) -> None:
    """A replay's artifacts (``recorded``: ``settings["artifacts"]``): the threshold and no
    store (every placement and redemption is served as the run recorded it)."""
    if recorded is not None:
        builder._artifacts = ArtifactsPlan(None, recorded["max_inline_chars"])
