"""Where a fork's or a for-each's branches run when not in this process: the interface a
runner (``runner=`` of ``parallel`` and ``parallel_for_each``) gives the engine.

The chart holds the runner; the run layer calls it; the runner lives in the layer that knows
how to send work away (``scale``: ``ray_runner()``). Declaring the interface here keeps that
layer above the chart and the run that use it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ._chart import Branch

__all__ = ["BranchRunner"]


@runtime_checkable
class BranchRunner(Protocol):
    """Where a fork's or a for-each's branches run when not in this process
    (``ray_runner()`` makes one). Pass it as ``runner=``.

    The engine calls :meth:`run_branches` when the node runs afresh (not when it resumes or
    recovers, which take the branches' commits from the log here). The run layer's types are
    ``Any`` here, because the chart sits below the run layer and cannot name them: ``strand``
    is the running ``Strand`` (``trackway.engine.run._context``) and each result a
    ``BranchResult`` (``trackway.engine.run._merge``).
    """

    async def run_branches(
        self,
        strand: Any,
        pairs: Sequence[tuple[str, Branch]],
        base_path: str,
        seeds: Sequence[Mapping[str, Any]] | None,
        limit: int | None,
        chooser: str | None,
    ) -> list[Any]:
        """Run each ``(key, branch)`` of ``pairs`` under ``base_path`` (with ``seeds[i]``
        seeding branch ``i``'s state, at most ``limit`` at a time, ``chooser`` the selector
        that picked them) and return one result per pair, in order: the same results and the
        same log as running them here."""
        ...
