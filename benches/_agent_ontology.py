"""The ontology case of ``bench_agent.py``: what ``.ontology()`` costs a turn (the map written
once at the seed, its piece composed once per run and served to every call, one
``ontology.served`` event a call), against the same agent without it. The target is its
shape: a fixed cost plus a constant per call, never more per call as the turn grows (extra
CPU per turn ≤ 400 µs + 40 µs x calls), and the piece's bytes the same at every call.

``ontology`` arms a map of 40 terms, 5 sources and 39 relations (``ask="use-the-map"``);
``none`` is the same agent without it, which mounts nothing and writes no key. Every agent
runs the same scripted turn: ``n`` calls of one tool, then the answer.

Time is CPU time of the process (``time.process_time``) around ``run_sync`` alone (the agent
and its script are built before the clock starts); rounds interleave the variants so drift
bills them alike.
"""

from __future__ import annotations

import logging
from typing import Any

from _agent_case import LOOKUP, lookup_script, scripted
from _common import cpu_run_sync, variant_rows, variant_table

from trackway.agent import Agent, define_ontology, receipts, replay, served_at

CALLS = (0, 1, 4, 16)  # tool calls in the turn (n + 1 model calls)
VARIANTS = ("none", "ontology")
FIXED_US, PER_CALL_US = 400.0, 40.0  # the seed's write and the piece once; an event a call
ANSWER = "done"

TOOL = LOOKUP

MAP = define_ontology(
    id="bench",
    version="1",
    sources={
        f"s{j}": {"meaning": f"source {j}", "coverage": "30 days", "configured": j % 2 == 0}
        for j in range(5)
    },
    nodes={
        f"term_{i:02}": {
            "meaning": f"the measured quantity number {i}",
            "unit": "per minute",
            "aliases": [f"quantity {i}"],
            **({"sources": [{"source": f"s{i % 5}", "via": ["lookup"], "coverage": "all keys"}]}
               if i % 3 else {}),
        }
        for i in range(40)
    },
    edges=[{"from": f"term_{i:02}", "to": f"term_{i + 1:02}", "relation": "feeds"}
           for i in range(39)],
)  # fmt: skip


def script(n: int) -> list[Any]:
    return lookup_script(n, ANSWER)


def build(variant: str, n: int) -> Agent:
    """A fresh agent of ``variant`` with the turn of ``n`` calls scripted."""
    builder = scripted(n, script(n))
    builder = builder.system("Answer briefly.").tool(TOOL)
    if variant == "ontology":
        builder = builder.ontology(MAP)
    return builder.build()


def check(agent: Agent, variant: str, n: int) -> dict[str, Any]:
    """After an untimed run: every call ran, the law holds at every call, every call was
    served the same system bytes (the piece among them under ``.ontology()``), one event a
    call (none without it), and the run replays."""
    snap = agent.snapshot()
    state = snap.state
    assert [r["status"] for r in state.get("tool_results", [])] == ["success"] * n
    calls = receipts(snap)
    assert len(calls) == n + 1
    systems = set()
    for k, r in enumerate(calls, 1):
        request = served_at(snap, k)
        assert request.hash == r["request_hash"]
        systems.add(request.system or "")
    assert len(systems) == 1  # the piece carries no per-call byte
    events = [e for c in snap.history() for e in c.events if e.name == "ontology.served"]
    assert len(events) == {"none": 0, "ontology": n + 1}[variant], (variant, len(events))
    assert ("ontology" in state) == (variant == "ontology")
    replay(snap)
    system = systems.pop()
    return {"ledger_rows": len(events), "commits": len(snap), "system_bytes": len(system.encode())}


def timed(variant: str, n: int) -> float:
    """CPU seconds of one ``run_sync`` of a fresh agent (built before the clock starts)."""
    return cpu_run_sync(build(variant, n), "go", ANSWER)


def measure(sizes: tuple[int, ...], rounds: int, per_round: int) -> dict[str, Any]:
    """Each size: an untimed, checked run per variant, then ``rounds`` rounds running every
    variant ``per_round`` times in turn. A cell is the median of its runs; a ratio the median
    over rounds of the variant's round median / none's."""
    logging.getLogger("trackway").setLevel(logging.ERROR)
    rows = variant_rows(
        "ontology", sizes, VARIANTS, build, check, timed, rounds, per_round, "extra_us_per_turn"
    )
    return {"results": rows}


def targets(section: dict[str, Any]) -> list[dict[str, Any]]:
    """The extra CPU per turn against ``FIXED_US + PER_CALL_US * calls``, per size, and the
    piece's bytes the same at every size (served unchanged, whatever the turn)."""
    out = []
    for row in section["results"]:
        extra = row["ontology"]["extra_us_per_turn"]
        limit = FIXED_US + PER_CALL_US * row["calls"]
        out.append(
            {
                "target": f"ontology - none, extra CPU µs per turn of {row['calls']} tool calls "
                f"(ratio {row['ontology']['ratio']:.2f})",
                "measured": extra,
                "threshold": f"≤ {limit:g}",
                "pass": extra <= limit,
            }
        )
    added = {r["ontology"]["system_bytes"] - r["none"]["system_bytes"] for r in section["results"]}
    out.append(
        {
            "target": "system bytes the map adds to every call, the same at every turn count",
            "measured": max(added),
            "threshold": "one value",
            "pass": len(added) == 1,
        }
    )
    return out


def table(section: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    """The report's table: one line per size and variant (the events as its rows)."""
    headers, rows = variant_table(section, VARIANTS, "served events")
    bytes_of = [row[v]["system_bytes"] for row in section["results"] for v in VARIANTS]
    return [*headers, "system bytes"], [[*r, b] for r, b in zip(rows, bytes_of, strict=True)]


NOTE = (
    "trackway with .ontology() (benches/_agent_ontology.py): one tool, a turn of n calls then "
    "the answer; none = no map; ontology = a map of 40 terms, 5 sources, 39 relations with the "
    "library's ask, served as one system piece to every call. CPU time (process_time) of "
    "run_sync only, median of interleaved rounds; ratio = median over rounds of the variant's "
    "round median / none's. An untimed run per cell checks every call, served_at at every call "
    "(one system text per run), one ontology.served per call, and a replay."
)
