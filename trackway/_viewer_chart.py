"""The chart the viewer draws: parsed from the Mermaid text a recording's header keeps, laid
out in layers top-down, and written as inline SVG (no script, no network).

Without a recorded structure (a recording streamed without ``chart=``, an older format) the
chart is drawn from the log: the top-level stages in the order they first ran.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from html import escape
from typing import Any, NamedTuple

from trackway.engine import Commit

__all__ = [
    "ChartDrawing",
    "chart_from_log",
    "chart_from_mermaid",
    "chart_from_structure",
    "draw",
    "node_of",
]

_NODE = re.compile(
    r'^\s+(?P<id>n_\w+)(?:\[\["(?P<sub>.*)"\]\]|\{\{"(?P<sel>.*)"\}\}|\{"(?P<dec>.*)"\}|'
    r'\["(?P<box>.*)"\])$'
)
_EDGE = re.compile(
    r"^\s+(?P<src>n_\w+) (?P<arrow>-->|-\.->)(?:\|(?P<label>.*?)\|)? (?P<dst>n_\w+)$"
)

_W, _H, _GAP_X, _GAP_Y, _PAD = 156, 34, 18, 44, 12


class Node(NamedTuple):
    id: str
    name: str
    shape: str  # box, decider, selector, subflow


class Edge(NamedTuple):
    source: str
    target: str
    label: str
    loop: bool


class ChartDrawing(NamedTuple):
    nodes: list[Node]
    edges: list[Edge]
    source: str  # "recording", "checkpoint", "chart" or "log"


def mermaid_id(node_id: str) -> str:
    """The Mermaid id ``FlowChart.to_mermaid`` gives a node id."""
    return "n_" + "".join(c if c.isalnum() else "_" for c in node_id)


def chart_from_mermaid(text: str) -> ChartDrawing | None:
    """The nodes and edges of a ``flowchart TD`` written by ``to_mermaid`` (``None`` if the
    text is not one)."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "flowchart TD":
        return None
    nodes: list[Node] = []
    edges: list[Edge] = []
    for line in lines[1:]:
        m = _NODE.match(line)
        if m is not None:
            shape = next(s for s in ("sub", "sel", "dec", "box") if m[s] is not None)
            name = m[shape]
            nodes.append(Node(m["id"], name, _SHAPES[shape]))
            continue
        e = _EDGE.match(line)
        if e is not None:
            edges.append(Edge(e["src"], e["dst"], e["label"] or "", e["arrow"] == "-.->"))
    return ChartDrawing(nodes, edges, "recording") if nodes else None


_SHAPES = {"sub": "subflow", "sel": "selector", "dec": "decider", "box": "box"}


def chart_from_structure(
    structure: dict[str, Any], names: dict[str, str], source: str = "checkpoint"
) -> ChartDrawing | None:
    """The nodes and edges of a chart's structure as a checkpoint records it (``nodes`` by
    id with their kind, ``edges`` as ``[source, target, kind, label]``), ``None`` if it is
    not one. The structure keeps no display names: ``names`` (node id to the stage name
    its commits recorded) gives them where the run reached the node; else the id is shown."""
    found = structure.get("nodes")
    if not isinstance(found, dict) or not found:
        return None
    nodes = [
        Node(
            mermaid_id(node_id),
            names.get(str(node_id), str(node_id)),
            _KINDS.get(str((info or {}).get("kind")), "box"),
        )
        for node_id, info in found.items()
    ]
    edges = [
        Edge(mermaid_id(str(e[0])), mermaid_id(str(e[1])), str(e[3] or ""), e[2] == "loop")
        for e in structure.get("edges", ())
        if isinstance(e, list | tuple) and len(e) == 4
    ]
    return ChartDrawing(nodes, edges, source)


_KINDS = {"decider": "decider", "selector": "selector", "subflow": "subflow"}


def chart_from_log(commits: Sequence[Commit]) -> ChartDrawing:
    """The top-level stages in the order they first ran, one after another."""
    nodes: dict[str, Node] = {}
    for c in commits:
        top = c.stage_path.split("/", 1)[0].split("#", 1)[0].split(":", 1)[0]
        if top and mermaid_id(top) not in nodes:
            name = c.stage_name if "/" not in c.stage_path else top
            shape = "decider" if c.kind == "decider" else "box"
            nodes[mermaid_id(top)] = Node(mermaid_id(top), name, shape)
    ids = list(nodes)
    edges = [Edge(a, b, "", False) for a, b in itertools.pairwise(ids)]
    return ChartDrawing(list(nodes.values()), edges, "log")


def node_of(commit: Commit, known: set[str]) -> str | None:
    """The drawn node a commit ran at: a fork's branch (``<fork>/<key>``), else the stage."""
    segments = [s.split("#", 1)[0].split(":", 1)[0] for s in commit.stage_path.split("/")]
    for depth in range(len(segments), 0, -1):
        tail = segments[:depth]
        for candidate in ("/".join(tail[-2:]), tail[-1]):
            mid = mermaid_id(candidate)
            if mid in known:
                return mid
    return None


def _layers(drawing: ChartDrawing) -> dict[str, int]:
    """Each node's layer: its longest distance from a start, loop edges left out."""
    ids = [n.id for n in drawing.nodes]
    succ: dict[str, list[str]] = {i: [] for i in ids}
    indeg = dict.fromkeys(ids, 0)
    for e in drawing.edges:
        if not e.loop and e.source in succ and e.target in indeg:
            succ[e.source].append(e.target)
            indeg[e.target] += 1
    layer = dict.fromkeys(ids, 0)
    ready = [i for i in ids if indeg[i] == 0]
    seen = 0
    while ready:
        node = ready.pop(0)
        seen += 1
        for nxt in succ[node]:
            layer[nxt] = max(layer[nxt], layer[node] + 1)
            indeg[nxt] -= 1
            if indeg[nxt] == 0:
                ready.append(nxt)
    if seen < len(ids):  # a cycle without a loop mark: keep declaration order
        return {i: n for n, i in enumerate(ids)}
    return layer


def draw(drawing: ChartDrawing, ran: dict[str, int]) -> str:
    """The chart as an SVG element; ``ran`` counts the commits made at each node (those
    nodes are marked, and each carries ``data-node`` for the page to select)."""
    layer = _layers(drawing)
    rows: dict[int, list[Node]] = {}
    for node in drawing.nodes:
        rows.setdefault(layer[node.id], []).append(node)
    width = max(len(r) for r in rows.values()) * (_W + _GAP_X) + 2 * _PAD
    height = (max(rows) + 1) * (_H + _GAP_Y) + 2 * _PAD
    at: dict[str, tuple[float, float]] = {}
    for depth, row in rows.items():
        span = len(row) * (_W + _GAP_X) - _GAP_X
        left = (width - span) / 2
        for i, node in enumerate(row):
            at[node.id] = (left + i * (_W + _GAP_X), _PAD + depth * (_H + _GAP_Y))
    parts: list[str] = [
        f'<svg class="chart" width="{width:.0f}" '
        f'height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" role="img">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z"/></marker></defs>',
    ]
    for e in drawing.edges:
        if e.source not in at or e.target not in at:
            continue
        parts.append(_edge(at[e.source], at[e.target], e))
    for node in drawing.nodes:
        parts.append(_node(node, at[node.id], ran.get(node.id, 0)))
    parts.append("</svg>")
    return "".join(parts)


def _edge(a: tuple[float, float], b: tuple[float, float], e: Edge) -> str:
    x1, y1 = a[0] + _W / 2, a[1] + _H
    x2, y2 = b[0] + _W / 2, b[1]
    if y2 <= y1:  # a loop back up: around the right side
        x1, y1, x2, y2 = a[0] + _W, a[1] + _H / 2, b[0] + _W, b[1] + _H / 2
        bend = max(x1, x2) + 30
        path = f"M{x1:.0f},{y1:.0f} C{bend:.0f},{y1:.0f} {bend:.0f},{y2:.0f} {x2:.0f},{y2:.0f}"
    else:
        mid = (y1 + y2) / 2
        path = f"M{x1:.0f},{y1:.0f} C{x1:.0f},{mid:.0f} {x2:.0f},{mid:.0f} {x2:.0f},{y2:.0f}"
    cls = "edge loop" if e.loop else "edge"
    out = f'<path class="{cls}" d="{path}" marker-end="url(#arrow)"/>'
    if e.label:
        lx, ly = (x1 + x2) / 2, (y1 + y2) / 2
        out += f'<text class="edge-label" x="{lx:.0f}" y="{ly:.0f}">{escape(e.label)}</text>'
    return out


def _node(node: Node, pos: tuple[float, float], commits: int) -> str:
    x, y = pos
    cls = f"node {node.shape}" + (" ran" if commits else "")
    label = node.name if len(node.name) <= 22 else node.name[:21] + "…"
    rx = 17 if node.shape in ("decider", "selector") else 4
    title = f"{node.name}: {commits} commit{'' if commits == 1 else 's'}"
    return (
        f'<g class="{cls}" data-node="{escape(node.id)}" tabindex="0">'
        f"<title>{escape(title)}</title>"
        f'<rect x="{x:.0f}" y="{y:.0f}" width="{_W}" height="{_H}" rx="{rx}"/>'
        f'<text x="{x + _W / 2:.0f}" y="{y + _H / 2 + 4:.0f}">{escape(label)}</text></g>'
    )


def drawing_doc(drawing: ChartDrawing) -> dict[str, Any]:
    """The drawing's facts for the page's data (which nodes exist, where it came from)."""
    return {"source": drawing.source, "nodes": [n.id for n in drawing.nodes]}
