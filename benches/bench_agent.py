"""Agent benchmarks: framework time per tool turn, with the model scripted out.

A turn is one model call that returns one tool call, plus that tool's execution; the last
model reply is the final answer. Runs the same script at 10, 50, 100 and 200 turns on the
trackway ``Agent`` (``mock`` provider) and, when installed, on LangGraph
``create_react_agent`` (a scripted chat model, no checkpointer), pydantic-ai ``Agent``
(``FunctionModel``) and the OpenAI Agents SDK (``agents.testing.ScriptedModel``, tracing
off). Prints tables and writes ``benches/results/bench_agent.json``, with the targets
(``targets`` rows ``{target, measured, threshold, pass}``), the trackway allocations per turn
(``allocations``: memory blocks, see :func:`allocations`) and a profile of the largest run:
a cProfile top table in the JSON and the report, and in ``benches/results/`` its pstats text
(``bench_agent_profile.txt``), the ``.prof`` file and sampled collapsed stacks for a flame
graph (``bench_agent.folded``). See ``benches/README.md``.

    .venv/bin/python benches/bench_agent.py [--no-peers] [--quick] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import os
import pstats
import statistics
import sys
import tempfile
import tracemalloc
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import _agent_artifacts as artifacts_case
import _agent_events as events_case
import _agent_evidence as evidence_case
import _agent_explain as explain_case
import _agent_findings as findings_case
import _agent_fixed as fixed_case
import _agent_memory as memory_case
import _agent_middleware as middleware_case
import _agent_ontology as ontology_case
import _agent_skills as skills_case
import _agent_time as time_case
import _agent_validation as validation_case
import _agent_window_facts as window_facts_case
from _common import (
    RESULTS_DIR,
    clock,
    dist_version,
    fresh_heap,
    median_runs,
    print_table,
    print_targets,
    profile_call,
    tenth_growth,
    write_json,
)

os.environ.setdefault("LANGSMITH_TRACING", "false")
os.environ.setdefault("LANGCHAIN_TRACING_V2", "false")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
warnings.filterwarnings("ignore")

from trackway.agent import (  # noqa: E402
    Agent,
    AgentBuilder,
    LLMRequest,
    mock,
    receipts,
    save_recording,
    served_at,
    sliding_window,
    token_budget,
)
from trackway.tools import define_tool  # noqa: E402

TURNS = (10, 50, 100, 200)
REPEATS = 3
TW_REPEATS = 9  # a trackway run costs milliseconds: more of them steady its median on a noisy VM
WARM_TURNS = 10  # turns of the untimed warm-up run before each measured cell
SLOW_RUN_S = 2.0  # a peer run slower than this is not repeated (the cell is one run)
SYSTEM = "Answer briefly."
TOOL_NAME = "lookup"
TOOL_DOC = "Look a key up."
TOOL_RESULT = "ok"
PROFILE_TOP = 15
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__))).replace("\\", "/")

TARGET_US_PER_TURN = 100.0  # issue 19: at the floor (≤ ~100 µs on the developers' machines)
TARGET_GROWTH = 1.2
TARGET_VS_PEER = 30.0
ALLOC_TURNS = (10, 200)  # sizes of the allocation runs (per-turn = their difference / 190)

# skills, an instruction, a skill graph and tool choice vs the same plain agent (issue 32)
TARGET_SKILLS_RATIO = 1.3  # skills+choice / plain, per turn of SKILLS_TARGET_CALLS tool calls
SKILLS_TARGET_CALLS = 16
TARGET_SKILLS_GROWTH = 1.2  # marginal µs per model call, last size step / first
SKILLS_PROFILE_RUNS = 20

# windowed trackway (context windowing: cost stays O(new content) per call)
WINDOW_KEEP_TURNS = 6  # keep_recent_turns of both strategies
WINDOW_KEEP_RESULTS = 2  # window(..., keep_last_tool_results=)
BUDGET_TOKENS = 600  # token_budget(max_input_tokens=)
TOKENS_PER_MESSAGE = 20  # what the mock reports per served message (see _usage_reporting)
WINDOW_BAND = (20, 40)  # calls (1-based, inclusive) of the "early" band, after the window fills
WINDOW_TAIL = 20  # the "late" band: the last WINDOW_TAIL calls
TARGET_WINDOW_BYTES_GROWTH = 1.2
TARGET_WINDOW_GROWTH = 1.5
WINDOWS = {  # key: label
    "sliding_window": f"sliding_window(keep_recent_turns={WINDOW_KEEP_TURNS})",
    "token_budget": f"token_budget(max_input_tokens={BUDGET_TOKENS}, "
    f"keep_recent_turns={WINDOW_KEEP_TURNS})",
}

Metrics = dict[str, float]
Runner = Callable[[], Metrics]


def _answer(turns: int) -> str:
    return f"done after {turns} turns"


def _per_turn(total: float, turns: int) -> Metrics:
    return {"total_s": total, "us_per_turn": total / turns * 1e6}


# -- trackway -------------------------------------------------------------------------------

TW_TOOL = define_tool(
    name=TOOL_NAME,
    description=TOOL_DOC,
    input_schema={
        "type": "object",
        "properties": {"key": {"type": "string"}},
        "required": ["key"],
    },
    execute=lambda args, ctx: TOOL_RESULT,
)


def _usage_reporting(script: list[Any]) -> Callable[[LLMRequest], Any]:
    """The script's replies in order, each reporting usage (token_budget acts on reported
    input tokens only): TOKENS_PER_MESSAGE per served message, system prompt counted as one.
    O(1) per call: no serialisation of the request inside the timed run."""
    replies = iter(script)

    def respond(request: LLMRequest) -> Any:
        reply = next(replies)
        usage = {"input_tokens": TOKENS_PER_MESSAGE * (len(request.messages) + 1),
                 "output_tokens": 10}  # fmt: skip
        if isinstance(reply, str):
            return {"content": reply, "usage": usage}
        return {**reply, "usage": usage}

    return respond


def _windowed(builder: AgentBuilder, window: str) -> AgentBuilder:
    if window == "sliding_window":
        strategy = sliding_window(keep_recent_turns=WINDOW_KEEP_TURNS)
    else:
        strategy = token_budget(max_input_tokens=BUDGET_TOKENS, keep_recent_turns=WINDOW_KEEP_TURNS)
    return builder.window(strategy, keep_last_tool_results=WINDOW_KEEP_RESULTS)


def _tw_agent(turns: int, *, window: str | None = None) -> Agent:
    """The bench's trackway agent; ``window`` (a WINDOWS key) mounts a window strategy."""
    script: list[Any] = [
        {"tool_calls": [{"id": f"call_{i}", "name": TOOL_NAME, "args": {"key": f"k{i}"}}]}
        for i in range(turns)
    ]
    script.append(_answer(turns))
    # keep_requests=False: the scripted model keeps no request, as the peers' scripted models
    # keep none (each request holds the conversation: keeping all is O(turns²) memory)
    if window == "token_budget":
        provider = mock(respond=_usage_reporting(script), keep_requests=False)
    else:
        provider = mock(replies=script, keep_requests=False)
    builder = (
        Agent.create(provider=provider, model="scripted", max_iterations=turns + 1, stream=False)
        .system(SYSTEM)
        .tool(TW_TOOL)
    )
    if window is not None:
        builder = _windowed(builder, window)
    agent = builder.build()
    return agent


def _call_starts(agent: Agent, turns: int) -> list[float]:
    """When each model call began, from the record: the ``started_at`` of each ``call-llm``
    commit (the run pays for no listener to learn it)."""
    starts = [c.started_at for c in agent.snapshot().commits if c.stage_id == "call-llm"]
    assert len(starts) == turns + 1, len(starts)  # one per model call
    return starts


def tw_turns(turns: int) -> Runner:
    """A fresh agent per run (the mock's script is consumed); only ``run_sync`` is timed."""

    def run() -> Metrics:
        agent = _tw_agent(turns)
        t = clock()
        answer = agent.run_sync("go")
        total = clock() - t
        assert answer == _answer(turns) and agent.stopped_early() is None, answer
        stamps = _call_starts(agent, turns)
        with tempfile.TemporaryDirectory(prefix="bench_agent_") as tmp:
            size = save_recording(agent, Path(tmp) / "run.json").stat().st_size
        commits = agent.commit_count()
        return {
            **_per_turn(total, turns),
            **tenth_growth(stamps),
            "commits": commits,
            "commits_per_turn": commits / turns,
            "recording_bytes": size,
            "recording_bytes_per_turn": size / turns,
        }

    return run


# -- trackway, windowed ---------------------------------------------------------------------


def tw_window_turns(window: str) -> Callable[[int], Runner]:
    """``tw_turns`` with a window strategy mounted: the same timing, one factory per window."""

    def factory(turns: int) -> Runner:
        def run() -> Metrics:
            agent = _tw_agent(turns, window=window)
            t = clock()
            answer = agent.run_sync("go")
            total = clock() - t
            assert answer == _answer(turns) and agent.stopped_early() is None, answer
            stamps = _call_starts(agent, turns)
            commits = agent.commit_count()
            return {
                **_per_turn(total, turns),
                **tenth_growth(stamps),
                "commits": commits,
                "commits_per_turn": commits / turns,
            }

        return run

    return factory


def served_bytes(agent: Agent) -> list[int]:
    """Bytes served to each model call k (1-based): ``len(served_at(snap, k).canonical_json())``
    for every receipt, rebuilt from the finished run's log (never timed)."""
    snap = agent.snapshot()
    return [len(served_at(snap, k).canonical_json()) for k in range(1, len(receipts(snap)) + 1)]


def _mean(values: list[int]) -> float:
    return statistics.fmean(values) if values else float("nan")


def bytes_stats(sizes: list[int]) -> dict[str, Any]:
    """Served bytes over a run: mean over the first and last tenth of the calls, the max, and
    the WINDOW_BAND calls vs the last WINDOW_TAIL calls (``None`` when the run is too short
    for the two bands to be apart)."""
    n = len(sizes)
    k = max(1, n // 10)
    lo, hi = WINDOW_BAND
    out: dict[str, Any] = {
        "calls": n,
        "first_tenth_bytes": _mean(sizes[:k]),
        "last_tenth_bytes": _mean(sizes[-k:]),
        "max_bytes": max(sizes),
        "last_call_bytes": sizes[-1],
        "band_bytes": None,
        "tail_bytes": None,
        "band_growth": None,
    }
    if n >= hi + WINDOW_TAIL:
        band, tail = _mean(sizes[lo - 1 : hi]), _mean(sizes[-WINDOW_TAIL:])
        out.update(band_bytes=band, tail_bytes=tail, band_growth=tail / band)
    return out


def run_window(sizes: tuple[int, ...]) -> dict[str, Any]:
    """Each window strategy timed at every size like the trackway cells, then one more,
    untimed run per size (windowed and unwindowed) for the bytes served to each call."""
    rows: list[dict[str, Any]] = []
    per_call: dict[str, list[int]] = {}
    for turns in sizes:
        print(f"  windowed, {turns} turns ...", end="", flush=True)
        row: dict[str, Any] = {"turns": turns}
        for window in WINDOWS:
            cell = measure(tw_window_turns(window), turns, peer=False)
            agent = _tw_agent(turns, window=window)
            agent.run_sync("go")
            sizes_k = served_bytes(agent)
            assert len(sizes_k) == turns + 1, len(sizes_k)
            view = agent.snapshot().state.get("window_view") or {}
            cell.update(bytes_stats(sizes_k), dropped_messages=view.get("dropped_messages", 0))
            row[window] = cell
            per_call[window] = sizes_k
            print(f" {window}", end="", flush=True)
        agent = _tw_agent(turns)
        agent.run_sync("go")
        per_call["unwindowed"] = served_bytes(agent)
        row["unwindowed"] = bytes_stats(per_call["unwindowed"])
        rows.append(row)
        print(" done", flush=True)
    return {
        "config": {
            "windows": WINDOWS,
            "keep_recent_turns": WINDOW_KEEP_TURNS,
            "keep_last_tool_results": WINDOW_KEEP_RESULTS,
            "budget_max_input_tokens": BUDGET_TOKENS,
            "mock_tokens_per_message": TOKENS_PER_MESSAGE,
            "band_calls": WINDOW_BAND,
            "tail_calls": WINDOW_TAIL,
        },
        "results": rows,
        "growth": growth_rows(rows, [], names=list(WINDOWS)),
        "served_bytes_per_call": {"turns": sizes[-1], **per_call},
    }


# -- trackway with skills (the case lives in _agent_skills.py) ------------------------------


def run_skills(sizes: tuple[int, ...]) -> dict[str, Any]:
    """The skills case at each size, interleaved like the trackway cells (REPEATS rounds of
    TW_REPEATS / REPEATS runs per variant), then the profile of the extra time."""
    rounds = REPEATS
    per_round = max(1, TW_REPEATS // REPEATS) if REPEATS > 1 else 1
    section = skills_case.measure(sizes, rounds, per_round)
    print("  skills, profiling ...", end="", flush=True)
    section["stages"] = skills_case.stage_times(sizes[-1], SKILLS_PROFILE_RUNS)
    section["profile"] = skills_case.profile_delta(sizes[-1], REPO, runs=SKILLS_PROFILE_RUNS)
    print(" done", flush=True)
    section["config"] = {
        "skills": list(skills_case.SKILLS),
        "tools_per_skill": len(skills_case.TOOLS[skills_case.SKILLS[0]]),
        "top": skills_case.TOP,
        "calls": list(sizes),
        "rounds": rounds,
        "runs_per_round": per_round,
    }
    return section


def skills_targets(section: dict[str, Any]) -> list[dict[str, Any]]:
    rows = {row["calls"]: row for row in section["results"]}
    n = SKILLS_TARGET_CALLS if SKILLS_TARGET_CALLS in rows else max(rows)
    ratio = rows[n]["skills+choice"]["ratio"]
    targets = [
        {
            "target": f"skills+choice / plain, µs per turn of {n} tool calls",
            "measured": ratio,
            "threshold": f"≤ {TARGET_SKILLS_RATIO:g}",
            "pass": ratio <= TARGET_SKILLS_RATIO,
        }
    ]
    for n_other, row in sorted(rows.items()):
        if n_other != n:
            targets.append({"target": f"skills+choice / plain, µs per turn of {n_other} tool "
                            "calls", "measured": row["skills+choice"]["ratio"],
                            "threshold": "reported", "pass": None})  # fmt: skip
    g = next(g for g in section["growth"] if g["variant"] == "skills+choice")
    if len(g["marginal"]) > 1:
        first, last = g["marginal"][0], g["marginal"][-1]
        targets.append({"target": f"skills+choice marginal µs/call {last['from_calls']}→"
                        f"{last['to_calls']} / {first['from_calls']}→{first['to_calls']} calls",
                        "measured": g["growth"], "threshold": f"≤ {TARGET_SKILLS_GROWTH:g}",
                        "pass": g["growth"] <= TARGET_SKILLS_GROWTH})  # fmt: skip
    return targets


def print_skills(section: dict[str, Any]) -> None:
    rows = section["results"]
    print_table(
        "trackway with skills: µs per turn (one run_sync of n tool calls + the answer) and per "
        "model call, median of the runs; ratio = median over the rounds of the variant / plain. "
        "plain: 12 tools by .tool(); skills: the same tools in 3 skills, skill_scoped_tools, "
        "an instruction, a graph on rails, leases; skills+choice: + tool_choice(mock "
        f"classifier, serve top {skills_case.TOP})",
        ["calls", "variant", "µs/turn", "µs/call", "ratio", "tools served", "runs"],
        [[row["calls"], v, row[v]["us_per_turn"], row[v]["us_per_call"],
          "–" if v == "plain" else f"{row[v]['ratio']:.2f}×", row[v]["served_tools"],
          row[v]["repeats"]]
         for row in rows for v in skills_case.VARIANTS],
    )  # fmt: skip
    print_table(
        "trackway with skills: marginal µs per model call between sizes (the fixed cost of a "
        "run left out); growth = last step / first step",
        ["variant", *[f"{m['from_calls']}→{m['to_calls']}" for m in section["growth"][0]
                      ["marginal"]], "growth"],
        [[g["variant"], *[m["us_per_call"] for m in g["marginal"]], f"{g['growth']:.2f}"]
         for g in section["growth"]],
    )  # fmt: skip
    stages = section["stages"]
    names = list(dict.fromkeys(st for v in skills_case.VARIANTS for st in stages[v]["stages"]))
    n = section["profile"]["calls"]
    print_table(
        f"trackway with skills, per stage (no profiler): median µs from a stage's commit to the "
        f"next commit, over {SKILLS_PROFILE_RUNS} runs at {n} calls, for the stages that run "
        "once per model call",
        ["variant", *names, "sum", "commits/call"],
        [[v, *[stages[v]["stages"].get(st) for st in names],
          sum(stages[v]["stages"].values()), stages[v]["commits_per_call"]]
         for v in skills_case.VARIANTS],
    )  # fmt: skip
    prof = section["profile"]
    total = prof["profiled_us_per_call"]
    print_table(
        f"where skills+choice's extra time goes: cProfile of {prof['runs']} runs of each at "
        f"{prof['calls']} calls, functions by extra tottime per model call (profiled totals: "
        f"plain {total['plain']:,.0f} µs, skills+choice {total['skills+choice']:,.0f} µs per "
        "call; the profiler inflates small calls)",
        ["function", "extra µs/call", "calls/call plain", "calls/call skills"],
        [[r["function"], r["extra_us_per_call"], r["plain_calls_per_call"],
          r["skills_calls_per_call"]] for r in prof["top"]],
    )  # fmt: skip


SKILLS_NOTE = (
    "trackway with skills (benches/_agent_skills.py): three skills of four tools each; the "
    "plain agent has the same twelve tools by .tool(); skills declares them in the skills "
    "with skill_scoped_tools=True, an instruction (active from the second call), a graph on "
    "rails whose routes move the cursor on each skill's hand-off tool (which also leases the "
    "instruction to the next call), entry = the first skill; skills+choice adds "
    f".tool_choice(classifier=mock_classifier(fn), serve={{'top': {skills_case.TOP}}}), fn "
    "returning a ClassifyAnswer made once per skill. The same script for all: n tool calls "
    "split over the three skills, each segment ending with its hand-off, then the answer. "
    "An untimed run per size checks every call ran, the cursor reached the last skill, every "
    "skills+choice call was narrowed, and served_at matches every receipt."
)


# -- LangGraph ------------------------------------------------------------------------------


def lg_turns(turns: int) -> Runner:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool
    from langgraph.prebuilt import create_react_agent

    class ScriptedChat(BaseChatModel):
        """Hands out the next scripted message; O(1) per call (no history scan)."""

        script: Any  # an iterator of AIMessage (Any: pydantic leaves it alone)

        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                      **kwargs: Any) -> ChatResult:  # fmt: skip
            return ChatResult(generations=[ChatGeneration(message=next(self.script))])

    @tool(TOOL_NAME, description=TOOL_DOC)
    def lookup(key: str) -> str:
        return TOOL_RESULT

    def run() -> Metrics:
        script = [
            AIMessage(
                content="",
                tool_calls=[{"id": f"call_{i}", "name": TOOL_NAME, "args": {"key": f"k{i}"}}],
            )
            for i in range(turns)
        ]
        script.append(AIMessage(content=_answer(turns)))
        graph = create_react_agent(ScriptedChat(script=iter(script)), [lookup], prompt=SYSTEM)
        config = {"recursion_limit": 2 * turns + 10}
        t = clock()
        out = graph.invoke({"messages": [("user", "go")]}, config)
        total = clock() - t
        assert out["messages"][-1].content == _answer(turns)
        assert len(out["messages"]) == 2 * turns + 2
        return _per_turn(total, turns)

    return run


# -- pydantic-ai ----------------------------------------------------------------------------


def pai_turns(turns: int) -> Runner:
    from pydantic_ai import Agent as PaiAgent
    from pydantic_ai import UsageLimits
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def run() -> Metrics:
        calls = iter(range(turns + 1))

        def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
            i = next(calls)  # a counter, not a scan of the history
            if i < turns:
                part = ToolCallPart(TOOL_NAME, {"key": f"k{i}"}, tool_call_id=f"call_{i}")
                return ModelResponse(parts=[part])
            return ModelResponse(parts=[TextPart(_answer(turns))])

        agent = PaiAgent(FunctionModel(model), instructions=SYSTEM)

        @agent.tool_plain(name=TOOL_NAME, description=TOOL_DOC)
        def lookup(key: str) -> str:
            return TOOL_RESULT

        limits = UsageLimits(request_limit=turns + 5)
        t = clock()
        result = agent.run_sync("go", usage_limits=limits)
        total = clock() - t
        assert result.output == _answer(turns)
        return _per_turn(total, turns)

    return run


# -- OpenAI Agents SDK ----------------------------------------------------------------------


def oai_turns(turns: int) -> Runner:
    from agents import Agent as OaiAgent
    from agents import Runner as OaiRunner
    from agents import function_tool, set_tracing_disabled
    from agents.testing import ScriptedModel, assistant_message, function_call

    set_tracing_disabled(True)

    @function_tool(name_override=TOOL_NAME, description_override=TOOL_DOC)
    def lookup(key: str) -> str:
        return TOOL_RESULT

    def run() -> Metrics:
        steps: list[Any] = [
            [function_call(TOOL_NAME, {"key": f"k{i}"}, call_id=f"call_{i}")] for i in range(turns)
        ]
        steps.append([assistant_message(_answer(turns))])
        model = ScriptedModel(steps)
        agent = OaiAgent(name="agent", instructions=SYSTEM, model=model, tools=[lookup])
        t = clock()
        result = OaiRunner.run_sync(agent, "go", max_turns=turns + 5)
        total = clock() - t
        assert result.final_output == _answer(turns), result.final_output
        assert model.remaining_steps == 0
        return _per_turn(total, turns)

    return run


# -- driver ---------------------------------------------------------------------------------

PEERS: dict[str, tuple[str, str, Callable[[int], Runner]]] = {
    # key: (label, import probe, runner factory)
    "langgraph": ("LangGraph", "langgraph.prebuilt", lg_turns),
    "pydantic_ai": ("pydantic-ai", "pydantic_ai.models.function", pai_turns),
    "openai_agents": ("OpenAI Agents", "agents.testing", oai_turns),
}
PEER_DISTS = {
    "langgraph": ("langgraph", "langgraph-prebuilt", "langchain-core"),
    "pydantic_ai": ("pydantic-ai-slim",),
    "openai_agents": ("openai-agents",),
}


def _available(module: str) -> str | None:
    """``None`` when ``module`` imports, else why it does not."""
    try:
        __import__(module)
    except ImportError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def measure(factory: Callable[[int], Runner], turns: int, *, peer: bool) -> dict[str, Any]:
    """One untimed warm-up run at WARM_TURNS, then the median of REPEATS runs (TW_REPEATS
    for trackway's own cells, which cost milliseconds)."""
    factory(WARM_TURNS)()
    if not peer:
        return median_runs(factory(turns), TW_REPEATS if REPEATS > 1 else 1)
    return median_runs(factory(turns), REPEATS, adaptive_s=SLOW_RUN_S)


def _medians(samples: list[Mapping[str, float]]) -> dict[str, Any]:
    out: dict[str, Any] = {
        key: statistics.median(s[key] for s in samples) for key in samples[0] if key != "_"
    }
    out["repeats"] = len(samples)
    return out


def measure_row(turns: int, peers: list[str]) -> dict[str, Any]:
    """trackway and the peers at ``turns``, interleaved: each of REPEATS rounds runs
    trackway TW_REPEATS / REPEATS times, then every peer once, so a change in this VM's
    speed between rounds bills both sides of a ratio alike. A peer's ``ratio`` is the median
    over rounds of its run / that round's trackway median (a peer run slower than
    SLOW_RUN_S is not repeated: its one ratio is against the first round)."""
    runners = {"trackway": tw_turns(turns), **{name: PEERS[name][2](turns) for name in peers}}
    tw_turns(WARM_TURNS)()
    for name in peers:
        PEERS[name][2](WARM_TURNS)()
    rounds = REPEATS
    per_round = max(1, TW_REPEATS // REPEATS) if REPEATS > 1 else 1
    samples: dict[str, list[Mapping[str, float]]] = {name: [] for name in runners}
    ratios: dict[str, list[float]] = {name: [] for name in peers}
    done: set[str] = set()
    for _ in range(rounds):
        ours = []
        for _ in range(per_round):
            fresh_heap()
            ours.append(runners["trackway"]())
        samples["trackway"] += ours
        base = statistics.median(s["us_per_turn"] for s in ours)
        for name in peers:
            if name in done:
                continue
            fresh_heap()
            got = runners[name]()
            samples[name].append(got)
            ratios[name].append(got["us_per_turn"] / base)
            if got.get("total_s", 0.0) > SLOW_RUN_S:
                done.add(name)
    row: dict[str, Any] = {"turns": turns}
    for name, kept in samples.items():
        row[name] = _medians(kept)
    for name in peers:
        row[name]["ratio"] = statistics.median(ratios[name])
    return row


def run_cells(peers: list[str], sizes: tuple[int, ...]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for turns in sizes:
        print(f"  {turns} turns ...", end="", flush=True)
        rows.append(measure_row(turns, peers))
        print(" done", flush=True)
    return rows


def growth_rows(
    rows: list[dict[str, Any]], peers: list[str], *, names: list[str] | None = None
) -> list[dict[str, Any]]:
    """Per framework (or ``names``, the cell keys): µs/turn at the smallest and largest size,
    their ratio, and the marginal µs per turn between the two largest sizes (fixed per-run
    cost left out)."""
    first, last = rows[0], rows[-1]
    prev = rows[-2] if len(rows) > 1 else rows[0]
    out = []
    for name in ["trackway", *peers] if names is None else names:
        a, b, p = first[name], last[name], prev[name]
        span = last["turns"] - prev["turns"]
        marginal = (b["total_s"] - p["total_s"]) / span * 1e6 if span else None
        out.append(
            {
                "framework": name,
                "from_turns": first["turns"],
                "to_turns": last["turns"],
                "us_per_turn_from": a["us_per_turn"],
                "us_per_turn_to": b["us_per_turn"],
                "growth": b["us_per_turn"] / a["us_per_turn"],
                "marginal_from_turns": prev["turns"],
                "marginal_us_per_turn": marginal,
            }
        )
    return out


def check_targets(
    rows: list[dict[str, Any]],
    growth: list[dict[str, Any]],
    peers: list[str],
    window: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The targets; ``pass`` is ``None`` on a row that is only reported."""
    targets: list[dict[str, Any]] = []

    def target(name: str, measured: float, threshold: str, ok: bool | None) -> None:
        targets.append({"target": name, "measured": measured, "threshold": threshold, "pass": ok})

    last = rows[-1]
    n = last["turns"]
    us = last["trackway"]["us_per_turn"]
    target(f"trackway µs/turn, {n} turns", us, f"≤ {TARGET_US_PER_TURN:g}",
           us <= TARGET_US_PER_TURN)  # fmt: skip
    g = growth[0]
    target(f"trackway growth µs/turn {g['from_turns']}→{g['to_turns']} turns", g["growth"],
           f"≤ {TARGET_GROWTH:g}", g["growth"] <= TARGET_GROWTH)  # fmt: skip
    for name in peers:
        r = last[name]["ratio"]
        target(f"{PEERS[name][0]}/trackway per turn, {n} turns", r, f"≥ {TARGET_VS_PEER:g}×",
               r >= TARGET_VS_PEER)  # fmt: skip
    if window is not None:
        wrow = window["results"][-1]["sliding_window"]
        lo, hi = WINDOW_BAND
        bg = wrow["band_growth"]
        if bg is not None:
            target(f"windowed served bytes, {n} turns: last {WINDOW_TAIL} calls / calls "
                   f"{lo}–{hi}", bg, f"≤ {TARGET_WINDOW_BYTES_GROWTH:g}",
                   bg <= TARGET_WINDOW_BYTES_GROWTH)  # fmt: skip
        w = next(g for g in window["growth"] if g["framework"] == "sliding_window")
        target(f"windowed growth µs/turn {w['from_turns']}→{w['to_turns']} turns", w["growth"],
               f"≤ {TARGET_WINDOW_GROWTH:g}", w["growth"] <= TARGET_WINDOW_GROWTH)  # fmt: skip
        if w["marginal_us_per_turn"] is not None:
            target(f"windowed marginal µs/turn {w['marginal_from_turns']}→{w['to_turns']} turns",
                   w["marginal_us_per_turn"], "reported", None)  # fmt: skip
    return targets


_AREAS = (
    ("/trackway/engine/", "trackway engine"),
    ("/trackway/agent/", "trackway agent"),
    ("/trackway/tools/", "trackway tools"),
    ("/site-packages/pydantic", "pydantic"),
    ("/site-packages/jsonschema", "jsonschema (+referencing, rpds)"),
    ("/site-packages/referencing", "jsonschema (+referencing, rpds)"),
    ("/site-packages/rpds", "jsonschema (+referencing, rpds)"),
    ("/site-packages/anyio", "anyio / asyncio"),
    ("/asyncio/", "anyio / asyncio"),
)


def _where(path: str) -> tuple[str, str]:
    """(area, short path) of a profiled function's file: which part of the stack it is in."""
    p = path.replace("\\", "/")
    if p.startswith(("~", "<")):
        return "builtins / C (orjson, hashlib, ...)", p
    if "/trackway/" not in p and os.path.isdir(os.path.join(REPO, "engine")):
        p = p.replace(REPO + "/", "/trackway/")  # a plain source checkout on sys.path
    short = p.rsplit("/trackway/", 1)[-1] if "/trackway/" in p else p
    short = short.rsplit("/site-packages/", 1)[-1]
    for marker, area in _AREAS:
        if marker in p:
            return area, short
    return "other Python", short


def profile_run(turns: int) -> dict[str, Any]:
    """cProfile one trackway run at ``turns``: top functions by tottime, and tottime by area."""
    tw_turns(WARM_TURNS)()
    agent = _tw_agent(turns)
    raw = profile_call(lambda: agent.run_sync("go"))
    total = sum(tt for (_cc, _nc, tt, _ct, _callers) in raw.values())
    rows = [
        {
            "function": f"{_where(file)[1]}:{line}({func})",
            "area": _where(file)[0],
            "ncalls": nc,
            "per_turn": nc / turns,
            "tottime_s": tt,
            "cumtime_s": ct,
        }
        for (file, line, func), (_cc, nc, tt, ct, _callers) in raw.items()
    ]
    rows.sort(key=lambda r: r["tottime_s"], reverse=True)
    areas: dict[str, float] = {}
    for r in rows:
        areas[r["area"]] = areas.get(r["area"], 0.0) + r["tottime_s"]
    return {
        "turns": turns,
        "total_tottime_s": total,
        "top": rows[:PROFILE_TOP],
        "by_area": [
            {"area": k, "tottime_s": v, "share": v / total}
            for k, v in sorted(areas.items(), key=lambda kv: kv[1], reverse=True)
        ],
    }


def _blocks(turns: int) -> dict[str, float]:
    """Memory blocks of one run at ``turns`` (a fresh agent, kept alive after the run):
    ``blocks`` = ``sys.getallocatedblocks()`` after − before with the cyclic GC off during
    the run (blocks allocated and not freed by reference counting: the record, caches and any
    cyclic garbage); ``retained``/``peak_kib`` from tracemalloc in a second run (blocks still
    alive after a full collection, and the peak traced size)."""
    agent = _tw_agent(turns)
    fresh_heap()
    gc.disable()
    try:
        before = sys.getallocatedblocks()
        agent.run_sync("go")
        blocks = sys.getallocatedblocks() - before
    finally:
        gc.enable()
    again = _tw_agent(turns)
    fresh_heap()
    tracemalloc.start()
    try:
        start = tracemalloc.take_snapshot()
        again.run_sync("go")
        fresh_heap()
        end = tracemalloc.take_snapshot()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    retained = sum(d.count_diff for d in end.compare_to(start, "filename"))
    del agent, again
    return {"blocks": blocks, "retained_blocks": retained, "peak_kib": peak / 1024}


def allocations() -> dict[str, Any]:
    """Blocks per turn: the difference between runs at ALLOC_TURNS over the turns between
    them, so the fixed cost of a run (event loop, setup stages) is left out."""
    tw_turns(WARM_TURNS)()
    lo, hi = ALLOC_TURNS
    a, b = _blocks(lo), _blocks(hi)
    span = hi - lo
    return {
        "method": "sys.getallocatedblocks() delta over a run with gc disabled, and tracemalloc "
        "snapshot count_diff after gc.collect(); per turn = (value at "
        f"{hi} turns - value at {lo}) / {span}",
        "runs": {str(lo): a, str(hi): b},
        "blocks_per_turn": (b["blocks"] - a["blocks"]) / span,
        "retained_blocks_per_turn": (b["retained_blocks"] - a["retained_blocks"]) / span,
        "peak_kib_per_turn": (b["peak_kib"] - a["peak_kib"]) / span,
    }


def _stack(frame: Any) -> str:
    names = []
    while frame is not None:
        code = frame.f_code
        names.append(f"{code.co_name} ({_where(code.co_filename)[1]}:{code.co_firstlineno})")
        frame = frame.f_back
    return ";".join(reversed(names))


def sampled_stacks(turns: int, runs: int = 20, interval: float = 0.0005) -> dict[str, int]:
    """A flame graph's input without any extra tool: a thread samples the main thread's stack
    every ``interval`` seconds over ``runs`` runs at ``turns``; collapsed stacks (the format
    of flamegraph.pl, speedscope and py-spy's raw output) with their sample counts."""
    import threading

    main = threading.main_thread().ident
    counts: dict[str, int] = {}
    done = threading.Event()

    def sample() -> None:
        frames = sys._current_frames
        while not done.wait(interval):
            frame = frames().get(main)  # type: ignore[arg-type]
            if frame is not None:
                key = _stack(frame)
                counts[key] = counts.get(key, 0) + 1

    agents = [_tw_agent(turns) for _ in range(runs)]
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        for agent in agents:
            agent.run_sync("go")
    finally:
        done.set()
        sampler.join()
    return counts


def write_profile_files(turns: int) -> dict[str, str]:
    """cProfile of one run at ``turns`` as pstats text (top by tottime and cumulative) and a
    ``.prof`` file (snakeviz, flameprof), plus sampled collapsed stacks (``.folded``) for a
    flame graph (e.g. ``flamegraph.pl benches/results/bench_agent.folded > flame.svg``, or
    drop it on speedscope.app). Written to benches/results/."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    agent = _tw_agent(turns)
    fresh_heap()
    prof = cProfile.Profile()
    prof.enable()
    agent.run_sync("go")
    prof.disable()
    binary = RESULTS_DIR / "bench_agent.prof"
    prof.dump_stats(binary)
    text = io.StringIO()
    stats = pstats.Stats(prof, stream=text)
    text.write(f"cProfile, trackway agent at {turns} turns (one run)\n")
    stats.sort_stats("tottime").print_stats(40)
    stats.sort_stats("cumulative").print_stats(60)
    report = RESULTS_DIR / "bench_agent_profile.txt"
    report.write_text(text.getvalue().replace(REPO + "/", ""), encoding="utf-8")
    folded = RESULTS_DIR / "bench_agent.folded"
    stacks = sampled_stacks(turns)
    folded.write_text("".join(f"{k} {v}\n" for k, v in sorted(stacks.items())), encoding="utf-8")
    return {"pstats_text": str(report), "pstats": str(binary), "folded_stacks": str(folded)}


def _cell(cell: dict[str, Any] | None, key: str, digits: int = 1) -> str | None:
    if cell is None:
        return None
    mark = "*" if cell["repeats"] < REPEATS else ""
    return f"{cell[key]:,.{digits}f}{mark}"


def print_window(window: dict[str, Any], growth: list[dict[str, Any]]) -> None:
    """The windowed trackway tables: per size and strategy, then growth and served bytes."""
    rows = window["results"]
    print_table(
        f"trackway windowed (window(..., keep_last_tool_results={WINDOW_KEEP_RESULTS})): µs per "
        f"turn as in the trackway detail (median of {REPEATS}), and bytes served per call "
        "(len(served_at(snapshot, k).canonical_json()), mean over the first / last tenth of "
        "the calls, and the max); unwind. = the same run without a window",
        ["window", "turns", "µs/turn", "first 10% µs", "last 10% µs", "growth", "growth med",
         "commits/turn", "served B first 10%", "served B last 10%", "served B max",
         "unwind. B last 10%", "dropped msgs"],
        [[w, row["turns"], row[w]["us_per_turn"], row[w]["first_tenth_us"],
          row[w]["last_tenth_us"], f"{row[w]['growth']:.2f}",
          f"{row[w]['growth_median']:.2f}", f"{row[w]['commits_per_turn']:.2f}",
          row[w]["first_tenth_bytes"],
          row[w]["last_tenth_bytes"], row[w]["max_bytes"], row["unwindowed"]["last_tenth_bytes"],
          int(row[w]["dropped_messages"])]
         for w in WINDOWS for row in rows],
    )  # fmt: skip
    last = rows[-1]
    lo, hi = WINDOW_BAND
    band = {"trackway": last["unwindowed"], **{w: last[w] for w in WINDOWS}}

    def ratio(x: float | None) -> str | None:
        return None if x is None else f"{x:.2f}"

    g0 = window["growth"][0]
    print_table(
        f"trackway windowed growth: µs/turn at {g0['to_turns']} turns / at {g0['from_turns']}, "
        f"marginal µs/turn {g0['marginal_from_turns']}→{g0['to_turns']}, and served bytes at "
        f"{last['turns']} turns, mean of the last {WINDOW_TAIL} calls / mean of calls "
        f"{lo}–{hi} (trackway = unwindowed, from the tables above)",
        ["agent", f"µs/turn @{g0['from_turns']}", f"µs/turn @{g0['to_turns']}", "growth",
         "marginal µs/turn", f"served B calls {lo}–{hi}", f"served B last {WINDOW_TAIL}",
         "bytes growth"],
        [[g["framework"], g["us_per_turn_from"], g["us_per_turn_to"], f"{g['growth']:.2f}",
          g["marginal_us_per_turn"], band[g["framework"]]["band_bytes"],
          band[g["framework"]]["tail_bytes"], ratio(band[g["framework"]]["band_growth"])]
         for g in [growth[0], *window["growth"]]],
    )  # fmt: skip


def print_report(
    rows: list[dict[str, Any]],
    growth: list[dict[str, Any]],
    targets: list[dict[str, Any]],
    peers: list[str],
    window: dict[str, Any] | None = None,
) -> None:
    headers = ["turns", "trackway µs"]
    for name in peers:
        label = PEERS[name][0]
        headers += [f"{label} µs", f"{label}/tw"]
    table = []
    for row in rows:
        line: list[Any] = [row["turns"], row["trackway"]["us_per_turn"]]
        for name in peers:
            line += [_cell(row[name], "us_per_turn"), f"{row[name]['ratio']:,.1f}×"]
        table.append(line)
    print_table(
        f"µs per tool turn (run time / turns; median of the runs, * = one run). "
        f"peer/tw = median over {REPEATS} interleaved rounds of peer time / trackway time",
        headers,
        table,
    )
    print_table(
        "trackway detail: per-turn time early vs late in the run (from the started_at of each "
        "call-llm commit; growth = last tenth / first tenth, med = by median interval), commits "
        "and recording bytes",
        ["turns", "total ms", "µs/turn", "first 10% µs", "last 10% µs", "growth", "growth med",
         "commits", "commits/turn", "rec. bytes/turn"],
        [[row["turns"], row["trackway"]["total_s"] * 1e3, row["trackway"]["us_per_turn"],
          row["trackway"]["first_tenth_us"], row["trackway"]["last_tenth_us"],
          f"{row['trackway']['growth']:.2f}", f"{row['trackway']['growth_median']:.2f}",
          int(row["trackway"]["commits"]), f"{row['trackway']['commits_per_turn']:.2f}",
          row["trackway"]["recording_bytes_per_turn"]]
         for row in rows],
    )  # fmt: skip
    label = {"trackway": "trackway", **{k: v[0] for k, v in PEERS.items()}}
    g0 = growth[0]
    print_table(
        f"Growth: µs/turn at {g0['to_turns']} turns / at {g0['from_turns']}; marginal = "
        f"(total at {g0['to_turns']} − total at {g0['marginal_from_turns']}) / "
        f"{g0['to_turns'] - g0['marginal_from_turns']} turns",
        ["framework", f"µs/turn @{g0['from_turns']}", f"µs/turn @{g0['to_turns']}", "growth",
         "marginal µs/turn"],
        [[label[g["framework"]], g["us_per_turn_from"], g["us_per_turn_to"],
          f"{g['growth']:.2f}", g["marginal_us_per_turn"]] for g in growth],
    )  # fmt: skip
    if window is not None:
        print_window(window, growth)
    print_targets(targets)


def print_allocations(alloc: dict[str, Any]) -> None:
    print_table(
        f"trackway allocations per tool turn ({alloc['method']})",
        ["blocks/turn (gc off)", "retained blocks/turn", "peak KiB/turn"],
        [[alloc["blocks_per_turn"], alloc["retained_blocks_per_turn"],
          alloc["peak_kib_per_turn"]]],
    )  # fmt: skip


def print_profile(prof: dict[str, Any]) -> None:
    n = prof["turns"]
    print_table(
        f"cProfile, trackway at {n} turns: top {PROFILE_TOP} by tottime "
        f"(profiled total {prof['total_tottime_s'] * 1e3:,.1f} ms)",
        ["function", "ncalls", "calls/turn", "tottime ms", "cumtime ms"],
        [[r["function"], r["ncalls"], r["per_turn"], r["tottime_s"] * 1e3, r["cumtime_s"] * 1e3]
         for r in prof["top"]],
    )  # fmt: skip
    print_table(
        "cProfile tottime by area",
        ["area", "tottime ms", "share %"],
        [[a["area"], a["tottime_s"] * 1e3, a["share"] * 100] for a in prof["by_area"]],
    )


def main() -> int:
    global REPEATS
    ap = argparse.ArgumentParser(description="trackway agent benchmarks")
    ap.add_argument("--no-peers", action="store_true", help="trackway only")
    ap.add_argument("--quick", action="store_true", help="10 and 50 turns, one repeat")
    ap.add_argument("--profile", action="store_true", help="(kept for scripts: always on)")
    ap.add_argument(
        "--only",
        choices=[
            "skills",
            "memory",
            "middleware",
            "explain",
            "evidence",
            "validation",
            "artifacts",
            "time",
            "fixed",
            "events",
            "ontology",
            "window_facts",
            "findings",
        ],
        help="run one case alone; it writes results/bench_agent_<case>.json (the full run's "
        "bench_agent.json is left as is)",
    )
    args = ap.parse_args()

    sizes = TURNS
    skill_sizes = skills_case.CALLS
    if args.quick:
        REPEATS, sizes, skill_sizes = 1, (10, 50), skill_sizes[:2]
    if args.only == "skills":
        return skills_only(skill_sizes)
    if args.only == "artifacts":
        return artifacts_only()
    if args.only == "memory":
        return memory_only()
    if args.only == "explain":
        return explain_case.only(args.quick)
    if args.only == "evidence":
        return evidence_case.main(args.quick)
    if args.only == "middleware":
        return middleware_only(middleware_case.CALLS[:2] if args.quick else middleware_case.CALLS)
    if args.only == "validation":
        return validation_only(args.quick)
    if args.only == "time":
        return time_only(time_case.CALLS[:2] if args.quick else time_case.CALLS)
    if args.only == "fixed":
        return fixed_only(args.quick)
    if args.only == "events":
        return events_only(events_case.CALLS[:2] if args.quick else events_case.CALLS)
    if args.only == "ontology":
        sizes = ontology_case.CALLS[:2] if args.quick else ontology_case.CALLS
        title = "trackway with .ontology(): CPU µs per turn, against none"
        return variant_only("ontology", ontology_case, sizes, title)
    if args.only == "window_facts":
        return window_facts_only(args.quick)
    if args.only == "findings":
        return findings_only(findings_case.CALLS[:2] if args.quick else findings_case.CALLS)

    peers: list[str] = []
    notes: list[str] = []
    if not args.no_peers:
        for name, (label, probe, _factory) in PEERS.items():
            why = _available(probe)
            if why is None:
                peers.append(name)
            else:
                notes.append(f"{label} is skipped: `import {probe}` failed ({why}).")

    print(f"bench_agent: each cell is the median of {REPEATS} runs unless marked", flush=True)
    rows = run_cells(peers, sizes)
    window = run_window(sizes)
    skills = run_skills(skill_sizes)
    memory = memory_case.measure()
    growth = growth_rows(rows, peers)
    alloc = allocations()
    targets = check_targets(rows, growth, peers, window)
    targets += skills_targets(skills)
    targets += memory_case.targets(memory)
    targets.append({"target": "trackway memory blocks per tool turn (gc off)",
                    "measured": alloc["blocks_per_turn"], "threshold": "reported",
                    "pass": None})  # fmt: skip
    print_skills(skills)
    print_memory(memory)
    print_report(rows, growth, targets, peers, window)
    print_allocations(alloc)

    prof = profile_run(sizes[-1])  # always: the report says where the time goes
    print_profile(prof)
    files = write_profile_files(sizes[-1])
    print("\nprofile files: " + ", ".join(files.values()))

    notes += [
        "A turn = one scripted model call returning one tool call + that tool's execution; "
        "the last reply is the final answer (so N turns = N + 1 model calls). Every framework "
        f"gets the same system prompt and one tool `{TOOL_NAME}(key: str) -> {TOOL_RESULT!r}`.",
        "Times are wall clock around the run call only (agent, script and tool built "
        "beforehand; a fresh agent per run). Each size: one untimed warm-up run at "
        f"{WARM_TURNS} turns per framework, then {REPEATS} interleaved rounds, gc.collect() "
        f"before each run: a round runs trackway {max(1, TW_REPEATS // REPEATS)} times (its "
        "runs take milliseconds) and every peer once. A cell is the median over its runs; "
        "peer/tw is the median over rounds of the peer's run / that round's trackway median, "
        "so both sides of a ratio run in the same minute (this VM's speed drifts by ±40% over "
        "minutes).",
        f"* = one run only: a peer run slower than {SLOW_RUN_S:g} s is not repeated.",
        f"The {sizes[0]}-turn cells carry each framework's fixed cost per run (event loop "
        "start, setup stages or nodes, the final answer), so growth by µs/turn can read below "
        "1; trackway's first/last-tenth growth and the marginal column show how the cost of a "
        "turn itself changes as the history grows.",
        "trackway: Agent.create(provider=mock(replies=..., keep_requests=False), "
        "max_iterations=turns + 1, "
        "stream=False), run_sync (a fresh anyio event loop per run). The turn timestamps are "
        "read from the record after the run (each call-llm commit's started_at): no listener "
        "runs during the timed run (one on agent.iteration_start cost ~4 µs a turn).",
        "LangGraph: langgraph.prebuilt.create_react_agent, no checkpointer, a BaseChatModel "
        "subclass handing out scripted AIMessages (bind_tools returns itself), @tool.",
        "pydantic-ai: Agent(FunctionModel(fn)), fn counts calls (no history scan), "
        "@agent.tool_plain; run_sync.",
        "OpenAI Agents SDK: agents.testing.ScriptedModel (it records every call it receives), "
        "@function_tool, Runner.run_sync, tracing disabled.",
        "trackway windowed: the same agent and script with .window(strategy, "
        f"keep_last_tool_results={WINDOW_KEEP_RESULTS}) before build(), strategy "
        + " or ".join(WINDOWS.values())
        + "; timed like the trackway cells. For token_budget (which acts on reported usage "
        "only) the mock answers through respond= and reports input_tokens = "
        f"{TOKENS_PER_MESSAGE} × (served messages + 1), an O(1) count inside the timed run.",
        "Served bytes: after a separate, untimed run per size and agent (the runs are "
        "deterministic), len(trackway.agent.served_at(agent.snapshot(), k).canonical_json()) "
        "for every model call k (one per receipt): the exact request of call k rebuilt from "
        "the log, as canonical JSON (sorted keys, no whitespace). first/last 10% = mean over "
        "the first/last tenth of the calls; the window fills within the first "
        f"{WINDOW_KEEP_TURNS + 2} calls, so the bytes target compares calls "
        f"{WINDOW_BAND[0]}–{WINDOW_BAND[1]} with the last {WINDOW_TAIL} calls (skipped when "
        f"a run has fewer than {WINDOW_BAND[1] + WINDOW_TAIL} calls). Per-call bytes at the "
        "largest size are in the JSON (window.served_bytes_per_call).",
        SKILLS_NOTE,
        memory_case.NOTE,
    ]
    for note in notes:
        print(f"- {note}")

    versions = {"trackway": dist_version("trackway"), "orjson": dist_version("orjson")}
    for name in peers:
        for dist in PEER_DISTS[name]:
            versions[dist] = dist_version(dist)
    payload: dict[str, Any] = {
        "versions": versions,
        "config": {
            "repeats": REPEATS,
            "turns": sizes,
            "warm_turns": WARM_TURNS,
            "slow_run_s": SLOW_RUN_S,
            "quick": args.quick,
            "peers": peers,
        },
        "results": rows,
        "growth": growth,
        "targets": targets,
        "notes": notes,
        "window": window,
        "skills": skills,
        "memory": memory,
    }
    payload["profile"] = {**prof, "files": files}
    payload["allocations"] = alloc
    path = write_json("bench_agent", payload)
    print(f"\nwrote {path}")
    return 0


def written_case(key: str, section: dict[str, Any], targets: Any, note: str) -> int:
    """Print the targets and note of an ``--only`` case and write it to
    ``results/bench_agent_<key>.json`` (the full run's ``bench_agent.json`` is left as is)."""
    print_targets(targets)
    print(f"- {note}")
    versions = {"trackway": dist_version("trackway"), "orjson": dist_version("orjson")}
    doc = {"versions": versions, key: section, "targets": targets, "notes": [note]}
    path = write_json(f"bench_agent_{key}", doc)
    print(f"\nwrote {path}")
    return 0


def skills_only(sizes: tuple[int, ...]) -> int:
    """``--only skills``: the skills case alone, its tables and targets, written to
    ``results/bench_agent_skills.json`` (the full run's ``bench_agent.json`` is left as is)."""
    runs = TW_REPEATS if REPEATS > 1 else 1
    print(f"bench_agent --only skills: each cell is the median of {runs} runs", flush=True)
    skills = run_skills(sizes)
    targets = skills_targets(skills)
    print_skills(skills)
    return written_case("skills", skills, targets, SKILLS_NOTE)


def print_memory(section: dict[str, Any]) -> None:
    """The memory case's table and the query plans of its reads."""
    print_table(
        "trackway memory: what recalling costs with N remembered turns in a SQLite store (medians)",
        memory_case.HEADERS,
        memory_case.rows_for_table(section),
    )
    largest = section["rows"][-1]
    print(f"\nEXPLAIN QUERY PLAN at {largest['turns']:,} turns:")
    for name, plan in largest["plan"].items():
        print(f"  {name}: {' | '.join(plan)}")


def artifacts_only() -> int:
    """``--only artifacts``: placement and redemption per call, written to
    ``results/bench_agent_artifacts.json``."""
    print("bench_agent --only artifacts", flush=True)
    section = artifacts_case.measure()
    print_targets_table = [[k, round(v, 1)] for k, v in section.items() if k.endswith("_us")]
    print_table("trackway artifacts: tool-calls stage µs", ["case", "µs"], print_targets_table)
    return written_case("artifacts", section, artifacts_case.targets(section), artifacts_case.NOTE)


def memory_only() -> int:
    """``--only memory``: the memory case alone, written to ``results/bench_agent_memory.json``
    (the full run's ``bench_agent.json`` is left as is)."""
    print("bench_agent --only memory", flush=True)
    memory = memory_case.measure()
    targets = memory_case.targets(memory)
    print_memory(memory)
    return written_case("memory", memory, targets, memory_case.NOTE)


def variant_only(name: str, case: Any, sizes: tuple[int, ...], title: str) -> int:
    """``--only <name>``: the case's variants against none, per turn, written to
    ``results/bench_agent_<name>.json``."""
    rounds = REPEATS * 3 if REPEATS > 1 else 1
    per_round = TW_REPEATS if REPEATS > 1 else 1
    print(f"bench_agent --only {name}: {rounds} rounds of {per_round} runs a cell", flush=True)
    section = case.measure(sizes, rounds, per_round)
    targets = case.targets(section)
    headers, rows = case.table(section)
    print_table(title, headers, rows)
    return written_case(name, section, targets, case.NOTE)


def middleware_only(sizes: tuple[int, ...]) -> int:
    """``--only middleware``: an empty middleware chain against none, per turn."""
    title = "trackway with middleware: CPU µs per turn, links that pass vs none"
    return variant_only("middleware", middleware_case, sizes, title)


def time_only(sizes: tuple[int, ...]) -> int:
    """``--only time``: ``.time()`` against none, per turn."""
    title = "trackway with .time(): CPU µs per turn, against none"
    return variant_only("time", time_case, sizes, title)


def fixed_only(quick: bool) -> int:
    """``--only fixed``: a run's fixed cost (one model call, no tools), trackway awaited and
    through ``run_sync`` beside LangGraph and pydantic-ai."""
    print("bench_agent --only fixed", flush=True)
    section = fixed_case.measure(quick)
    headers, rows = fixed_case.table(section)
    print_table("a run's fixed cost: one model call, no tools (agent built once)", headers, rows)
    return written_case("fixed", section, fixed_case.targets(section), fixed_case.NOTE)


def events_only(sizes: tuple[int, ...]) -> int:
    """``--only events``: listeners on every event (and the tests-only audit) against
    none, per turn and per call; the registry is never read by an emit."""
    title = "trackway events: CPU µs per turn, a listener on '*' (and the audit) vs none"
    return variant_only("events", events_case, sizes, title)


def findings_only(sizes: tuple[int, ...]) -> int:
    """``--only findings``: the ledger piece's composition per call, and the armed agent
    against one whose recording predates the piece, per turn."""
    rounds = REPEATS * 3 if REPEATS > 1 else 1
    per_round = TW_REPEATS if REPEATS > 1 else 1
    print(f"bench_agent --only findings: {rounds} rounds of {per_round} runs a cell", flush=True)
    section = findings_case.measure(sizes, rounds, per_round)
    headers, rows = findings_case.composition_table(section)
    print_table("trackway .findings() piece: composition CPU µs per call (medians)", headers, rows)
    headers, rows = findings_case.table(section)
    print_table("trackway .findings(): CPU µs per turn, piece vs none", headers, rows)
    return written_case("findings", section, findings_case.targets(section), findings_case.NOTE)


def validation_only(quick: bool) -> int:
    """``--only validation``: answer validation per turn and at answer time, and the fold,
    written to ``results/bench_agent_validation.json``."""
    rounds, per_round = (1, 1) if quick else (REPEATS * 3, TW_REPEATS)
    calls, sizes = (
        (validation_case.CALLS[:2], validation_case.SIZES[:2])
        if quick
        else (
            validation_case.CALLS,
            validation_case.SIZES,
        )
    )
    print(f"bench_agent --only validation: {rounds} rounds of {per_round} runs a cell", flush=True)
    section = validation_case.measure(calls, sizes, rounds, per_round)
    targets = validation_case.targets(section)
    for title, headers, rows in validation_case.tables(section):
        print_table(title, headers, rows)
    return written_case("validation", section, targets, validation_case.NOTE)


def window_facts_only(quick: bool) -> int:
    """``--only window_facts``: what the ledger-fact hold keeps (the seed's 2 / 6 / 8) and its
    per-call cost against none, written to ``results/bench_agent_window_facts.json``."""
    rounds, per_round = (1, 1) if quick else (REPEATS * 3, TW_REPEATS)
    sizes = window_facts_case.CALLS[:2] if quick else window_facts_case.CALLS
    print(f"bench_agent --only window_facts: {rounds} rounds of {per_round} runs", flush=True)
    section = window_facts_case.measure(sizes, rounds, per_round)
    for title, headers, rows in window_facts_case.tables(section):
        print_table(title, headers, rows)
    targets = window_facts_case.targets(section)
    return written_case("window_facts", section, targets, window_facts_case.NOTE)


if __name__ == "__main__":
    sys.exit(main())
