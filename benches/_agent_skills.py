"""The skills case of ``bench_agent.py``: what skills, an instruction, a skill graph and tool
choice by a (mock) classifier cost a turn, against the same agent with the same tools and
none of that (issue 32's target: at most 1.3× a plain turn).

Three skills of four tools each. The plain agent offers all twelve with ``.tool()``; the
skilled agents declare them in the skills (``skill_scoped_tools=True``), with an instruction
served from the second call, a graph on ``rails`` whose routes move the cursor on a hand-off
tool's return (``orders → shipping → account``), and the hand-off tools leasing the
instruction to the next call. ``skills+choice`` adds ``.tool_choice(classifier=
mock_classifier(...), serve={"top": 3})``: the classifier's answer is a constant per skill
(made once), so the classifier costs what the library does with an answer, not a model's
time. Every agent runs the same scripted turn: ``n`` calls to tools of the active skill, each
skill's last being its hand-off, then the answer; no call misses (each is among the top 3).
"""

from __future__ import annotations

import cProfile
import functools
import itertools
import logging
import pstats
import statistics
from collections.abc import Mapping
from typing import Any

from _common import checked_row, clock, fresh_heap, interleaved

from trackway.agent import (
    Agent,
    AgentBuilder,
    ClassifyAnswer,
    ClassifyRequest,
    define_instruction,
    define_skill,
    mock,
    mock_classifier,
    receipts,
    require_instruction,
    route,
    served_at,
    skill_graph,
)
from trackway.tools import Tool, define_tool

SKILLS = ("orders", "shipping", "account")
CALLS = (4, 16, 64)  # tool calls in the turn (n + 1 model calls)
TOP = 3
VARIANTS = ("plain", "skills", "skills+choice")
SYSTEM = "Answer briefly."
ANSWER = "done"

_SCHEMA = {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}


def _handoff(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    return {"content": "handed off", "effects": [require_instruction("brief")]}


def _tools(skill: str) -> list[Tool]:
    """``<skill>_handoff`` (moves the cursor by a route, leases the instruction), two tools
    the script calls and one it never does (the classifier ranks it last)."""
    out = [
        define_tool(
            name=f"{skill}_handoff",
            description=f"Hand the {skill} case on.",
            input_schema=_SCHEMA,
            execute=_handoff,
        )
    ]
    for part in ("lookup", "history", "notes"):
        out.append(
            define_tool(
                name=f"{skill}_{part}",
                description=f"The {skill} {part} for a key.",
                input_schema=_SCHEMA,
                execute=lambda args, ctx: "ok",
            )
        )
    return out


TOOLS = {skill: _tools(skill) for skill in SKILLS}
ANSWERS = {  # the classifier's ranking for each active skill, made once
    skill: ClassifyAnswer(
        ranked=tuple((t.name, s) for t, s in zip(TOOLS[skill], (0.9, 0.8, 0.7, 0.1), strict=True)),
        chosen=f"{skill}_lookup",
    )
    for skill in SKILLS
}


def script(n: int) -> list[Any]:
    """``n`` tool calls in three segments (one per skill), each ending with its hand-off,
    the others alternating lookup and history; then the answer."""
    sizes = [n // 3 + (1 if i < n % 3 else 0) for i in range(3)]
    out: list[Any] = []
    for skill, size in zip(SKILLS, sizes, strict=True):
        for j in range(size):
            part = "handoff" if j == size - 1 else ("lookup", "history")[j % 2]
            call = {"id": f"c{len(out)}", "name": f"{skill}_{part}", "args": {"key": f"k{j}"}}
            out.append({"tool_calls": [call]})
    out.append(ANSWER)
    return out


def _rank(request: ClassifyRequest) -> ClassifyAnswer:
    return ANSWERS[request.state["skill"]]


def build(variant: str, n: int) -> Agent:
    """A fresh agent of ``variant`` with the turn of ``n`` calls scripted (a script is used up)."""
    options: dict[str, Any] = {"max_iterations": n + 1, "stream": False}
    if variant != "plain":
        options["skill_scoped_tools"] = True
    provider = mock(replies=script(n), keep_requests=False)
    builder: AgentBuilder = Agent.create(provider=provider, model="scripted", **options)
    builder = builder.system(SYSTEM)
    if variant == "plain":
        return builder.tools([t for skill in SKILLS for t in TOOLS[skill]]).build()
    builder = builder.skills(
        define_skill(id=s, title=s.title(), body=f"You work the {s} desk.", tools=TOOLS[s])
        for s in SKILLS
    )
    builder = builder.instruction(
        define_instruction(
            id="brief", prompt="Be brief.", active_when=lambda state: state["iteration"] >= 2
        )
    )
    builder = builder.skill_graph(
        skill_graph(
            route("orders", "shipping", on_tool_return="orders_handoff"),
            route("shipping", "account", on_tool_return="shipping_handoff"),
            entry="orders",
            strictness="rails",
        )
    )
    if variant == "skills+choice":
        builder = builder.tool_choice(classifier=mock_classifier(_rank), serve={"top": TOP})
    return builder.build()


def check(agent: Agent, variant: str, n: int) -> dict[str, Any]:
    """After an untimed run: the turn went as scripted (every call ran, the cursor reached
    ``account``, the classifier narrowed every call) and the law holds at every call."""
    state = agent.snapshot().state
    statuses = [r["status"] for r in state["tool_results"]]
    assert statuses == ["success"] * n, statuses
    snap = agent.snapshot()
    calls = receipts(snap)
    assert len(calls) == n + 1
    assert all(served_at(snap, k).hash == r["request_hash"] for k, r in enumerate(calls, 1))
    out: dict[str, Any] = {"served_tools": len(served_at(snap, n + 1).tools or ())}
    if variant != "plain":
        assert state["skill_cursor"]["skill"] == "account", state["skill_cursor"]
        out["moves"] = sum(1 for p in state["skill_proposals"] if p["verdict"] == "accepted")
    if variant == "skills+choice":
        picks = [r for r in state["tool_choices"] if r["kind"] == "pick"]
        assert all(r["narrowed"] for r in picks), [r.get("skip") for r in picks]
        out["narrowed_calls"] = len(picks)
    return out


def _quiet() -> None:
    """The refusals the library logs go to stderr; the bench's script makes none, but a
    broken script must fail the check, not flood the report."""
    logging.getLogger("trackway").setLevel(logging.ERROR)


def timed(variant: str, n: int) -> float:
    """Seconds of one ``run_sync`` of a fresh agent (built before the clock starts)."""
    agent = build(variant, n)
    fresh_heap()
    t = clock()
    answer = agent.run_sync("go")
    total = clock() - t
    assert answer == ANSWER, answer
    return total


def measure(sizes: tuple[int, ...], rounds: int, per_round: int) -> dict[str, Any]:
    """Each size: one untimed run per variant (checked), then ``rounds`` interleaved rounds,
    each running every variant ``per_round`` times in turn, so the VM's drift bills all
    three alike. A cell is the median of its runs; a ratio is the median over rounds of
    the variant's round median / the plain round median."""
    _quiet()
    rows: list[dict[str, Any]] = []
    for n in sizes:
        row = checked_row("skills", n, VARIANTS, build, check)
        samples, ratios = interleaved(
            VARIANTS, "plain", functools.partial(timed, n=n), rounds, per_round
        )
        for variant in VARIANTS:
            total = statistics.median(samples[variant])
            row[variant].update(
                total_s=total,
                us_per_turn=total * 1e6,
                us_per_call=total / (n + 1) * 1e6,
                repeats=len(samples[variant]),
            )
            if variant in ratios:
                row[variant]["ratio"] = statistics.median(ratios[variant])
        rows.append(row)
        print(" done", flush=True)
    return {"results": rows, "growth": growth(rows)}


def growth(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per variant: the marginal µs per model call between consecutive sizes (the fixed cost
    of a run left out), and the last marginal over the first (flat = about 1)."""
    out = []
    for variant in VARIANTS:
        marginals = []
        for a, b in itertools.pairwise(rows):
            span = b["calls"] - a["calls"]
            marginals.append(
                {
                    "from_calls": a["calls"],
                    "to_calls": b["calls"],
                    "us_per_call": (b[variant]["total_s"] - a[variant]["total_s"]) / span * 1e6,
                }
            )
        first, last = marginals[0]["us_per_call"], marginals[-1]["us_per_call"]
        out.append(
            {
                "variant": variant,
                "marginal": marginals,
                "growth": last / first if first > 0 else float("inf"),
            }
        )
    return out


def stage_times(n: int, runs: int) -> dict[str, Any]:
    """Un-profiled: per variant, the median µs from each stage's commit to the next one's
    (the stage's work and its commit) over ``runs`` runs at ``n`` calls, per stage that runs
    once per model call, and the commits per model call."""
    _quiet()
    out: dict[str, Any] = {}
    for variant in VARIANTS:
        spans: dict[str, list[float]] = {}
        commits = 0
        for _ in range(runs):
            agent = build(variant, n)
            fresh_heap()
            agent.run_sync("go")
            log = agent.snapshot().commits
            commits = len(log)
            for c, after in itertools.pairwise(log):
                spans.setdefault(c.stage_id, []).append((after.started_at - c.started_at) * 1e6)
        out[variant] = {
            "commits_per_call": commits / (n + 1),
            "stages": {
                stage: statistics.median(xs)
                for stage, xs in spans.items()
                if len(xs) >= runs * n  # once per model call (not seed, tools, final)
            },
        }
    return out


def _key(entry: tuple[str, int, str], repo: str) -> str:
    file, line, func = entry
    return f"{file.replace(repo + '/', '').rsplit('/trackway/', 1)[-1]}:{line}({func})"


def _profile(variant: str, n: int, runs: int, repo: str) -> dict[str, tuple[int, float]]:
    """tottime and ncalls by function over ``runs`` runs of ``variant`` at ``n`` calls."""
    agents = [build(variant, n) for _ in range(runs)]
    fresh_heap()
    prof = cProfile.Profile()
    prof.enable()
    for agent in agents:
        agent.run_sync("go")
    prof.disable()
    raw: Mapping[tuple[str, int, str], tuple[Any, ...]] = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    out: dict[str, tuple[int, float]] = {}
    for entry, (_cc, nc, tt, _ct, _callers) in raw.items():
        key = _key(entry, repo)
        calls, total = out.get(key, (0, 0.0))
        out[key] = (calls + nc, total + tt)
    return out


def profile_delta(n: int, repo: str, runs: int = 20, top: int = 15) -> dict[str, Any]:
    """Where the extra time of ``skills+choice`` over ``plain`` goes: cProfile both over
    ``runs`` runs at ``n`` calls, and list the functions by their extra tottime per model
    call (µs), with their calls per model call in each."""
    _quiet()
    plain = _profile("plain", n, runs, repo)
    skilled = _profile("skills+choice", n, runs, repo)
    per = runs * (n + 1)
    rows = []
    for key in set(plain) | set(skilled):
        pc, pt = plain.get(key, (0, 0.0))
        sc, st = skilled.get(key, (0, 0.0))
        rows.append(
            {
                "function": key,
                "extra_us_per_call": (st - pt) / per * 1e6,
                "plain_calls_per_call": pc / per,
                "skills_calls_per_call": sc / per,
            }
        )
    rows.sort(key=lambda r: r["extra_us_per_call"], reverse=True)
    total = {
        name: sum(t for _, t in table.values()) / per * 1e6
        for name, table in (("plain", plain), ("skills+choice", skilled))
    }
    return {"calls": n, "runs": runs, "profiled_us_per_call": total, "top": rows[:top]}
