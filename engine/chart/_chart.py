"""The built, immutable chart: nodes, the networkx graph, and its self-description."""

from __future__ import annotations

import functools
import hashlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, cast

from ..core._retry import Retry
from ._contract import Schema, json_schema

if TYPE_CHECKING:
    import networkx as nx
    from pydantic import BaseModel

    from ._runner import BranchRunner
    from ._scope_api import Scope

__all__ = [
    "Branch",
    "FlowChart",
    "MergePolicy",
    "Node",
    "NodeKind",
    "ResumeFn",
    "StageFn",
    "generator_kind",
    "is_async_callable",
]

StageFn: TypeAlias = Callable[["Scope"], Any]
NodeKind = Literal["stage", "decider", "selector", "fork", "subflow", "for_each"]
MergePolicy: TypeAlias = (
    Literal["error_on_conflict", "namespace", "last"] | Mapping[str, Callable[[Any, Any], Any]]
)
ResumeFn: TypeAlias = Callable[["Scope", Any], Any]
Mapper: TypeAlias = Mapping[str, str] | Callable[["Scope"], Mapping[str, Any]]


def is_async_callable(fn: Callable[..., Any]) -> bool:
    call = getattr(fn, "__call__", None)  # noqa: B004 - callable objects with async __call__
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)


def generator_kind(fn: Callable[..., Any]) -> str | None:
    """``"a generator function"`` or ``"an async generator function"`` when calling ``fn``
    only makes a generator (its body runs when something iterates it, which the engine never
    does), else ``None``. Looks through ``functools.partial`` and at the ``__call__`` of
    callable objects."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    # a class is called to make an instance: its own __call__ is not what runs
    call = None if isinstance(fn, type) else getattr(fn, "__call__", None)  # noqa: B004
    for candidate in (fn, call):
        if inspect.isasyncgenfunction(candidate):
            return "an async generator function"
        if inspect.isgeneratorfunction(candidate):
            return "a generator function"
    return None


@dataclass(frozen=True, slots=True)
class Branch:
    """One parallel branch of a fork or selector: a stage function or a whole chart."""

    key: str
    name: str
    fn: StageFn | None = None
    chart: FlowChart | None = None
    is_async: bool = False


@dataclass(frozen=True, slots=True, eq=False)
class Node:
    """One stage of a chart. Fields beyond the first few apply to one ``kind`` only."""

    id: str
    name: str
    kind: NodeKind
    description: str | None = None
    next: str | None = None
    loop: bool = False
    """``next`` is a back edge (declared with ``loop_to``)."""
    fn: StageFn | None = None
    is_async: bool = False
    retry: Retry | None = None
    on_resume: ResumeFn | None = None
    """Called as ``on_resume(scope, value)`` when a run paused in this stage is resumed."""
    branch_of: str | None = None
    """For a decider branch: ``"<decider id>:<key>"``."""
    branches: Mapping[str, str] = field(default_factory=dict)
    """Decider: branch key -> the id of the branch's node."""
    default: str | None = None
    parallel: tuple[Branch, ...] = ()
    merge: MergePolicy = "error_on_conflict"
    chart: FlowChart | None = None
    input: Mapper | None = None
    output: Mapper | None = None
    propagate_break: bool = False
    items: str | StageFn | None = None
    into: str | None = None
    max_branches: int = 0
    overflow: Literal["error", "truncate"] = "error"
    concurrency: int | None = None
    result_key: str = "result"
    runner: BranchRunner | None = None
    """Fork and for-each: where the branches run (``ray_runner()``); ``None``: here."""


@dataclass(frozen=True, eq=False)
class FlowChart:
    """An immutable, validated chart. Build one with :func:`flow_chart`."""

    id: str
    name: str
    root: str
    nodes: Mapping[str, Node]
    description: str | None = None
    state_model: type[BaseModel] | None = None
    input_schema: Schema | None = None
    """What ``run(input)`` accepts: a pydantic model or a JSON Schema (checked before the
    first stage, also when no input is given)."""
    output_schema: Schema | None = None
    """What the final state must satisfy when the run ends (checked then)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "nodes", MappingProxyType(dict(self.nodes)))

    @cached_property
    def graph(self) -> nx.DiGraph[str]:
        """The chart as a frozen networkx DiGraph (edge attribute ``kind``: next, loop,
        branch, parallel or join; a subflow node's ``isolated`` says if it has its own state).

        ``build()`` checks reachability on it; checkpoints record their structure from it.
        """
        import networkx as nx  # imported here: `import trackway` stays fast

        g: nx.DiGraph[str] = nx.DiGraph(chart_id=self.id, name=self.name)
        for node in self.nodes.values():
            extra = {}
            if node.kind == "subflow":
                extra["isolated"] = node.input is not None or node.output is not None
            g.add_node(
                node.id, name=node.name, kind=node.kind, description=node.description, **extra
            )
        for node in self.nodes.values():
            if node.next is not None:
                g.add_edge(node.id, node.next, kind="loop" if node.loop else "next")
            for key, target in node.branches.items():
                g.add_edge(node.id, target, kind="branch", label=key)
            for br in node.parallel:
                bid = f"{node.id}/{br.key}"
                g.add_node(bid, name=br.name, kind="branch", description=None)
                g.add_edge(node.id, bid, kind="parallel", label=br.key)
                if node.next is not None:
                    g.add_edge(bid, node.next, kind="join")
        return cast("nx.DiGraph[str]", nx.freeze(g))

    @cached_property
    def fingerprint(self) -> str:
        """SHA-256 of the chart's structure (ids, kinds, edges, nested charts), not its code."""
        parts: list[str] = [self.id, self.root]
        for node in self.nodes.values():
            parts.append(
                "|".join(
                    [
                        node.id,
                        node.kind,
                        str(node.next),
                        str(node.loop),
                        ",".join(f"{k}={v}" for k, v in node.branches.items()),
                        str(node.default),
                        ",".join(
                            b.key + ":" + (b.chart.fingerprint if b.chart else "fn")
                            for b in node.parallel
                        ),
                        node.chart.fingerprint if node.chart else "",
                        str(node.input is not None or node.output is not None),
                    ]
                )
            )
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()

    def __repr__(self) -> str:
        return f"<FlowChart {self.id!r} stages={len(self.nodes)}>"

    # -- self-description ----------------------------------------------------------------

    def describe(self) -> str:
        """Numbered steps with descriptions, branches, parallel work, loops and subflows."""
        return "\n".join(self._describe_lines(""))

    def _describe_lines(self, indent: str) -> list[str]:
        head = f"{indent}FlowChart: {self.name}"
        if self.description:
            head += f" — {self.description}"
        lines = [head, f"{indent}Steps:"]
        number = {nid: i for i, nid in enumerate(self.nodes, start=1)}
        for nid, node in self.nodes.items():
            text = f"{indent}{number[nid]}. {node.name}"
            if node.branch_of is not None:
                key = node.branch_of.split(":", 1)[1]
                text = f"{indent}{number[nid]}. [{key}] {node.name}"
            if node.description:
                text += f" — {node.description}"
            lines.append(text)
            sub = indent + "   "
            if node.kind == "decider":
                opts = ", ".join(f"{k} → step {number[t]}" for k, t in node.branches.items())
                dflt = f"; default {node.default}" if node.default else ""
                lines.append(f"{sub}decides: {opts}{dflt}")
            elif node.kind in ("fork", "selector"):
                verb = "runs in parallel" if node.kind == "fork" else "selects some of"
                names = ", ".join(f"{b.key} ({b.name})" for b in node.parallel)
                lines.append(f"{sub}{verb}: {names}; merge: {_merge_name(node.merge)}")
                for b in node.parallel:
                    if b.chart is not None:
                        lines.extend(b.chart._describe_lines(sub + "   "))
            elif node.kind == "for_each":
                lines.append(
                    f"{sub}for each item (at most {node.max_branches}), in parallel; "
                    f"results into {node.into!r}"
                )
            if node.chart is not None:
                lines.extend(node.chart._describe_lines(sub))
            if node.loop and node.next is not None:
                lines.append(f"{sub}→ loops back to step {number[node.next]} ({node.next})")
        return lines

    def to_mcp_tool(self) -> dict[str, Any]:
        """The chart as an MCP tool definition (name, description, input and output schema)."""
        tool: dict[str, Any] = {
            "name": self.id,
            "title": self.name,
            "description": self.description or self.describe(),
            "inputSchema": _object_schema(self.input_schema),
        }
        if self.output_schema is not None:
            tool["outputSchema"] = json_schema(self.output_schema)
        return tool

    def to_openapi(self, *, version: str = "1.0.0") -> dict[str, Any]:
        """An OpenAPI 3.1 document with one operation, ``POST /{id}/run``."""
        state = json_schema(self.output_schema) if self.output_schema else {"type": "object"}
        result = {
            "type": "object",
            "required": ["run_id", "status", "state"],
            "properties": {
                "run_id": {"type": "string"},
                "status": {"type": "string", "enum": ["done", "broken", "failed", "paused"]},
                "state": state,
            },
        }
        return {
            "openapi": "3.1.0",
            "info": {
                "title": self.name,
                "version": version,
                "description": self.description or self.describe(),
            },
            "paths": {
                f"/{self.id}/run": {
                    "post": {
                        "operationId": f"run_{_mid(self.id)[2:]}",
                        "summary": f"Run {self.name}",
                        "requestBody": {
                            "required": self.input_schema is not None,
                            "content": {
                                "application/json": {"schema": _object_schema(self.input_schema)}
                            },
                        },
                        "responses": {
                            "200": {
                                "description": "The run ended (see status)",
                                "content": {"application/json": {"schema": result}},
                            },
                            "422": {"description": "The input failed the input schema"},
                        },
                    }
                }
            },
        }

    def to_mermaid(self) -> str:
        """The chart as a Mermaid ``flowchart TD`` diagram."""
        out = ["flowchart TD"]
        for node in self.nodes.values():
            label = node.name.replace('"', "'")
            shape = {
                "decider": f'{{"{label}"}}',
                "selector": f'{{{{"{label}"}}}}',
                "subflow": f'[["{label}"]]',
            }.get(node.kind, f'["{label}"]')
            out.append(f"    {_mid(node.id)}{shape}")
            for br in node.parallel:
                out.append(f'    {_mid(node.id + "/" + br.key)}["{br.name}"]')
        for node in self.nodes.values():
            src = _mid(node.id)
            for key, target in node.branches.items():
                out.append(f"    {src} -->|{key}| {_mid(target)}")
            for br in node.parallel:
                bid = _mid(node.id + "/" + br.key)
                out.append(f"    {src} -->|{br.key}| {bid}")
                if node.next is not None:
                    out.append(f"    {bid} --> {_mid(node.next)}")
            if node.next is not None and not node.parallel:
                arrow = "-.->|loop|" if node.loop else "-->"
                out.append(f"    {src} {arrow} {_mid(node.next)}")
        return "\n".join(out)


def _object_schema(schema: Schema | None) -> dict[str, Any]:
    return json_schema(schema) if schema is not None else {"type": "object"}


def _mid(node_id: str) -> str:
    return "n_" + "".join(c if c.isalnum() else "_" for c in node_id)


def _merge_name(policy: MergePolicy) -> str:
    if isinstance(policy, str):
        return policy
    return "reducers(" + ", ".join(policy) + ")"
