"""What each trace tool reads from a run's snapshot: plain JSON payloads, read from the record
alone (the commits, their decisions, the state they left), never from the live agent.

Each reader returns the payload and the list it pages through (``None``: none); the tool
bounds it (``_fit``). Under a redaction policy the snapshot is the one the policy kept, so a
reader shows its placeholder where a value was hidden.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from trackway.engine import Commit, Snapshot, causal_chain, thaw

from ..record._record import _llm_commits

__all__ = ["Read", "commit_in_full", "model_calls", "outline", "tool_calls", "why"]

CHAIN_NODES = 40
"""The most commits ``trace_why`` follows back (its render says when the chain was cut)."""


class Read(NamedTuple):
    """A reader's payload, the key of the list it pages through, and that list's first
    item number."""

    payload: dict[str, Any]
    page: str | None = None
    start: int = 1


def _run(snap: Snapshot) -> dict[str, Any]:
    head: dict[str, Any] = {"run_id": snap.run_id, "status": snap.status}
    if snap.error is not None:
        head["error"] = f"{snap.error.type}: {snap.error.message}"
    return head


def _from(start: int, items: Sequence[Any]) -> list[Any]:
    return list(items[start - 1 :])


def _response(c: Commit) -> dict[str, Any]:
    for op in c.ops:
        if op.key == "response":
            value = thaw(op.value)
            return value if isinstance(value, dict) else {"content": value}
    return {}


def _receipt(c: Commit) -> dict[str, Any]:
    for op in c.ops:
        if op.key == "receipts":
            value = thaw(op.value)
            last = value[-1] if isinstance(value, list) and value else value
            return last if isinstance(last, dict) else {}
    return {}


def _step(c: Commit, k: int | None) -> dict[str, Any]:
    """One commit in the outline: its stage, and what it decided or did in a few words."""
    step: dict[str, Any] = {"seq": c.seq, "stage": c.stage_path}
    if c.outcome != "ok":
        step["outcome"] = c.outcome
    if c.error is not None:
        step["error"] = f"{c.error.type}: {c.error.message}"
    detail = thaw(c.detail) if isinstance(c.detail, Mapping) else {}
    decision = detail.get("decision")
    if isinstance(decision, dict):
        step["chose"] = decision.get("chosen", decision.get("selected"))
        if "why" in decision:
            step["why"] = decision["why"]
    if "pause" in detail:
        pause = detail["pause"]
        step["paused"] = pause.get("question") if isinstance(pause, dict) else pause
    if "resume" in detail:
        step["resumed_with"] = detail["resume"].get("value")
    if k is not None:
        answer = _response(c)
        step["call"] = k
        called = [t.get("name") for t in answer.get("tool_calls") or ()]
        if called:
            step["called"] = called
        else:
            step["answered_chars"] = len(str(answer.get("content") or ""))
    elif c.stage_id == "tool-calls":
        rows = [row for op in c.ops if op.key == "tool_results" for row in thaw(op.value) or ()]
        step["results"] = [
            f"{r.get('name')} {r.get('id')}: {r.get('status')}" for r in rows if isinstance(r, dict)
        ]
    elif decision is None and c.keys_written and c.stage_id not in ("final", "seed"):
        step["wrote"] = list(c.keys_written)
    return step


def outline(snap: Snapshot, start: int = 1) -> Read:
    """The run in outline: the person's message, the answer, how it ended, and each step."""
    state = snap.state
    numbered = {c.seq: k for k, c in enumerate(_llm_commits(snap), start=1)}
    steps = [_step(c, numbered.get(c.seq)) for c in snap.history()]
    run = _run(snap)
    run["message"] = state.get("user_message", state.get("message"))
    run["answer"] = state.get("final_answer")
    run["model_calls"] = len(numbered)
    run["tool_calls"] = len(state.get("tool_results") or ())
    if state.get("stopped_early") is not None:
        run["stopped_early"] = thaw(state["stopped_early"])
    return Read({"run": thaw(run), "steps": _from(start, steps)}, "steps", start)


def model_calls(snap: Snapshot, start: int = 1) -> Read:
    """Each model call: what it answered (text, tool calls), why it stopped, its usage."""
    calls = []
    for k, c in enumerate(_llm_commits(snap), start=1):
        answer = _response(c)
        receipt = _receipt(c)
        row: dict[str, Any] = {"call": k, "seq": c.seq, "stage": c.stage_path}
        row["content"] = answer.get("content") or ""
        if answer.get("tool_calls"):
            row["tool_calls"] = [
                {"id": t.get("id"), "name": t.get("name"), "args": t.get("args")}
                for t in answer["tool_calls"]
            ]
        row["stop_reason"] = answer.get("stop_reason", receipt.get("stop_reason"))
        row["usage"] = receipt.get("usage")
        calls.append(row)
    return Read({"run": _run(snap), "calls": _from(start, calls)}, "calls", start)


def tool_calls(snap: Snapshot, start: int = 1) -> Read:
    """Each tool call: its arguments, its status and flags, and what the model read back."""
    state = snap.state
    history = state.get("history")
    args: dict[Any, Any] = {}
    read: dict[Any, Any] = {}
    hidden = not isinstance(history, Sequence) or isinstance(history, str)
    for message in () if hidden else history:
        if not isinstance(message, Mapping):
            continue
        for call in message.get("tool_calls") or ():
            args.setdefault(call.get("id"), thaw(call.get("args")))
        if message.get("role") == "tool":
            read[message.get("tool_call_id")] = message.get("content")
    calls: list[dict[str, Any]] = []
    for row in thaw(state.get("tool_results") or ()):
        entry = {"call": len(calls) + 1, **row}
        if hidden:
            entry["args"] = entry["result"] = "(hidden by the run's redaction policy)"
        else:
            entry["args"] = args.get(row.get("id"))
            entry["result"] = read.get(row.get("id"))
        calls.append(entry)
    return Read({"run": _run(snap), "calls": _from(start, calls)}, "calls", start)


def why(snap: Snapshot, key: str) -> Read:
    """Why ``key`` holds its value: the chain of commits that wrote it and what each read
    (the causal trace, bookkeeping left out); an unknown key lists the keys there are."""
    state = snap.state
    if key not in state:
        return Read({"run": _run(snap), "key": key, "found": False, "keys": sorted(state)})
    chain = causal_chain(snap, key, max_nodes=CHAIN_NODES)
    payload = {
        "run": _run(snap),
        "key": key,
        "value": thaw(state[key]),
        "chain": chain.render().splitlines(),
    }
    return Read(payload, "chain")


def commit_in_full(snap: Snapshot, seq: int) -> Read:
    """One commit as the log holds it: reads, writes, events, decision and outcome."""
    if not 1 <= seq <= len(snap):
        return Read({"run": _run(snap), "seq": seq, "found": False, "commits": len(snap)})
    c = snap.commits[seq - 1]
    payload: dict[str, Any] = {
        "run": _run(snap),
        "seq": c.seq,
        "stage": c.stage_path,
        "name": c.stage_name,
        "kind": c.kind,
        "outcome": c.outcome,
    }
    if c.error is not None:
        payload["error"] = f"{c.error.type}: {c.error.message}"
    payload["reads"] = list(c.reads)
    payload["detail"] = thaw(c.detail)
    payload["events"] = [{"name": e.name, "payload": thaw(e.payload)} for e in c.events]
    payload["writes"] = [{"op": op.kind, "key": op.key, "value": thaw(op.value)} for op in c.ops]
    return Read(payload, "writes")
