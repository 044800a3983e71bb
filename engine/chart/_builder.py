"""The fluent chart builder. Every malformed chart fails at ``build()`` (or earlier).

Over 400 lines because each builder method takes its arguments where the user can still see
the call (ids, callables, merge policies, subflow mappers, for-each options); the checks
themselves live in ``_build_checks``, the decider and selector branch builders in
``_branch_builders``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from ..core._errors import ChartBuildError
from ..core._keywords import checked_keywords
from ..core._paths import is_name, name_fault
from ..core._retry import Retry
from ..core._values import key_fault
from ._build_checks import (
    check_callable,
    check_chart_id,
    check_display,
    check_merge,
    check_retry,
    check_state_model,
    unreachable,
)
from ._chart import (
    Branch,
    FlowChart,
    Mapper,
    MergePolicy,
    Node,
    ResumeFn,
    StageFn,
    is_async_callable,
)
from ._contract import Schema, check_schema
from ._runner import BranchRunner

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ._branch_builders import DeciderBuilder, SelectorBuilder

__all__ = ["ChartBuilder", "flow_chart"]


def _check_runner(runner: object, owner: str) -> BranchRunner | None:
    """``runner=`` of a fork or for-each: ``None`` (here) or a :class:`BranchRunner`
    (``ray_runner()``)."""
    if runner is None:
        return None
    if not isinstance(runner, BranchRunner):
        raise ChartBuildError(
            f"{owner}: runner= takes ray_runner() (from trackway.engine import ray_runner), "
            f"another BranchRunner, or None, got {runner!r}"
        )
    return runner


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "stage"


@checked_keywords
def flow_chart(
    name: str,
    fn: StageFn,
    *,
    id: str | None = None,
    description: str | None = None,
    retry: Retry | int | None = None,
    state: type[BaseModel] | None = None,
    on_resume: ResumeFn | None = None,
) -> ChartBuilder:
    """Start a chart whose first stage is ``fn``.

    ``id`` defaults to a slug of ``name``; ``state`` is an optional pydantic model whose
    fields every write is validated against.
    """
    return ChartBuilder(
        name, fn, id=id, description=description, retry=retry, state=state, on_resume=on_resume
    )


class ChartBuilder:
    """Adds stages to a chart in order; ``build()`` validates and freezes it."""

    def __init__(
        self,
        name: str,
        fn: StageFn,
        *,
        id: str | None,
        description: str | None,
        retry: Retry | int | None,
        state: type[BaseModel] | None,
        on_resume: ResumeFn | None = None,
    ) -> None:
        self._nodes: dict[str, dict[str, Any]] = {}
        self._open: list[str] = []
        self._loops: list[tuple[str, str]] = []
        self._errors: list[str] = []
        self._built = False
        self._state = state
        check_state_model(state)
        self._root = self._plain_stage(name, fn, id, description, retry, on_resume)

    # -- internals -----------------------------------------------------------------------

    def _plain_stage(
        self,
        name: str,
        fn: StageFn,
        id: str | None,
        description: str | None,
        retry: Retry | int | None,
        on_resume: ResumeFn | None,
    ) -> str:
        """Add a ``.then`` stage (the first one too); its id."""
        on_resume = self._resume_fn(on_resume, name)
        return self._stage(name, fn, id, description, retry, kind="stage", on_resume=on_resume)

    @staticmethod
    def _resume_fn(fn: Any, name: str) -> ResumeFn | None:
        if fn is not None:
            check_callable(
                fn, f"on_resume= of stage {name!r}", "on_resume(scope, value) -> None", 2
            )
        return fn  # type: ignore[no-any-return]

    def _guard(self) -> None:
        if self._built:
            raise ChartBuildError(
                "this builder was already built; charts are immutable, so start a new "
                "flow_chart(...) to make another"
            )

    def _new_id(self, name: str, id: str | None, what: str) -> str:
        if not isinstance(name, str) or not name.strip():
            raise ChartBuildError(f"{what} needs a non-empty name, got {name!r}")
        check_display(name, what)
        if id is None:
            return _slug(name)
        if not is_name(id):
            raise ChartBuildError(
                f"{what}: id {id!r} is not allowed ({name_fault(id)}); use letters, digits, "
                "'-', '_' or '.' (no '/', '#', ':', spaces or control characters, which stage "
                "paths cannot hold)"
            )
        return id

    def _register(self, fields: dict[str, Any], *, link: bool = True) -> str:
        nid: str = fields["id"]
        if nid in self._nodes:
            other = self._nodes[nid]["name"]
            self._errors.append(
                f"duplicate stage id {nid!r}: stages {other!r} and {fields['name']!r} both "
                f"use it; pass a distinct id=... to one of them"
            )
            nid = f"{nid}\x00{len(self._nodes)}"  # keep building so every error is reported
            fields["id"] = nid
        self._nodes[nid] = fields
        if link:
            for prev in self._open:
                self._nodes[prev]["next"] = nid
            self._open = [nid]
        return nid

    def _check_fn(self, fn: Any, what: str) -> bool:
        check_callable(fn, what, "a stage function stage(scope)", 1)
        return is_async_callable(fn)

    def _stage(
        self,
        name: str,
        fn: StageFn,
        id: str | None,
        description: str | None,
        retry: Retry | int | None,
        *,
        kind: Literal["stage", "decider", "selector"],
        link: bool = True,
        **extra: Any,
    ) -> str:
        self._guard()
        nid = self._new_id(name, id, f"stage {name!r}")
        is_async = self._check_fn(fn, f"stage {name!r}")
        fields = dict(
            id=nid,
            name=name,
            kind=kind,
            description=description,
            fn=fn,
            is_async=is_async,
            retry=check_retry(retry, name),
            **extra,
        )
        return self._register(fields, link=link)

    def _branch(self, key: str, name: str, target: Any, owner: str) -> Branch:
        if not is_name(key):
            raise ChartBuildError(
                f"{owner}: branch key {key!r} is not allowed ({name_fault(key)}); it must be a "
                "non-empty str without '/', '#', ':', spaces or control characters"
            )
        if isinstance(name, str):
            check_display(name, f"{owner}, branch {key!r}")
        if isinstance(target, FlowChart):
            return Branch(key=key, name=name, chart=target)
        is_async = self._check_fn(target, f"{owner}, branch {key!r}")
        return Branch(key=key, name=name, fn=target, is_async=is_async)

    # -- public builder API --------------------------------------------------------------

    @checked_keywords
    def then(
        self,
        name: str,
        fn: StageFn,
        *,
        id: str | None = None,
        description: str | None = None,
        retry: Retry | int | None = None,
        on_resume: ResumeFn | None = None,
    ) -> ChartBuilder:
        """Add a stage that runs after the current one(s).

        ``on_resume(scope, value)`` runs, as its own commit, when a run that paused in this
        stage (``scope.pause(...)``) is resumed with ``value``.
        """
        self._plain_stage(name, fn, id, description, retry, on_resume)
        return self

    @checked_keywords
    def decider(
        self,
        name: str,
        fn: StageFn,
        *,
        id: str | None = None,
        description: str | None = None,
        retry: Retry | int | None = None,
    ) -> DeciderBuilder:
        """Add a stage that returns one branch key (or a ``Decision``); declare its branches."""
        nid = self._stage(name, fn, id, description, retry, kind="decider", branches={})
        self._open = []
        from ._branch_builders import DeciderBuilder

        return DeciderBuilder(self, nid)

    @checked_keywords
    def selector(
        self,
        name: str,
        fn: StageFn,
        *,
        id: str | None = None,
        description: str | None = None,
        retry: Retry | int | None = None,
        merge: MergePolicy = "error_on_conflict",
    ) -> SelectorBuilder:
        """Add a stage that returns several branch keys; the chosen branches run in parallel."""
        policy = check_merge(merge, f"selector {name!r}")
        nid = self._stage(name, fn, id, description, retry, kind="selector", merge=policy)
        from ._branch_builders import SelectorBuilder

        return SelectorBuilder(self, nid)

    @checked_keywords
    def fork(
        self,
        name: str,
        branches: Mapping[str, StageFn | FlowChart | tuple[str, StageFn | FlowChart]],
        *,
        id: str | None = None,
        description: str | None = None,
        merge: MergePolicy = "error_on_conflict",
        runner: BranchRunner | None = None,
    ) -> ChartBuilder:
        """Run every branch in parallel, each on its own view of state, then merge them.

        A branch is a stage function, a chart, or ``(display_name, fn_or_chart)``. Writes are
        merged in declaration order by ``merge``; the merge is its own commit.
        ``runner=ray_runner()`` runs each branch as a Ray task, with the same log.
        """
        self._guard()
        nid = self._new_id(name, id, f"fork {name!r}")
        owner = f"fork {name!r}"
        if not isinstance(branches, Mapping) or not branches:
            raise ChartBuildError(f"{owner} needs a non-empty dict of branches {{key: fn}}")
        parallel = []
        for key, target in branches.items():
            label, body = target if isinstance(target, tuple) else (key, target)
            parallel.append(self._branch(key, label, body, owner))
        self._register(
            dict(
                id=nid,
                name=name,
                kind="fork",
                description=description,
                parallel=tuple(parallel),
                merge=check_merge(merge, owner),
                runner=_check_runner(runner, owner),
            )
        )
        return self

    @checked_keywords
    def subflow(
        self,
        name: str,
        chart: FlowChart,
        *,
        id: str | None = None,
        description: str | None = None,
        input: Mapper | None = None,
        output: Mapper | None = None,
        propagate_break: bool = False,
    ) -> ChartBuilder:
        """Mount ``chart`` here.

        Without ``input``/``output`` the subflow shares this chart's state. With either, it
        runs on its own state: ``input`` seeds it (``{child_key: parent_key}`` or a function
        of the parent scope returning a dict) and ``output`` writes back (``{parent_key:
        child_key}`` or a function of the child scope returning a dict); other child writes
        stay in the subflow's frame of the log.
        """
        self._guard()
        nid = self._new_id(name, id, f"subflow {name!r}")
        if not isinstance(chart, FlowChart):
            raise ChartBuildError(
                f"subflow {name!r} needs a built FlowChart; call .build() on its builder"
            )
        for label, mapper in (("input", input), ("output", output)):
            if mapper is not None and not (callable(mapper) or isinstance(mapper, Mapping)):
                raise ChartBuildError(
                    f"subflow {name!r}: {label}= takes a dict of keys or a function, got {mapper!r}"
                )
            if mapper is not None and not isinstance(mapper, Mapping):
                check_callable(mapper, f"{label}= of subflow {name!r}", "a function of scope", 1)
        self._register(
            dict(
                id=nid,
                name=name,
                kind="subflow",
                description=description,
                chart=chart,
                input=input,
                output=output,
                propagate_break=propagate_break,
            )
        )
        return self

    @checked_keywords
    def parallel_for_each(
        self,
        name: str,
        *,
        items: str | StageFn,
        branch: StageFn | FlowChart,
        into: str,
        max_branches: int,
        id: str | None = None,
        description: str | None = None,
        result_key: str = "result",
        overflow: Literal["error", "truncate"] = "error",
        concurrency: int | None = None,
        runner: BranchRunner | None = None,
    ) -> ChartBuilder:
        """Run ``branch`` once per item, in parallel, and write the results to ``into``.

        Each branch sees the state plus ``item`` and ``index``; its result is what it wrote to
        ``result_key``. More than ``max_branches`` items is an error, or with
        ``overflow="truncate"`` the extra items are dropped and the drop is recorded.
        ``runner=ray_runner()`` runs each branch as a Ray task (at most ``concurrency`` at a
        time); the results and the log are those of the same run here.
        """
        self._guard()
        nid = self._new_id(name, id, f"parallel_for_each {name!r}")
        owner = f"parallel_for_each {name!r}"
        if not (isinstance(items, str) or callable(items)):
            raise ChartBuildError(f"{owner}: items= takes a state key or a function of scope")
        if not isinstance(items, str):
            check_callable(items, f"items= of {owner}", "a function of scope returning a list", 1)
        if not isinstance(into, str) or not into:
            raise ChartBuildError(f"{owner}: into= must name the state key for the results")
        for label, key in (("items", items), ("into", into), ("result_key", result_key)):
            fault = key_fault(key) if isinstance(key, str) else None
            if fault is not None:
                raise ChartBuildError(f"{owner}: {label}={key!r} cannot be a state key: {fault}")
        if isinstance(max_branches, bool) or not isinstance(max_branches, int) or max_branches < 1:
            raise ChartBuildError(f"{owner}: max_branches must be a positive int")
        if overflow not in ("error", "truncate"):
            raise ChartBuildError(f"{owner}: overflow= must be 'error' or 'truncate'")
        if concurrency is not None and (not isinstance(concurrency, int) or concurrency < 1):
            raise ChartBuildError(f"{owner}: concurrency= must be a positive int or None")
        body = self._branch("each", name, branch, owner)
        self._register(
            dict(
                id=nid,
                name=name,
                kind="for_each",
                description=description,
                items=items,
                parallel=(body,),
                into=into,
                max_branches=max_branches,
                overflow=overflow,
                concurrency=concurrency,
                result_key=result_key,
                runner=_check_runner(runner, owner),
            )
        )
        return self

    def loop_to(self, stage_id: str) -> ChartBuilder:
        """Send control back to ``stage_id`` (a back edge, bounded by ``max_iterations``)."""
        self._guard()
        if not self._open:
            self._errors.append(
                f"loop_to({stage_id!r}) has nothing to loop from: the previous step already "
                "ends (another loop_to, or a decider whose branches all loop)"
            )
        for src in self._open:
            self._nodes[src]["next"] = stage_id
            self._nodes[src]["loop"] = True
            self._loops.append((src, stage_id))
        self._open = []
        return self

    @checked_keywords
    def build(
        self,
        *,
        name: str | None = None,
        chart_id: str | None = None,
        description: str | None = None,
        input_schema: Schema | None = None,
        output_schema: Schema | None = None,
    ) -> FlowChart:
        """Validate and freeze the chart; raise :class:`ChartBuildError` listing every fault."""
        self._guard()
        errors = list(self._errors)
        ids = ", ".join(i for i in self._nodes if "\x00" not in i)
        for src, target in self._loops:
            if target not in self._nodes:
                errors.append(
                    f"stage {self._nodes[src]['name']!r} loops to {target!r}, but no stage has "
                    f"that id; ids are: {ids} "
                    "(did you pass a stage name instead of its id?)"
                )
        check_chart_id(chart_id)
        if name is not None:
            if not isinstance(name, str):
                raise ChartBuildError(f"build(name=...) takes a str, got {name!r}")
            check_display(name, "build(name=...)")
        inputs = check_schema(input_schema, "build(input_schema=...)")
        outputs = check_schema(output_schema, "build(output_schema=...)")
        root = self._nodes[self._root]
        chart = FlowChart(
            id=chart_id or self._root,
            name=name or root["name"],
            root=self._root,
            nodes={nid: Node(**fields) for nid, fields in self._nodes.items()},
            description=description,
            state_model=self._state,
            input_schema=inputs,
            output_schema=outputs,
        )
        errors.extend(unreachable(chart))
        if errors:
            raise ChartBuildError(
                "the chart is malformed:\n" + "\n".join(f"  - {e}" for e in errors)
            )
        self._built = True
        return chart
