"""The agent a replay runs as: configured from what its recording committed (settings, system
prompt, tool specs, argument rules, who asks people), with code it cannot rerun (gates, tool
providers) replaced by the decisions the recording kept."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from trackway.engine import Snapshot, thaw
from trackway.tools import define_tool

from ..artifacts._building import replay_artifacts
from ..context._cost import budget_option
from ..context._window import WindowPlan, WindowVisit
from ..explain._building import replay_self_explain
from ..messages._errors import ReplayDivergence
from ..ontology._replaying import replay_ontology
from ..providers._mock import MockProvider
from ..providers.thinking import recorded_handler
from ..runtime._agent import Agent
from ..time._replaying import replay_time
from ._replay_findings import replay_findings
from ._replay_memory import recorded_memories, replay_memory
from ._replay_middleware import replay_middleware
from ._replay_skills import apply_recorded_skills, skill_tool_names, unserved_spec
from ._replay_typed import recorded_options, recorded_output, refuse_typed
from ._replay_validation import replay_validation

__all__ = [
    "RecordedOffers",
    "RecordedWindow",
    "agent_from_recording",
    "recorded_gate",
    "recorded_offers",
    "replay_ledger_facts",
]


def agent_from_recording(snap: Snapshot) -> Agent:
    """An agent configured from what its recording committed."""
    from ..runtime._builder import AgentBuilder

    if not any(c.frame == "" and c.stage_id == "seed" for c in snap.history()):
        raise ReplayDivergence(
            f"this recording ({snap.chart_id!r}) is not of one agent: replay it with the runner "
            "that made it, replay(record, runner); the calls of agents mounted in a chart are "
            "checked with receipts(record) and served_at(record, k)",
            stage_path="",
            key=None,
        )
    writes: dict[str, Any] = {}
    seen: dict[str, dict[str, Any]] = {}
    judged_at = None  # the first stage that wrote of the output schema's verdicts
    # the wrap-up setting, for a recording that does not hold it in settings: it shows once
    # a run reaches its iteration limit
    wrapped = True
    for c in snap.history():
        if c.frame == "" and c.stage_id == "wrap-up":
            wrapped = True
            break
        for op in c.ops if c.frame == "" else ():
            if op.key == "stopped_early" and op.value is not None:
                early = thaw(op.value)
                if early.get("reason") == "max-iterations":
                    wrapped = bool(early.get("wrapped_up", True))
    for c in snap.history():
        if c.frame == "" and c.stage_id == "offer":
            for op in c.ops:
                if op.key == "tools":
                    for spec in thaw(op.value):
                        seen.setdefault(spec["name"], spec)
        if c.frame == "" and c.stage_id in ("seed", "system-prompt", "tools", "final"):
            if c.stage_id == "tools":
                for op in c.ops:  # every spec the run served, for the skills' tools
                    if op.key == "tools":
                        for spec in thaw(op.value):
                            seen.setdefault(spec["name"], spec)
            for op in c.ops:
                writes.setdefault(op.key, thaw(op.value))
        if judged_at is None and (
            c.stage_id == "output-retry"
            or (c.frame == "" and any(op.key.startswith("output_") for op in c.ops))
        ):
            judged_at = c.stage_path
    settings = writes.get("settings", {})
    refuse_typed(snap, settings, judged_at)  # kept no verdicts: the schema is code
    builder = AgentBuilder(
        MockProvider(replies=[]),
        settings.get("model", "replay"),
        max_iterations=writes.get("max_iterations", 10),
        **recorded_options(settings),  # the native response format is the schema's
        name=snap.chart_id.removeprefix("agent-"),
        wrap_up_at_max_iterations=settings.get("wrap_up_at_max_iterations", wrapped),
        tool_arg_validation=settings.get("tool_arg_validation", "enforce"),
        max_tool_result_chars=settings.get("max_tool_result_chars"),
        repeated_call_nudge=settings.get("repeated_call_nudge", True),
        pricing_table=settings.get("pricing"),
        cost_budget=budget_option(settings.get("cost_budget")),
        max_parallel_tool_calls=settings.get("max_parallel_tool_calls", 4),
        stream=False,
    )

    if not wrapped and "wrap_up_at_max_iterations" not in settings:  # recorded before it was
        builder._wrap_up_off_unrecorded = True
    if settings.get("limits_travel"):
        builder.limits_travel_with_the_answer()
    replay_findings(builder, settings.get("findings"), snap)  # the judge read off the rows
    if settings.get("findings"):  # with the fact ceiling the run recorded
        replay_ledger_facts(builder, settings)
    if settings.get("thinking_handler"):  # replaced by _replay_agent with what it returned
        name = settings["thinking_handler"]
        builder.thinking_handler(recorded_handler(snap, name), name=name)
    if settings.get("window"):
        keep = settings["window"].get("keep_last_tool_results", 2)
        builder.window(RecordedWindow(snap), keep_last_tool_results=keep)
    ran_system_stage = any(c.stage_id == "system-prompt" for c in snap.history())
    if "resolved_instructions" in writes:
        recorded = {"model": settings.get("model"), "instructions": writes["resolved_instructions"]}
        builder.configure(lambda ctx: recorded)
    elif "system_prompt" in writes:
        builder.system(writes["system_prompt"])
    elif ran_system_stage:  # configure() chose only a model: the stage ran and wrote nothing
        model = settings.get("model")
        builder.configure(lambda ctx: {"model": model})
    people = writes.get("people") or {}
    asks = people.get("asks", {})
    rules = writes.get("tool_rules") or {}
    needs = writes.get("credential_needs") or {}

    def stub(spec: dict[str, Any]) -> Any:
        ruled = rules.get(spec["name"], {})
        tool = define_tool(
            name=spec["name"],
            description=spec["description"],
            input_schema=ruled.get("input_schema", spec["input_schema"]),
            execute=_unreachable,
        )
        return dataclasses.replace(
            tool,
            asks=asks.get(spec["name"]),
            ask_or_assume=ruled.get("ask_or_assume"),
            period=ruled.get("period"),
            needs=tuple(needs.get(spec["name"], ())),
        )

    skilled = skill_tool_names(writes)
    own = [spec for spec in writes.get("tools", []) if spec["name"] not in skilled]
    registered = [spec["name"] for spec in own]
    for spec in own:
        builder.tool(stub(spec))
    apply_recorded_skills(builder, snap, writes, stub, seen)
    offers, provided = recorded_offers(snap, [*registered, *skilled])
    if provided or (offers and not skilled):
        builder.tools_from(RecordedOffers([stub(s) for s in provided.values()], offers))
    for name, question in people.get("check_ins", {}).items():
        builder.check_in([name], question=question)
    if people.get("gated"):
        builder.gate(recorded_gate(snap))
    recorded_output(builder, snap, settings)  # judged from the verdicts the run kept
    replay_middleware(builder, snap)
    if settings.get("evidence"):  # the gate judges the recorded answers again, as it did
        builder.names_and_numbers_from_evidence(**settings["evidence"])
    if needs:  # the consents are replayed; no value is asked for
        builder.credentials({})
    replay_memory(builder, recorded_memories(settings), snap)
    replay_artifacts(
        builder, settings.get("artifacts")
    )  # the threshold; no store: tickets as recorded
    replay_time(builder, snap)  # the clock the rows hold; no reader runs
    replay_ontology(builder, settings, writes.get("ontology"))  # the map, as recorded
    replay_self_explain(builder, settings)  # the trace tools are stubs; the guide is recorded
    replay_validation(builder, snap, None)  # the claims are data: run again, time as recorded
    return builder.build()


def recorded_gate(snap: Snapshot) -> Any:
    """The gates' recorded decisions, by call id (gates are code: replay reads what they
    decided rather than asking them again)."""
    from trackway.tools import allow, ask, deny

    rows = {r["id"]: r for r in thaw(snap.state.get("tool_results", []))}
    served = {
        m["tool_call_id"]: m["content"]
        for m in thaw(snap.state.get("history", []))
        if m.get("role") == "tool"
    }
    questions = {
        c.detail["pause"]["call"]["id"]: c.detail["pause"]["question"]
        for c in snap.history()
        if isinstance(c.detail, dict)
        and isinstance(c.detail.get("pause"), dict)
        and c.detail["pause"].get("gate")
    }

    def decided(call: dict[str, Any], ctx: Any) -> Any:
        row = rows.get(call["id"], {})
        if row.get("gate") == "deny":
            return deny(served.get(call["id"], "").removeprefix("Denied: ") or "denied")
        if row.get("gate") == "ask" or call["id"] in questions:
            return ask(questions.get(call["id"], "approve?"))
        return allow()

    return decided


def recorded_offers(
    snap: Snapshot, registered: list[str]
) -> tuple[list[list[str] | None], dict[str, dict[str, Any]]]:
    """What the tool providers offered at each model call (``None``: as before), and the
    spec of every tool they offered."""
    offers: list[list[str] | None] = []
    provided: dict[str, dict[str, Any]] = {}
    # under tool choice the served list may be narrowed: the wire before it is on the row
    choices = [
        r for r in thaw(snap.state.get("tool_choices", [])) if r["kind"] in ("pick", "error")
    ]
    for c in snap.history():
        if c.frame != "" or c.stage_id != "offer":
            continue
        if choices:
            row = choices.pop(0)
            names = [n for n in row.get("wire", row["served"]) if n not in registered]
            for n in names:
                provided.setdefault(n, unserved_spec(n))
            for op in c.ops:
                if op.key == "tools":
                    for spec in thaw(op.value):
                        if spec["name"] in provided:
                            provided[spec["name"]] = spec
            offers.append(names)
            continue
        written = [thaw(op.value) for op in c.ops if op.key == "tools"]
        if not written:
            offers.append(None)
            continue
        names = []
        for spec in written[-1]:
            if spec["name"] not in registered:
                provided.setdefault(spec["name"], spec)
                names.append(spec["name"])
        offers.append(names)
    return offers, provided


class RecordedOffers:
    """A tool provider that offers what the recording says was offered, call by call
    (providers are code: replay reads what they decided rather than asking again)."""

    def __init__(self, tools: list[Any], offers: list[list[str] | None]) -> None:
        self.tools = tuple(tools)
        self._offers = list(offers)
        self._current: list[str] = []

    def offer(self, state: Any) -> list[str]:
        chosen = self._offers.pop(0) if self._offers else None
        if chosen is not None:
            self._current = chosen
        return self._current

    def __repr__(self) -> str:
        return "recorded offers"


def _unreachable(args: dict[str, Any], ctx: Any) -> str:  # pragma: no cover - replaced
    raise AssertionError("replay tools are replaced by the recorded results")


_RECORD_KEYS = (
    "thinking_retired",
    "strategy",
    "iteration",
    "k",
    "why",
    "removed",
    "removed_messages",
    "refused",
    "held",
    "chars_before",
    "chars_after",
    "ledger_facts",
    "dropped_standings",
)


def replay_ledger_facts(builder: Any, settings: Mapping[str, Any]) -> None:
    """The fact ceiling the run recorded, on a builder armed with ``.findings()`` (a windowed
    recording made before the hold existed is replayed without it)."""
    facts = (settings.get("window") or {}).get("keep_ledger_facts")
    if facts is not None:
        builder._findings_facts = facts
    builder._ledger_facts_unrecorded = facts is None and bool(settings.get("window"))


class RecordedWindow:
    """A window strategy that decides what the recording says each visit decided (a
    strategy is code, and a summary is a model call: replay reads both from the record)."""

    def __init__(self, snap: Snapshot) -> None:
        settings = dict(thaw(snap.state.get("settings", {})).get("window") or {})
        self.name = str(settings.pop("strategy", "recorded"))
        settings.pop("keep_last_tool_results", None)
        settings.pop("keep_ledger_facts", None)
        self._settings = settings
        self._records = list(thaw(snap.state.get("window", [])))
        self._summaries = list(thaw(snap.state.get("summaries", [])))

    def settings(self) -> dict[str, Any]:
        return dict(self._settings)

    def plan(self, visit: WindowVisit) -> WindowPlan:
        if not self._records:
            raise ReplayDivergence(
                "the replay visited the window more often than the recording did",
                stage_path="window",
                key="window",
            )
        record = self._records.pop(0)
        asked = (record.get("ledger_facts") or {}).get("keep_recent_turns")
        if asked is not None:  # the fact hold as the strategy asked for it, spent alike
            visit.removable(asked)
        ranges = [(int(a), int(b)) for a, b in record.get("removed", ())]
        remove = [t.head for t in visit.kept if any(a <= t.head < b for a, b in ranges)]
        remove += [int(h) for h in record.get("refused", ())]  # asked again, refused again
        details = {k: v for k, v in record.items() if k not in _RECORD_KEYS}
        summary = call = None
        details.pop("summary_chars", None)  # the stage files it again with the summary
        if "summary_chars" in record and self._summaries:
            row = dict(self._summaries.pop(0))
            summary = row.pop("summary")
            call = {k: v for k, v in row.items() if k not in ("n", "at_k")}
        return WindowPlan(remove, record.get("why", ""), details, summary, call)
