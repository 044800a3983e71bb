"""How the narrative tells agents and compositions: one line per step, read from the commit.

An agent's stages read and write a dozen keys of the loop's own (settings, receipts, the
iteration, ledgers, features left unconfigured read absent); told key by key, a run's story is
lost in them. These tellers tell each stage from its commit alone — what the model was asked
for or answered, each tool call with its arguments, status and result, a person's question
and answer, the final answer — so a narrative told live and one told from the log say the
same. Values are cut as the narrative's options say, and a cut text says how long it was.
Registered when ``trackway.agent`` is imported; ``narrative(detail="full")`` tells every read
and write instead.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson

from trackway.engine import Commit, thaw, write_value
from trackway.recorders import Teller, Telling, register_teller

from ..grounding._gate import gate_lines
from ..messages._members import member_of
from ..output._chain import fallback_line
from ._telling_patterns import PATTERN_KINDS, PATTERN_STAGES, tell_pattern

__all__ = ["AGENT_TELLER", "COMPOSITION_TELLER"]

_AGENT_STAGES = frozenset(
    {
        "seed",
        "system-prompt",
        "tools",
        "window",
        "offer",
        "call-llm",
        "route",
        "tool-calls",
        "wrap-up",
        "output-retry",
        "evidence-recheck",  # told by the route before it (the gate's line)
        "final",
        "memory-recall",
        "memory-write",
        "output-fallback",
    }
)
_COMPOSITION_STAGES = (
    frozenset({"_seed", "_take", "_members", "_gather", "_pick", "_until", "_again", "_final"})
    | PATTERN_STAGES
)
_COMPOSITION_KINDS = {
    "sequence-": "Sequence",
    "parallel-": "Parallel",
    "conditional-": "Conditional",
    "loop-": "Loop",
    **PATTERN_KINDS,
}
_ROW_FIELDS = frozenset({"id", "name", "iteration", "status", "chars", "effects"})
_UNTOLD = ("error", "chars_returned", "tool_chars")  # said elsewhere, or bookkeeping
_MAX_NAMES = 6  # tool names listed on a model call's line before "and N more"


def _last_write(commit: Commit, key: str) -> Any:
    """The value the commit's last write to ``key`` carried (an append: the items added)."""
    found = None
    for w in commit.writes:
        if w[1] == key:
            found = w
    return None if found is None else thaw(write_value(found))


def _appended(commit: Commit, key: str) -> list[Any]:
    """Every item the commit appended to ``key``, over all its writes, in order."""
    items: list[Any] = []
    for w in commit.writes:
        if w[1] == key and w[0] == "append":
            items += _items(thaw(write_value(w)))
    return items


def _events(commit: Commit, name: str) -> list[dict[str, Any]]:
    out = []
    for event in commit.events:
        if event.name == name:
            payload = thaw(event.payload)
            if isinstance(payload, dict):
                out.append(payload)
    return out


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _name_list(names: Iterable[str]) -> str:
    counts = Counter(names)
    shown = [f"{n} ×{c}" if c > 1 else n for n, c in counts.items()]
    if len(shown) > _MAX_NAMES:
        return ", ".join(shown[:_MAX_NAMES]) + f" and {len(shown) - _MAX_NAMES} more"
    return ", ".join(shown)


def _said(telling: Telling, text: Any) -> str:
    """A text as the narrative shows it; a JSON object or list (a tool's structured result)
    as the value it spells, which reads better than its escaped text."""
    if not isinstance(text, str):
        return telling.value(text) if telling.values else ""
    if text[:1] in ("{", "[") and telling.values:
        try:
            parsed = orjson.loads(text)
        except orjson.JSONDecodeError:
            parsed = None
        if isinstance(parsed, (dict, list)):
            return telling.value(parsed)
    return telling.text(text) if text.strip() else "nothing"


# -- the agent -------------------------------------------------------------------------------


def _agent_name(commit: Commit, telling: Telling) -> str:
    """``Agent <name>``, and the member it is inside a composition."""
    member = member_of(commit.stage_path)
    name = telling.chart_id.removeprefix("agent-")
    who = "The agent" if name == "agent" else f"Agent {name}"  # the default name reads badly
    return who + (f" (member {member})" if member else "")


_DOOR_WORDS = {"input": "the message", "output": "the answer"}
_DENIED_WORDS = {"input": "refused", "output": "withheld"}


def _middleware(commit: Commit) -> list[str]:
    """What the message doors' links did, one line per link that changed or stopped what
    passed (a pass-through says nothing worth a line)."""
    lines = []
    for row in _appended(commit, "middleware_decisions"):
        door = row.get("door")
        if not isinstance(row, dict) or door not in _DOOR_WORDS:
            continue
        why = f" — {row['why']}" if row.get("why") else ""
        if row.get("outcome") == "deny":
            lines.append(
                f"Middleware {row.get('middleware')} {_DENIED_WORDS[door]} {_DOOR_WORDS[door]}{why}"
            )
        elif row.get("changed"):
            lines.append(f"Middleware {row.get('middleware')} rewrote {_DOOR_WORDS[door]}{why}")
    return lines


def _route(commit: Commit, telling: Telling) -> list[str]:
    return [*_middleware(commit), *gate_lines(commit)]


def _seed(commit: Commit, telling: Telling) -> list[str]:
    if _last_write(commit, "message_denied") is not None:  # never admitted: never asked
        return _middleware(commit)
    who = _agent_name(commit, telling)
    added = _items(_last_write(commit, "history"))
    message = _last_write(commit, "user_message")
    earlier = len(added) - 1  # a conversation continued: the turns before this message
    after = f", after {earlier} earlier message{'' if earlier == 1 else 's'}" if earlier > 0 else ""
    return [*_middleware(commit), f"{who} was asked {_said(telling, message)}{after}"]


def _usage(receipt: Mapping[str, Any]) -> str:
    usage = receipt.get("usage")
    if not isinstance(usage, dict):
        return ""
    parts = [
        f"{usage[key]} {label}"
        for key, label in (("input_tokens", "in"), ("output_tokens", "out"))
        if isinstance(usage.get(key), int)
    ]
    return f" ({', '.join(parts)} tokens)" if parts else ""


def _model_call(commit: Commit, telling: Telling) -> list[str]:
    receipts = _items(_last_write(commit, "receipts"))
    receipt = receipts[-1] if receipts and isinstance(receipts[-1], dict) else {}
    response = _last_write(commit, "response")
    if not isinstance(response, dict):  # the call failed: its failure is told after this
        return []
    head = f"Model call {receipt.get('k', '?')}{_usage(receipt)}"
    calls = [c for c in _items(response.get("tool_calls")) if isinstance(c, dict)]
    content = response.get("content") or ""
    cut = " (cut at max_tokens)" if response.get("stop_reason") == "max_tokens" else ""
    if calls:
        line = f"{head} asked for {_name_list(str(c.get('name')) for c in calls)}"
        if isinstance(content, str) and content.strip():
            line += f"; said {_said(telling, content)}"
        return [line + cut]
    return [f"{head} answered {_said(telling, content)}{cut}"]


def _args(telling: Telling, args: Any) -> str:
    if not telling.values or not args:
        return ""
    return " " + telling.value(args)


def _flags(row: Mapping[str, Any]) -> str:
    """What the row says beyond the status (truncated, nudged, a gate's decision, ...); the
    error a failure carries is already in the text the model read."""
    flags = []
    for key, value in row.items():
        if key in _ROW_FIELDS or key in _UNTOLD or value in (None, False):
            continue
        if key == "truncated" and isinstance(row.get("chars_returned"), int):
            flags.append(f"truncated from {row['chars_returned']} chars")
        elif value is True:
            flags.append(key)
        elif not isinstance(value, (dict, list)):
            flags.append(f"{key}: {value}")
        else:
            flags.append(key)
    return f" ({', '.join(flags)})" if flags else ""


def _tool_lines(commit: Commit, telling: Telling) -> list[str]:
    """One line per tool call the commit answered, in call order."""
    args = {e.get("id"): e.get("args") for e in _events(commit, "stream.tool_start")}
    ended = {e.get("id"): e for e in _events(commit, "stream.tool_end")}
    read = {
        m.get("tool_call_id"): m.get("content")
        for m in _appended(commit, "history")
        if isinstance(m, dict) and m.get("role") == "tool"
    }
    rows = [r for r in _appended(commit, "tool_results") if isinstance(r, dict)]
    if not rows:  # recorded before calls had rows: what the events said
        rows = list(ended.values())
    lines = []
    for row in rows:
        call_id = row.get("id")
        status = row.get("status") or ended.get(call_id, {}).get("status") or "done"
        content = read.get(call_id, ended.get(call_id, {}).get("result"))
        line = f"Tool {row.get('name')}{_args(telling, args.get(call_id))}: {status}{_flags(row)}"
        if content is not None:
            line += f" — {_said(telling, content)}"
        lines.append(line)
    return lines


def _waiting(payload: Any, telling: Telling) -> str:
    pending: dict[str, Any] = payload if isinstance(payload, dict) else {}
    call = pending.get("call")
    call = call if isinstance(call, dict) else {}
    kind = pending.get("kind")
    question = pending.get("question")
    shown = "" if kind == "ask_human" else _args(telling, call.get("args"))
    what = {
        "check_in": "a person's approval",
        "arguments": "a person to fill in its arguments",
    }.get(str(kind), "a person's answer")
    line = f"Tool {call.get('name', '?')}{shown}: waiting for {what}"
    if isinstance(question, str) and question:
        line += f" — {_said(telling, question)}"
    return line


def _answered(value: Any, telling: Telling) -> str:
    value = value if isinstance(value, dict) else {"answer": value}
    if value.get("abandon"):
        return "The question was withdrawn: the waiting call and any after it were not run"
    answer = value.get("answer")
    if isinstance(answer, dict) and "decision" in answer:  # a check-in: approve or decline
        note = answer.get("note")
        shown = telling.values and isinstance(note, str) and note
        return f"A person decided: {answer['decision']}" + (
            f" — {_said(telling, note)}" if shown else ""
        )
    shown = _said(telling, answer) if isinstance(answer, str) else telling.value(answer)
    return f"A person answered {shown}" if telling.values else "A person answered"


def _tool_calls(commit: Commit, telling: Telling) -> list[str]:
    detail = commit.detail or {}
    lines = []
    resume = detail.get("resume")
    if commit.kind == "resume" and isinstance(resume, dict):
        lines.append(_answered(thaw(resume.get("value")), telling))
    lines += _tool_lines(commit, telling)
    if commit.outcome == "paused":
        lines.append(_waiting(thaw(detail.get("pause")), telling))
    elif commit.outcome != "ok":  # calls started that the stage's end cut off
        answered = {r.get("id") for r in _appended(commit, "tool_results") if isinstance(r, dict)}
        answered |= {e.get("id") for e in _events(commit, "stream.tool_end")}
        for started in _events(commit, "stream.tool_start"):
            if started.get("id") not in answered:
                shown = _args(telling, started.get("args"))
                lines.append(f"Tool {started.get('name')}{shown}: cut off before it returned")
    return lines


def _window(commit: Commit, telling: Telling) -> list[str]:
    visits = [v for v in _items(_last_write(commit, "window")) if isinstance(v, dict)]
    lines = []
    for visit in visits:
        removed = visit.get("removed_messages") or 0
        summarized = "summary_chars" in visit
        if not removed and not summarized:
            continue  # the window kept everything: nothing to tell
        what = f"removed {removed} message{'' if removed == 1 else 's'}"
        if summarized:
            what += f" and summarized them ({visit['summary_chars']} chars)"
        why = visit.get("why")
        lines.append(f"Window {visit.get('strategy', '')}: {what}" + (f" — {why}" if why else ""))
    return lines


def _offer(commit: Commit, telling: Telling) -> list[str]:
    lines = []
    for moved in _events(commit, "skill.moved"):
        ends = [
            "a hidden skill" if moved.get(f"{end}_hidden") else (moved.get(end) or "none")
            for end in ("from", "to")
        ]
        lines.append(f"Skill: {ends[0]} → {ends[1]} (by {moved.get('by')})")
    for effect in _events(commit, "tools.effect"):
        if effect.get("outcome") != "accepted":
            why = f" — {effect['why']}" if effect.get("why") else ""
            lines.append(
                f"Effect of {effect.get('name')} ({effect.get('kind')}): "
                f"{effect.get('outcome')}{why}"
            )
    for row in _appended(commit, "tool_choices"):
        if row.get("kind") == "error":
            lines.append(f"Tool choice: the classifier failed ({row.get('status')})")
        elif row.get("narrowed"):
            lines.append(f"Tool choice: narrowed to {_name_list(_items(row.get('served')))}")
    offered = _events(commit, "tools.offered")
    if offered:
        names = [str(n) for n in _items(offered[-1].get("names"))]
        lines.append(f"Offered tools: {_name_list(names) or 'none'}")
    return lines


def _wrap_up(commit: Commit, telling: Telling) -> list[str]:
    stopped = _last_write(commit, "stopped_early")
    stopped = stopped if isinstance(stopped, dict) else {}
    pending = stopped.get("pending_count", 0)
    return [
        f"Asked the model to wrap up: max_iterations ({stopped.get('limit')}) reached with "
        f"{pending} tool call{'' if pending == 1 else 's'} not run"
    ]


def _output_retry(commit: Commit, telling: Telling) -> list[str]:
    retried = _events(commit, "agent.output_retry")
    event = retried[-1] if retried else {}
    error = event.get("error")
    because = f": {_said(telling, error)}" if isinstance(error, str) else ""
    return [
        f"Asked the model again (attempt {event.get('attempt', '?')}): its answer did not "
        f"match the output schema{because}"
    ]


def _stopped(stopped: Any) -> str:
    if not isinstance(stopped, dict):
        return ""
    reason = stopped.get("reason", "early")
    pending = stopped.get("pending_count") or 0
    not_run = f", {pending} tool call{'' if pending == 1 else 's'} not run" if pending else ""
    return f" (stopped early: {reason}{not_run})"


def _final(commit: Commit, telling: Telling) -> list[str]:
    answer = _last_write(commit, "final_answer")
    if answer is None:  # failed before it answered: the failure is told after this
        return []
    unmet = _last_write(commit, "output_contract_unmet")
    unmet_text = " (not matching the output schema)" if unmet is not None else ""
    stopped = _stopped(_last_write(commit, "stopped_early"))
    return [
        f"{_agent_name(commit, telling)} answered{stopped}{unmet_text} {_said(telling, answer)}"
    ]


def _memory(event_name: str, verb: str) -> Any:
    """A memory stage's line, from its event (ids and counts: never what was said)."""

    def tell(commit: Commit, telling: Telling) -> list[str]:
        lines = []
        for event in _events(commit, event_name):
            told = []
            for row in _items(event.get("memories")):
                if row.get("failed"):
                    told.append(f"{row.get('id')} failed ({row.get('failed')})")
                elif verb == "recalled":
                    n = row.get("entries", 0)
                    cut = ", cut" if row.get("cut") else ""
                    told.append(f"{row.get('id')} ({n} entr{'y' if n == 1 else 'ies'}{cut})")
                else:
                    turn = row.get("turn")
                    told.append(f"{row.get('id')}" + (f" (turn {turn})" if turn else " (nothing)"))
            scope = " (this run only: no identity)" if event.get("scope") == "run" else ""
            lines.append(f"Memory {verb}{scope}: {', '.join(told) or 'none'}")
        return lines

    return tell


_AGENT_TELLS = {
    "seed": _seed,
    "call-llm": _model_call,
    "route": _route,
    "tool-calls": _tool_calls,
    "window": _window,
    "offer": _offer,
    "wrap-up": _wrap_up,
    "output-retry": _output_retry,
    "final": _final,
    "memory-recall": _memory("memory.recalled", "recalled"),
    "memory-write": _memory("memory.written", "written"),
    "output-fallback": lambda c, t: [fallback_line(e) for e in _events(c, "agent.output_fallback")],
}


def tell_agent(commit: Commit, telling: Telling) -> Sequence[str]:
    """An agent stage's lines (the system prompt, the tool list and the route are the loop's
    machinery: no line, but for what the answer's links did; what they decided shows in the
    steps that follow)."""
    tell = _AGENT_TELLS.get(commit.stage_id)
    return [] if tell is None else tell(commit, telling)


AGENT_TELLER = Teller(
    "agent", lambda chart_id: chart_id.startswith("agent-"), _AGENT_STAGES, tell_agent
)


# -- compositions -----------------------------------------------------------------------------


def _composition_name(commit: Commit, telling: Telling) -> str:
    chart = telling.chart_id
    for prefix, kind in _COMPOSITION_KINDS.items():
        if chart.startswith(prefix):
            name = f"{kind} {chart.removeprefix(prefix)}"
            break
    else:
        name = chart
    member = member_of(commit.stage_path)
    return name + (f" (member {member})" if member else "")


def tell_composition(commit: Commit, telling: Telling) -> Sequence[str]:
    """A composition's own stages: the message, which member a rule picked, each round of a
    loop, the gathered answers of a parallel, the answer. Its members tell themselves."""
    stage = commit.stage_id
    decision = thaw((commit.detail or {}).get("decision")) or {}
    if stage == "_seed":
        message = _last_write(commit, "user_message")
        return [f"{_composition_name(commit, telling)} was asked {_said(telling, message)}"]
    if stage == "_pick":
        chosen = decision.get("chosen", _last_write(commit, "chosen"))
        case = decision.get("case")
        if isinstance(case, int):
            return [f"Picked {chosen}: the rule of case {case + 1} held"]
        return [f"Picked {chosen}: no rule held (otherwise)"]
    if stage == "_until":
        done = decision.get("chosen") == "done" or "why" in decision
        then = f"stopping: {decision.get('why')}" if done else "going again"
        return [f"Round {decision.get('round', '?')} done; {then}"]
    if stage == "_gather" and telling.chart_id.startswith("parallel-"):
        return [f"Gathered the answers: {_said(telling, _last_write(commit, 'current'))}"]
    if stage == "_final":
        answer = _last_write(commit, "final_answer")
        return [f"{_composition_name(commit, telling)} answered {_said(telling, answer)}"]
    if stage == "_gather" and telling.chart_id.startswith("mapreduce-"):
        return [f"Reduced the answers: {_said(telling, _last_write(commit, 'current'))}"]
    # the patterns' stages; then structure (_take, _again, a merge) and members' boundaries
    return tell_pattern(commit, telling)


COMPOSITION_TELLER = Teller(
    "composition",
    lambda chart_id: chart_id.startswith(tuple(_COMPOSITION_KINDS)),
    _COMPOSITION_STAGES,
    tell_composition,
)

register_teller(AGENT_TELLER)
register_teller(COMPOSITION_TELLER)
