"""Replaying agent runs from their record alone.

``replay(record, agent)`` re-runs the turn with the recorded model answers and tool results
(never a live model or tool) and fails on the first commit that differs. Without the agent,
the runner is rebuilt from the recording (``_replay_setup`` for an agent,
``_replay_composition`` for a composition).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

from trackway.engine import (
    Checkpoint,
    Commit,
    Executor,
    RunResult,
    Snapshot,
    run_sync,
    thaw,
)
from trackway.tools import define_tool
from trackway.tools.results._outcome import RecordedOutcome

from ..artifacts._building import replay_artifacts
from ..context._cost import budget_option
from ..explain._building import replay_self_explain_of
from ..loop._coverage import statement_of
from ..messages._errors import ReplayDivergence
from ..messages._messages import LLMResponse
from ..messages._paused import Paused
from ..output._chain import TYPED_INPUT
from ..providers._mock import MockProvider
from ..providers._options import REQUEST_OPTIONS
from ..providers.thinking import recorded_handler
from ..record._record import Record, _check_not_redacted, _llm_commits, _snapshot, receipts
from ..runtime._agent import Agent
from ..time._replaying import replay_time
from ._replay_cache import replay_cache_policy
from ._replay_composition import member_snapshot, runner_from_recording
from ._replay_findings import replay_findings
from ._replay_memory import replay_memory
from ._replay_middleware import replay_middleware
from ._replay_setup import (
    RecordedOffers,
    RecordedWindow,
    recorded_gate,
    recorded_offers,
    replay_ledger_facts,
)
from ._replay_skills import replay_skills
from ._replay_typed import as_recorded, replay_typed
from ._replay_validation import replay_validation

__all__ = ["replay", "replay_async"]


def _recorded_answers(snap: Snapshot) -> list[LLMResponse]:
    answers = []
    for c in _llm_commits(snap):
        for op in c.ops:
            if op.key == "response":
                answers.append(LLMResponse.model_validate(thaw(op.value)))
    return answers


async def _resume_with(checkpoint: Checkpoint, value: Any, executor: Executor) -> RunResult:
    return await executor.resume(checkpoint, value, raise_on_error=False)


def _recorded_resumes(snap: Snapshot) -> list[Any]:
    """The resume values of the run, in order (a person's answers, as recorded)."""
    return [
        thaw(c.detail["resume"]["value"])
        for c in snap.history()
        if c.kind == "resume" and isinstance(c.detail, dict) and "resume" in c.detail
    ]


def _recorded_tool_results(snap: Snapshot) -> dict[str, list[str]]:
    """Each tool result, by the id of the call it answered, from the committed history."""
    results: dict[str, list[str]] = {}
    for c in snap.history():
        if c.stage_id != "tool-calls" or c.frame != "":
            continue
        for op in c.ops:
            if op.key == "history":
                for message in thaw(op.value):
                    if message.get("role") == "tool":
                        results.setdefault(message["tool_call_id"], []).append(message["content"])
    return results


def replay(record: Record, agent: Agent | None = None) -> Snapshot:
    """Re-run a recorded turn hermetically and check every commit against the recording.

    The sync twin of :func:`replay_async` (refused inside a running event loop).
    """
    return run_sync(
        lambda: replay_async(record, agent), name="replay", twin="await replay_async(...)"
    )


async def replay_async(record: Record, agent: Agent | None = None) -> Snapshot:
    """Re-run a recorded turn hermetically and check every commit against the recording.

    The model answers and tool results come from the recording; nothing live is called.
    Without ``agent`` the configuration (model settings, system prompt, tool schemas, limits)
    is read from the recording itself, and for a composition each member's the same way,
    with what its rules decided (the member a conditional picked, a loop's rounds, a
    parallel's merged answer); pass the agent or composition to replay against its current
    definition. A typed run is judged from the verdicts it recorded (``output_judged``);
    one recorded before they were needs its agent when its answers were judged.
    Returns the replayed snapshot; raises :class:`ReplayDivergence` naming the first stage
    and key that differ.
    """
    snap = _snapshot(record)
    _check_not_redacted(snap.state, "replay")
    if agent is None:
        agent = runner_from_recording(snap)
    twin = _replay_agent(agent, snap)
    initial = thaw(snap.initial_state)
    caller = {"identity": initial.get("identity"), "session_id": initial.get("session_id")}
    from ..messages._conversation import Conversation

    prior = initial.get("prior_history")
    carried = initial.get("carried")
    convo = None if prior is None else Conversation(history=prior, agent=agent.name, carry=carried)
    answers = _recorded_resumes(snap)
    outcome: object  # the answer, typed when the run asked for it, or a pause
    raised: ReplayDivergence | None = None  # a stand-in of the twin met what was never recorded
    try:
        if initial.get("retry") and convo is not None:  # a resume_on_error run
            outcome = await twin.resume_on_error(convo, **caller)
        else:
            typed = initial.get(TYPED_INPUT) and twin._cfg.output_model is not None
            ask = twin.run_typed if typed else twin.run  # run_typed: the chain runs as it ran
            said = initial["message"]
            if "time" in initial and twin._cfg.time is not None:  # .time(): the run's clock
                said = {"message": said, "time": initial["time"]}
            outcome = await ask(said, continue_from=convo, **caller)
        while isinstance(outcome, Paused) and answers:  # the person's recorded answers
            outcome = await twin._drive(
                functools.partial(_resume_with, outcome.checkpoint, answers.pop(0))
            )
    except Exception as exc:
        raised = _divergence_in(exc)
        if twin.commit_count() == 0 and raised is None:
            raise
    replayed = twin.snapshot()
    written = {w[1] for c in snap.history() for w in c.writes}
    ignore = set(ADDED_KEYS) - written
    if raised is not None:  # the commits before the stage that met it agree; then it is said
        done = replayed.history()
        at = next((i for i, c in enumerate(done) if c.outcome == "error"), len(done))
        _compare(snap.history()[:at], done[:at], ignore=ignore)
        raise raised
    _compare(snap.history(), replayed.history(), ignore=ignore)
    return replayed


def _divergence_in(exc: BaseException) -> ReplayDivergence | None:
    """The :class:`ReplayDivergence` a stage of the twin raised (a recorded stand-in asked
    for what the recording never held), found under the error the run ended with."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ReplayDivergence):
            return seen
        seen = seen.__cause__
    return None


class _ReplayProvider(MockProvider):
    """The recorded answers, in order; each call is described as the recording says it
    was made (provider, base URL, stream), so the replayed receipts are the recorded ones."""

    def __init__(self, answers: list[LLMResponse], vias: list[Any]) -> None:
        super().__init__(replies=answers, name="replay")
        self._vias = vias

    def describe_call(self, streamed: bool) -> dict[str, Any] | None:
        if not self._vias:
            return None
        recorded = self._vias.pop(0)
        return dict(recorded) if isinstance(recorded, dict) else None


def _replay_agent(agent: Agent, snap: Snapshot) -> Agent:
    from ..compose._composition import Composition

    if isinstance(agent, Composition):  # each member gets its own recorded part
        return agent.with_members(
            lambda name, member: _replay_agent(member, member_snapshot(snap, name))
        )
    cfg = agent._cfg
    answers = _recorded_answers(snap)
    provider = _ReplayProvider(answers, [r.get("via") for r in receipts(snap)])
    results = _recorded_tool_results(snap)
    rows = {r["id"]: r for r in thaw(snap.state.get("tool_results", []))}
    declared = {r["id"]: statement_of(r) for r in thaw(snap.state.get("coverage_declared", []))}
    inner: dict[str, list[dict[str, Any]]] = {}
    for run in thaw(snap.state.get("tool_runs", [])):
        kept = {k: v for k, v in run.items() if k not in ("id", "name", "iteration")}
        inner.setdefault(run["id"], []).append(kept)

    def recorded(name: str) -> Any:
        def execute(args: dict[str, Any], ctx: Any) -> Any:
            outputs = results.get(ctx.call_id)
            if not outputs:
                raise ReplayDivergence(
                    f"the replay called tool {name!r} as call {ctx.call_id!r}, which the "
                    "recording never answered",
                    stage_path="tool-calls",
                    key="history",
                )
            content = outputs.pop(0)
            row = rows.get(ctx.call_id)
            if row is None:  # recorded before calls had rows: the text alone
                return content
            # the recorded outcome as it was: status, effects, flags; never measured again
            runs = tuple(inner.get(ctx.call_id, ()))
            return RecordedOutcome(content, row, declared.get(ctx.call_id), runs)

        execute.replayed = True  # type: ignore[attr-defined]  # reads no credential
        return execute

    tools = {
        t.name: dataclasses.replace(
            define_tool(
                name=t.name,
                description=t.description,
                input_schema=t.input_schema,
                execute=recorded(t.name),
            ),
            asks=t.asks,
            ask_or_assume=t.ask_or_assume,
            period=t.period,
            needs=t.needs,
        )
        for t in cfg.tools.values()
    }
    if cfg.skills is not None:  # the doors are the library's: they run again, as they ran
        tools.update(cfg.skills.doors)
    from ..runtime._builder import AgentBuilder

    builder = AgentBuilder(
        provider,
        cfg.model,
        max_iterations=cfg.max_iterations,
        **{name: cfg.options.get(name) for name in REQUEST_OPTIONS},
        name=cfg.name,
        tool_arg_validation=cfg.arg_validation,
        max_tool_result_chars=cfg.max_tool_result_chars,
        repeated_call_nudge=cfg.repeated_call_nudge,
        pricing_table=cfg.pricing,
        cost_budget=budget_option(cfg.cost_budget),
        wrap_up_at_max_iterations=cfg.wrap_up,
        max_parallel_tool_calls=cfg.parallel_tool_calls,
        stream=False,
    ).tools(tools[name] for name in cfg.registered)
    # a recording made before the setting was recorded: replayed without it
    kept = thaw(snap.state.get("settings")) or {}
    builder._wrap_up_off_unrecorded = "wrap_up_at_max_iterations" not in kept
    if cfg.providers:  # what they offered, call by call, from the recording
        own = {t.name for p in cfg.providers for t in p.tools}
        offers, _ = recorded_offers(snap, [n for n in tools if n not in own])
        provided = [t for name, t in tools.items() if name in own]
        builder.tools_from(RecordedOffers(provided, offers))
    replay_skills(builder, cfg, snap, tools)
    replay_memory(builder, cfg.memories, snap)  # what was recalled and written, read back
    replay_artifacts(builder, cfg.artifacts and cfg.artifacts.record())  # tickets as recorded
    replay_time(builder, snap, cfg.time)  # the clock the rows hold; no reader runs
    if cfg.ontology is not None:  # the same map and ask
        builder.ontology(cfg.ontology.ontology, ask=cfg.ontology.ask)
    if cfg.system is not None:
        builder.system(cfg.system)
    if cfg.configure is not None:
        builder.configure(cfg.configure)
    replay_typed(builder, cfg, snap)  # the fallback tier served from the record
    if cfg.limits_travel:
        builder.limits_travel_with_the_answer()
    replay_findings(builder, kept.get("findings"), snap)  # the judge read off the rows
    if cfg.findings:  # with the fact ceiling the run recorded
        replay_ledger_facts(builder, kept)
    if cfg.window is not None:  # what the window decided, not decided again
        builder.window(RecordedWindow(snap), keep_last_tool_results=cfg.keep_last_tool_results)
    for name, question in cfg.check_ins.items():
        builder.check_in([name], question=question)
    if cfg.gate is not None or any(t.gate is not None for t in cfg.tools.values()):
        builder.gate(recorded_gate(snap))  # what the gates decided, not asked again
    replay_middleware(builder, snap)  # what the links decided, not decided again
    replay_cache_policy(builder, cfg.cache_policy, snap)  # as each receipt says it decided
    if cfg.thinking_handler is not None:  # what the handler returned, not run again
        name = cfg.thinking_handler.name
        builder.thinking_handler(recorded_handler(snap, name), name=name)
    if cfg.evidence is not None:  # a pure function of the record: judged again
        builder.names_and_numbers_from_evidence(**cfg.evidence.record())
    if cfg.credentials is not None:  # the consents are replayed; no value is asked for
        builder.credentials({})
    replay_self_explain_of(builder, cfg)  # its trace tools are the recorded stand-ins above
    if cfg.validation is not None:  # the same checks; time as the recording says
        replay_validation(builder, snap, cfg.validation)
    return builder.build()


ADDED_KEYS = ("tool_results", "coverage_declared", "tool_runs", "output_judged")
"""Keys this version records that recordings made before it do not have: a replay of such a
recording is compared on what the recording kept."""


def _compare(
    recorded: Sequence[Commit], replayed: Sequence[Commit], ignore: set[str] | None = None
) -> None:
    for old, new in zip(recorded, replayed, strict=False):
        if old.stage_path != new.stage_path:
            raise ReplayDivergence(
                f"commit {old.seq}: the recording ran {old.stage_path!r}, the replay ran "
                f"{new.stage_path!r}",
                stage_path=old.stage_path,
                key=None,
            )
        old_writes = [(w[0], w[1], w[2]) for w in old.writes]
        new_writes = [
            as_recorded((w[0], w[1], w[2]), old_writes)  # a report kept before its fields
            for w in new.writes
            if not ignore or w[1] not in ignore
        ]
        if old_writes != new_writes:
            for a, b in zip(old_writes, new_writes, strict=False):
                if a[1] != b[1] or a[0] != b[0]:
                    raise ReplayDivergence(
                        f"commit {old.seq} ({old.stage_path}) made a {a[0]} of {a[1]!r}; the "
                        f"replay made a {b[0]} of {b[1]!r} there",
                        stage_path=old.stage_path,
                        key=a[1],
                    )
                if a != b:
                    at = (
                        next(i for i, (x, y) in enumerate(zip(a[2], b[2], strict=False)) if x != y)
                        if a[2][: len(b[2])] != b[2][: len(a[2])]
                        else min(len(a[2]), len(b[2]))
                    )
                    lo = max(0, at - 30)
                    raise ReplayDivergence(
                        f"commit {old.seq} ({old.stage_path}) wrote {a[1]!r} = "
                        f"...{a[2][lo : at + 50].decode(errors='replace')}...; the replay "
                        f"wrote ...{b[2][lo : at + 50].decode(errors='replace')}... (they "
                        f"differ from byte {at})",
                        stage_path=old.stage_path,
                        key=a[1],
                    )
            raise ReplayDivergence(
                f"commit {old.seq} ({old.stage_path}) made {len(old_writes)} writes; the "
                f"replay made {len(new_writes)}",
                stage_path=old.stage_path,
                key=None,
            )
        if old.outcome != new.outcome:
            raise ReplayDivergence(
                f"commit {old.seq} ({old.stage_path}) ended {old.outcome!r}; the replay "
                f"ended {new.outcome!r}",
                stage_path=old.stage_path,
                key=None,
            )
    if len(recorded) != len(replayed):
        raise ReplayDivergence(
            f"the recording has {len(recorded)} commits; the replay made {len(replayed)}",
            stage_path=(recorded or replayed)[min(len(recorded), len(replayed)) - 1].stage_path,
            key=None,
        )
