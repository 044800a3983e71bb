"""Declaring a decider's or a selector's branches, between ``.decider(...)`` and ``.end()``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core._errors import ChartBuildError
from ..core._keywords import checked_keywords
from ..core._retry import Retry
from ._chart import Branch, FlowChart, ResumeFn, StageFn

if TYPE_CHECKING:
    from ._builder import ChartBuilder

__all__ = ["DeciderBuilder", "SelectorBuilder"]

# What follows a decider's or selector's branches, written without the .end() that closes them.
_CHART_STEPS = frozenset(
    {"then", "decider", "selector", "fork", "subflow", "parallel_for_each", "loop_to", "build"}
)


def _missing_end(builder: object, kind: str, attr: str) -> AttributeError:
    if attr in _CHART_STEPS:
        return AttributeError(
            f"{kind} has no .{attr}(): its branches end with .end(), which returns to the "
            f"chart; write .branch(...).branch(...).end().{attr}(...)"
        )
    return AttributeError(f"{type(builder).__name__!r} object has no attribute {attr!r}")


class DeciderBuilder:
    """Declares a decider's branches; ``end()`` returns to the chart."""

    def __getattr__(self, attr: str) -> None:
        raise _missing_end(self, "a decider", attr)

    def __init__(self, parent: ChartBuilder, decider_id: str) -> None:
        self._parent = parent
        self._id = decider_id
        self._fields = parent._nodes[decider_id]
        self._ends: list[str] = []
        self._default: str | None = None
        self._closed = False

    @checked_keywords
    def branch(
        self,
        key: str,
        name: str,
        target: StageFn | FlowChart,
        *,
        id: str | None = None,
        description: str | None = None,
        retry: Retry | int | None = None,
        loop_to: str | None = None,
        on_resume: ResumeFn | None = None,
    ) -> DeciderBuilder:
        """Declare branch ``key``: a stage function or a chart (run on the same state)."""
        self._check_open()
        p = self._parent
        owner = f"decider {self._fields['name']!r}"
        p._branch(key, name, target, owner)  # validates the key and the target
        if key in self._fields["branches"]:
            raise ChartBuildError(f"{owner} declares branch {key!r} twice")
        branch_of = f"{self._id}:{key}"
        if isinstance(target, FlowChart):
            nid = p._new_id(name, id, f"branch {key!r} of {owner}")
            nid = p._register(
                dict(
                    id=nid,
                    name=name,
                    kind="subflow",
                    description=description,
                    chart=target,
                    branch_of=branch_of,
                ),
                link=False,
            )
        else:
            nid = p._stage(
                name,
                target,
                id,
                description,
                retry,
                kind="stage",
                link=False,
                branch_of=branch_of,
                on_resume=p._resume_fn(on_resume, name),
            )
        self._fields["branches"][key] = nid
        if loop_to is None:
            self._ends.append(nid)
        else:
            p._nodes[nid]["next"] = loop_to
            p._nodes[nid]["loop"] = True
            p._loops.append((nid, loop_to))
        return self

    def default(self, key: str) -> DeciderBuilder:
        """The branch taken when the decider function returns ``None``."""
        self._check_open()
        self._default = key
        return self

    def end(self) -> ChartBuilder:
        """Close the decider; the next stage added runs after whichever branch ran."""
        self._check_open()
        self._closed = True
        name = self._fields["name"]
        if not self._fields["branches"]:
            self._parent._errors.append(
                f"decider {name!r} has no branches; add .branch(key, name, fn) before .end()"
            )
        if self._default is not None:
            if self._default not in self._fields["branches"]:
                self._parent._errors.append(
                    f"decider {name!r}: default {self._default!r} is not one of its branches "
                    f"({', '.join(self._fields['branches']) or 'none'})"
                )
            self._fields["default"] = self._default
        self._parent._open = list(self._ends)
        return self._parent

    def _check_open(self) -> None:
        self._parent._guard()
        if self._closed:
            raise ChartBuildError(
                f"decider {self._fields['name']!r} was already closed with .end()"
            )


class SelectorBuilder:
    """Declares a selector's branches; ``end()`` returns to the chart."""

    def __getattr__(self, attr: str) -> None:
        raise _missing_end(self, "a selector", attr)

    def __init__(self, parent: ChartBuilder, selector_id: str) -> None:
        self._parent = parent
        self._fields = parent._nodes[selector_id]
        self._branches: list[Branch] = []
        self._closed = False

    @checked_keywords
    def branch(self, key: str, name: str, target: StageFn | FlowChart) -> SelectorBuilder:
        """Declare branch ``key``: a stage function or a chart, run in parallel when chosen."""
        owner = f"selector {self._fields['name']!r}"
        self._parent._guard()
        if self._closed:
            raise ChartBuildError(f"{owner} was already closed with .end()")
        if any(b.key == key for b in self._branches):
            raise ChartBuildError(f"{owner} declares branch {key!r} twice")
        self._branches.append(self._parent._branch(key, name, target, owner))
        return self

    def end(self) -> ChartBuilder:
        """Close the selector; the next stage added runs after the merge."""
        self._parent._guard()
        self._closed = True
        if not self._branches:
            self._parent._errors.append(
                f"selector {self._fields['name']!r} has no branches; add .branch(...) before .end()"
            )
        self._fields["parallel"] = tuple(self._branches)
        return self._parent
