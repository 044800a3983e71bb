"""Rebuilding and replaying agent runs from their record alone.

``served_at(record, k)`` rebuilds the k-th model request from the log: the state just before
the k-th ``call-llm`` commit, through the same assembly ``call-llm`` used. The conformance
law: ``served_at(record, k).hash == receipts(record)[k - 1]["request_hash"]`` for every k.
``replay(record, agent)`` re-runs the turn with the recorded model answers and tool results
(never a live model or tool) and fails on the first commit that differs.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trackway.engine import (
    SNAPSHOT_FORMAT,
    Checkpoint,
    Commit,
    DocumentError,
    Executor,
    OutOfRangeError,
    RunResult,
    Snapshot,
    load_document,
    run_sync,
    thaw,
)
from trackway.recorders import RECORDING_FORMAT as JSONL_FORMAT
from trackway.recorders import load_recording as load_jsonl_recording
from trackway.recorders import write_recording
from trackway.tools import define_tool
from trackway.tools.results._outcome import RecordedOutcome

from ..context._cost import budget_option
from ..context._request import assemble
from ..loop._coverage import statement_of
from ..messages._errors import RedactedRecordError, ReplayDivergence
from ..messages._members import member_of
from ..messages._messages import LLMRequest, LLMResponse
from ..messages._paused import Paused
from ..providers._mock import MockProvider
from ..providers._options import REQUEST_OPTIONS
from ..runtime._agent import Agent
from ._replay_composition import member_snapshot, runner_from_recording
from ._replay_setup import (
    RecordedOffers,
    RecordedWindow,
    recorded_gate,
    recorded_offers,
)

__all__ = [
    "RECORDING_FORMAT",
    "load_recording",
    "receipts",
    "replay",
    "replay_async",
    "save_recording",
    "served_at",
]

RECORDING_FORMAT = JSONL_FORMAT
LEGACY_RECORDING_FORMAT = "trackway.agent-recording/1"
"""The agent recordings before the one format (a JSON document); still read."""
Record = Snapshot | Agent | str | os.PathLike[str]


def _snapshot(record: Record) -> Snapshot:
    if isinstance(record, Snapshot):
        return record
    if isinstance(record, Agent):
        return record.snapshot()
    return load_recording(record)


def _llm_commits(snap: Snapshot, member: str | None = None) -> list[Commit]:
    """Every model call of the run in commit order, at any depth (``member`` narrows to one
    member and what it contains)."""
    calls = [
        c
        for c in snap.history()
        if c.stage_id == "call-llm" and any(op[1] == "receipts" for op in c.writes)
    ]
    if member is None:
        return calls
    return [
        c
        for c in calls
        if member_of(c.stage_path) == member or member_of(c.stage_path).startswith(member + ".")
    ]


def _state_before(snap: Snapshot, commit: Commit) -> Any:
    """The state a model call read: its frame's state just before its commit."""
    return snap.frame_state_at(commit.frame, commit.seq - 1)


def served_at(record: Record, k: int, *, member: str | None = None) -> LLMRequest:
    """The exact request of model call ``k`` (1-based, in commit order over the whole run,
    every depth), rebuilt from the log alone. ``member="research"`` (a dotted path for nested
    members) numbers only that member's calls."""
    snap = _snapshot(record)
    calls = _llm_commits(snap, member)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= len(calls):
        where = "" if member is None else f" in member {member!r}"
        known = sorted({member_of(c.stage_path) for c in _llm_commits(snap)} - {""})
        hint = f" (members that called a model: {', '.join(known)})" if known else ""
        raise OutOfRangeError(
            f"served_at(..., {k!r}): the run made {len(calls)} model "
            f"call{'' if len(calls) == 1 else 's'}{where}, numbered from 1{hint}"
        )
    state = _state_before(snap, calls[k - 1])
    _check_not_redacted(state, f"served_at(..., {k})")
    return assemble(state).request


def _check_not_redacted(state: Any, what: str) -> None:
    """A record whose conversation was redacted cannot be rebuilt: say so, by name."""
    history = state.get("history")
    if isinstance(history, str):  # the policy's marker where the messages were
        raise RedactedRecordError(
            f"{what}: this record's conversation was redacted (history is {history!r}), so "
            "the request cannot be rebuilt from it. Keep an unredacted recording where it must "
            "be replayed, or check receipts(record) (hashes, usage) instead"
        )


def receipts(record: Record) -> list[dict[str, Any]]:
    """The receipt of every model call, in commit order at every depth: request hashes,
    tool schema hashes, usage; a call made inside a composition member carries ``member``
    (its dotted path)."""
    snap = _snapshot(record)
    out: list[dict[str, Any]] = []
    for commit in _llm_commits(snap):
        written = [op for op in commit.writes if op[1] == "receipts"]
        if not written:
            continue
        value = thaw(written[-1][3])  # an append carries the items added; a set, the list
        receipt = dict(value[-1] if isinstance(value, list) else value)
        member = member_of(commit.stage_path)
        if member:
            receipt["member"] = member
        out.append(receipt)
    return out


def save_recording(runner: Agent | RunResult | Snapshot, path: str | os.PathLike[str]) -> Path:
    """Write a finished run to ``path`` in the one recording format (JSON Lines, the format
    ``jsonl(path)`` streams): a header with the chart's structure, the commits with their
    emits, the end. ``runner`` is an agent or a composition (its last run), a ``RunResult``
    or a ``Snapshot``."""
    if isinstance(runner, Agent):
        return write_recording(runner.snapshot(), Path(path), chart=runner.spec())
    snap = runner.snapshot if isinstance(runner, RunResult) else runner
    return write_recording(snap, Path(path))


def load_recording(path: str | os.PathLike[str], run_id: str | None = None) -> Snapshot:
    """Read a recording: the one format (written by :func:`save_recording` or streamed by
    ``jsonl(path)``; ``run_id`` picks a run when a file holds several), and the two before
    it (``trackway.recording/1`` lines, ``trackway.agent-recording/1`` documents) or a
    snapshot's ``to_json``.

    A file that is not one raises :class:`DocumentError` naming the file and what is wrong.
    """
    source = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise DocumentError(
            f"{source}: cannot read the recording: {exc.strerror or exc}",
            document="recording",
            source=source,
        ) from None
    first = data.lstrip()[:1]
    head = data.split(b"\n", 1)[0]
    if first == b"{" and b'"type"' in head and b'"on_' in head:  # JSON Lines
        return load_jsonl_recording(Path(path), run_id)
    return load_document(
        data,
        document="recording",
        readers={
            LEGACY_RECORDING_FORMAT: lambda doc: _recorded_snapshot(doc),
            SNAPSHOT_FORMAT: lambda doc: Snapshot.from_doc(doc),
        },
        source=source,
    )


def _recorded_snapshot(doc: dict[str, Any]) -> Snapshot:
    snapshot = doc.get("snapshot")
    if not isinstance(snapshot, dict):
        raise DocumentError(
            "corrupt recording: the field snapshot is missing or not an object",
            document="recording",
            field="snapshot",
        )
    return Snapshot.from_doc(snapshot, where="snapshot")


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
    definition (required when the run used an output schema, whose validator is code).
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
    convo = None if prior is None else Conversation(history=prior, agent=agent.name)
    answers = _recorded_resumes(snap)
    try:
        if initial.get("retry") and convo is not None:  # a resume_on_error run
            outcome = await twin.resume_on_error(convo, **caller)
        else:
            outcome = await twin.run(initial["message"], continue_from=convo, **caller)
        while isinstance(outcome, Paused) and answers:  # the person's recorded answers
            outcome = await twin._drive(
                functools.partial(_resume_with, outcome.checkpoint, answers.pop(0))
            )
    except Exception:
        if twin.commit_count() == 0:
            raise
    replayed = twin.snapshot()
    written = {w[1] for c in snap.history() for w in c.writes}
    _compare(snap.history(), replayed.history(), ignore=set(ADDED_KEYS) - written)
    return replayed


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
        )
        for t in cfg.tools.values()
    }
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
        stream=False,
    ).tools(tools[name] for name in cfg.registered)
    if cfg.providers:  # what they offered, call by call, from the recording
        offers, _ = recorded_offers(snap, list(cfg.registered))
        provided = [t for name, t in tools.items() if name not in cfg.registered]
        builder.tools_from(RecordedOffers(provided, offers))
    if cfg.system is not None:
        builder.system(cfg.system)
    if cfg.configure is not None:
        builder.configure(cfg.configure)
    if cfg.output_model is not None:
        builder.output_schema(cfg.output_model, retries=cfg.output_retries)
    if cfg.limits_travel:
        builder.limits_travel_with_the_answer()
    if cfg.findings:
        builder.findings()
    if cfg.window is not None:  # what the window decided, not decided again
        builder.window(RecordedWindow(snap), keep_last_tool_results=cfg.keep_last_tool_results)
    for name, question in cfg.check_ins.items():
        builder.check_in([name], question=question)
    if cfg.gate is not None or any(t.gate is not None for t in cfg.tools.values()):
        builder.gate(recorded_gate(snap))  # what the gates decided, not asked again
    return builder.build()


ADDED_KEYS = ("tool_results", "coverage_declared", "tool_runs")
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
        new_writes = [(w[0], w[1], w[2]) for w in new.writes if not ignore or w[1] not in ignore]
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
