"""Causal traces: why does a key hold its value? Walk back through writers and their reads.

The time-travel index doubles as a last-writer index: every key's versions carry the seq of
the commit that wrote them, so "who last wrote k before commit n" is one bisect. A trace
therefore costs O(depth x reads x log versions), never a scan of the whole log, for keys of
the run's state; keys inside a parallel branch or an isolated subflow are looked up in that
frame's commits.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from ..core._commit import Commit
from ..core._detail import as_detail
from ..core._paths import StagePath, parent_of
from ..core._snapshot import Snapshot

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["CausalChain", "CausalProfile", "causal_chain", "register_causal_profile"]

INPUT = "input"


class CausalProfile(NamedTuple):
    """How to read the runs of one kind of chart: the keys that are bookkeeping (their
    reads are not followed: loop counters, settings, ledgers) and the keys its stages read
    absent on purpose (optional features; not reported as gaps; ``None``: every key).
    ``applies(snapshot)`` says whether a run is of that kind. The agent layer registers one
    for agent runs, so ``causal_chain(snapshot, "final_answer")`` shows the model calls and
    the tool results behind an answer."""

    name: str
    applies: Callable[[Snapshot], bool]
    bookkeeping: frozenset[str] = frozenset()
    optional: frozenset[str] | None = frozenset()


_PROFILES: list[CausalProfile] = []


def register_causal_profile(profile: CausalProfile) -> None:
    """Use ``profile`` for every run it applies to (the first registered that applies)."""
    if profile.name in {p.name for p in _PROFILES}:
        _PROFILES[:] = [p for p in _PROFILES if p.name != profile.name]
    _PROFILES.append(profile)


@dataclass
class CausalChain:
    """A backward slice: ``graph`` has one node per commit (its seq) plus source nodes.

    Edges point from a value to what it depends on, with ``kind`` "data" (``key`` read) or
    "control" (the decision that chose the branch). ``gaps`` lists what the log cannot
    explain (values from outside tracked scope); ``truncated`` says whether limits cut it.
    """

    key: str
    root: int | None
    graph: nx.DiGraph[Any]
    gaps: list[str] = field(default_factory=list)
    truncated: bool = False

    def writers(self) -> list[int]:
        """Seqs of every commit in the slice, newest first."""
        return sorted((n for n in self.graph if isinstance(n, int)), reverse=True)

    def render(self) -> str:
        """An indented, readable tree of the slice."""
        if self.root is None:
            return f"{self.key}: never written by a stage" + (
                " (it came from the run input)" if INPUT in self.graph else ""
            )
        lines: list[str] = []
        seen: set[Any] = set()
        stack: list[tuple[Any, int, str]] = [(self.root, 0, "")]
        while stack:
            node, depth, via = stack.pop()
            pad = "  " * depth
            label = self.graph.nodes[node].get("label", str(node))
            again = " (see above)" if node in seen else ""
            lines.append(f"{pad}{via}{label}{again}")
            if node in seen:
                continue
            seen.add(node)
            edges = sorted(self.graph.out_edges(node, data=True), key=lambda e: str(e[1]))
            for _, target, data in reversed(edges):
                how = (
                    f"← control: {data.get('branch')!r} chosen by "
                    if data["kind"] == "control"
                    else f"← via {data.get('key')}: "
                )
                stack.append((target, depth + 1, how))
        if self.gaps:
            lines.extend(f"⚠ {gap}" for gap in self.gaps)
        if self.truncated:
            lines.append("⚠ the slice was truncated by max_nodes; it is not complete")
        return "\n".join(lines)


def causal_chain(
    snapshot: Snapshot,
    key: str,
    *,
    at: int | None = None,
    max_nodes: int = 500,
    ignore: Iterable[str] = (),
    optional: Iterable[str] = (),
    profile: bool = True,
) -> CausalChain:
    """Trace the value of ``key`` after commit ``at`` (default: the end) back to its causes.

    ``ignore``: keys whose reads are not followed (bookkeeping); ``optional``: keys a stage
    may read absent without it being a gap. A registered :class:`CausalProfile` that applies
    to the run adds its own (``profile=False`` leaves them out: the full slice)."""
    import networkx as nx  # imported here: `import trackway` stays fast

    skip = set(ignore)
    allowed = set(optional)
    absent_ok: set[str] | None = allowed
    for known in _PROFILES if profile else ():
        if known.applies(snapshot):
            skip |= known.bookkeeping
            absent_ok = None if known.optional is None else allowed | known.optional
            break

    n = len(snapshot) if at is None else at
    snapshot.state_at(n)  # validates ``at``
    commits = snapshot._commits
    store = snapshot._store
    by_path = {c.stage_path: c for c in commits[:n]}
    graph: nx.DiGraph[Any] = nx.DiGraph()
    chain = CausalChain(key=key, root=None, graph=graph)

    frames = {c.frame for c in commits[:n]}
    isolated = {c.frame for c in commits[:n] if c.kind == "subflow-input"}

    def writer(k: str, before: int, frame: str) -> int | None:
        """Seq of the last commit before ``before`` that wrote ``k`` as seen from ``frame``."""
        while frame:
            for c in reversed(commits[: before - 1]):
                if c.frame == frame and any(w[1] == k for w in c.writes):
                    return int(c.seq)
            if frame in isolated:
                return None  # an isolated subflow sees only what its input= seeded
            # a parallel branch reads through to the frame its fork ran in
            parent = parent_of(frame)
            while parent and parent not in frames:
                parent = parent_of(parent)
            frame = parent
        return store.seq_before(k, before)

    def add(seq: int) -> None:
        c = commits[seq - 1]
        written = ", ".join(c.keys_written) or "nothing"
        graph.add_node(seq, label=f"{c.stage_name} ({c.stage_path}, commit {seq}) wrote "
                       f"{written}", commit=c)  # fmt: skip

    start = writer(key, n + 1, "")
    if start is None:
        return chain
    if start == 0:
        graph.add_node(INPUT, label=f"{key} came from the run input")
        chain.root = None
        return chain
    chain.root = start
    add(start)
    queue: deque[int] = deque([start])
    while queue:
        seq = queue.popleft()
        c = commits[seq - 1]
        for dep_key, dep_seq, kind, extra in _dependencies(c, commits, by_path, writer):
            if kind == "data" and dep_key in skip:
                continue
            if dep_seq is None and dep_key in ("item", "index") and "/" in c.frame:
                source = f"{dep_key} of {c.frame}"
                graph.add_node(source, label=f"{dep_key} seeded by parallel_for_each")
                graph.add_edge(seq, source, kind=kind, key=dep_key)
                continue
            if dep_seq is None:
                if absent_ok is None or dep_key in absent_ok:
                    continue  # read absent on purpose: an optional feature not configured
                chain.gaps.append(
                    f"{c.stage_path} read {dep_key!r}, which no stage had written and the "
                    "input did not hold (it was absent)"
                )
                continue
            if dep_seq == 0:
                if INPUT not in graph:
                    graph.add_node(INPUT, label="run input")
                graph.add_edge(seq, INPUT, kind=kind, key=dep_key, **extra)
                continue
            if dep_seq not in graph:
                if graph.number_of_nodes() >= max_nodes:
                    chain.truncated = True
                    continue
                add(dep_seq)
                queue.append(dep_seq)
            if graph.has_edge(seq, dep_seq) and kind == "data":
                edge = graph.edges[seq, dep_seq]
                if dep_key not in edge["key"].split(", "):
                    edge["key"] += f", {dep_key}"  # several keys came from one writer
                continue
            graph.add_edge(seq, dep_seq, kind=kind, key=dep_key, **extra)
        if c.kind == "resume":
            chain.gaps.append(
                f"{c.stage_path} used a resume value from outside the run "
                f"({as_detail(c.detail).get('resume', {}).get('value')!r})"
            )
    return chain


def _dependencies(
    c: Commit, commits: Any, by_path: dict[str, Commit], writer: Any
) -> list[tuple[str, int | None, str, dict[str, Any]]]:
    """What one commit depends on: its reads' writers, its branch's decision, merged work."""
    deps: list[tuple[str, int | None, str, dict[str, Any]]] = []
    detail = as_detail(c.detail)
    read_frame = detail.get("reads_frame", c.frame)
    for k in c.reads:
        deps.append((k, writer(k, c.seq, read_frame), "data", {}))
    control = detail.get("control")
    if control is not None:
        decider = by_path.get(control["decider"])
        if decider is not None:
            deps.append((control["decider"], decider.seq, "control", {"branch": control["branch"]}))
    if c.kind == "merge":
        # a selector's merge commit is "<selector path>/merge"; a fork's and a for-each's
        # merge commit has the node's own path
        path = StagePath.parse(c.stage_path)
        if path.name == "merge" and path.index is None and path.parent is not None:
            path = path.parent
        prefix = f"{path}/"
        block = []  # the branch commits just before the merge
        for other in reversed(commits[: c.seq - 1]):
            if other.frame.startswith(prefix):
                block.append(other)
            elif other.frame == c.frame:
                break
        last: dict[str, Commit] = {}  # the last commit of each branch frame
        for o in block:
            last.setdefault(o.frame, o)
        for k in c.keys_written:
            writers: dict[str, Commit] = {}  # the last writer of k in each branch
            for o in block:
                if k in o.keys_written:
                    writers.setdefault(o.frame, o)
            found = list(writers.values())
            if not found and prefix + k in last:  # namespace: the branch named k
                found = [last[prefix + k]]
            elif not found:  # for_each results: every branch
                found = list(last.values())
            deps.extend((k, o.seq, "data", {"merged": True}) for o in found)
    return deps
