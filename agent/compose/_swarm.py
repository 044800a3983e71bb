"""``swarm``: agents handing the conversation to each other, on one record.

The entry member takes the person's message. A member hands off by calling the handoff tool
(:func:`handoff_tool`, ``{"to": member, "note": ...}``) during its turn; when its turn ends,
the swarm reads the last such call from the member's own history and the named member takes
over (the person's message, with the note). A member that calls no handoff answers for the
swarm. A swarm continued (``continue_from=swarm.checkpoint()``) gives every member the
conversation's earlier turns as well: the member takes the conversation over. Hops are
bounded by ``max_hops``: a handoff past it is refused and the last answer stands. A handoff
to a name no member has is refused too, as data: the same member is asked again, told the
names it can hand off to (that turn counts as a hop); so is a handoff the declared
``handoffs`` do not allow. Every decision is a row of ``handoffs`` and an event
(``composition.handoff``, ``composition.handoff_refused``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from trackway.engine import Decision, FlowChart, Scope, flow_chart, thaw
from trackway.tools import Tool, define_tool

from ..messages._errors import AgentBuildError
from ..runtime._agent import Agent
from ._composition import Composition, _finish, _noop, _options, _seed
from ._slots import check_count, member_input, runner_of

__all__ = ["HANDOFF_TOOL", "build_swarm", "handoff_tool", "swarm"]

HANDOFF_TOOL = "handoff"
"""The handoff tool's default name (what a swarm looks for in a member's calls)."""


def handoff_tool(*, name: str = HANDOFF_TOOL) -> Tool:
    """The tool a swarm member calls to hand the conversation to another member: ``to`` (the
    member's name) and an optional ``note`` for it. Its result tells the model the handoff is
    made when its turn ends; the swarm, not the tool, decides whether it is accepted."""

    def execute(args: dict[str, Any], ctx: Any) -> str:
        return (
            f"Handing off to {args['to']} when your turn ends. End your turn with one short "
            "line for the person."
        )

    return define_tool(
        name=name,
        description=(
            "Hand the conversation to another member of your team, when they should take "
            "over rather than you answer. Name the member in `to`; `note` says what they need."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "to": {"type": "string", "description": "The member who takes over."},
                "note": {"type": "string", "description": "What they need to know."},
            },
            "required": ["to"],
            "additionalProperties": False,
        },
        execute=execute,
    )


def _declared(
    handoffs: Mapping[str, Sequence[str]] | None, names: list[str]
) -> dict[str, list[str]] | None:
    """``handoffs`` checked against the members (every name one of them, none to itself)."""
    if handoffs is None:
        return None
    if not isinstance(handoffs, Mapping):
        raise AgentBuildError("swarm: handoffs= takes {member: [the members it may hand off to]}")
    out: dict[str, list[str]] = {}
    for source, targets in handoffs.items():
        if isinstance(targets, str) or not isinstance(targets, Sequence):
            raise AgentBuildError(f"swarm: handoffs[{source!r}] must be a list of member names")
        for name in (source, *targets):
            if name not in names:
                raise AgentBuildError(
                    f"swarm: handoffs names {name!r}, which is not a member; use one of "
                    f"{', '.join(names)}"
                )
        if source in targets:
            raise AgentBuildError(f"swarm: handoffs lets {source!r} hand off to itself")
        out[source] = list(dict.fromkeys(targets))
    return out


def _asked(tool: str, history: Any) -> tuple[str, str]:
    """The last handoff a member's turn asked for: ``(to, note)``, or ``("", "")``."""
    to, note = "", ""
    for message in thaw(history) or []:
        for call in (message.get("tool_calls") or []) if isinstance(message, dict) else []:
            if isinstance(call, dict) and call.get("name") == tool:
                args = call.get("args")
                args = args if isinstance(args, dict) else {}
                to, note = str(args.get("to") or ""), str(args.get("note") or "")
    return to, note


def swarm(
    members: Mapping[str, Agent],
    *,
    entry: str | None = None,
    max_hops: int = 4,
    handoffs: Mapping[str, Sequence[str]] | None = None,
    tool: str = HANDOFF_TOOL,
    name: str = "swarm",
    **options: Any,
) -> Composition:
    """A swarm of ``members`` (by name; at least two), starting at ``entry`` (the first
    member by default); see the module docstring. ``handoffs`` declares who may hand off to
    whom (``{member: [members]}``; a member it leaves out hands off to none); without it any
    member may hand off to any other. ``options`` as every composition takes them
    (``store``, ``durability``, ``redact``). A swarm none of whose members has the handoff
    tool is refused: it could never hand off."""
    built = build_swarm(
        members,
        entry=entry,
        max_hops=max_hops,
        handoffs=handoffs,
        tool=tool,
        name=name,
        **options,
    )
    if not any(tool in member._cfg.tools for member in built.members.values()):
        raise AgentBuildError(
            f"swarm: no member has the handoff tool {tool!r}, so none can hand off; add "
            f".tool(handoff_tool()) to the members that may hand the conversation on"
        )
    return built


def build_swarm(
    members: Mapping[str, Agent],
    *,
    entry: str | None,
    max_hops: int,
    handoffs: Mapping[str, Sequence[str]] | None,
    tool: str,
    name: str,
    **options: Any,
) -> Composition:
    """:func:`swarm` without the handoff-tool check (a replay's stand-ins have no tools)."""
    kind = "swarm"
    if not isinstance(members, Mapping) or len(members) < 2:
        raise AgentBuildError("swarm needs at least two members, {name: runner}")
    checked: dict[str, Agent] = {}
    for member, runner in members.items():
        checked[member] = runner_of(kind, member, runner, checked)
    first = next(iter(checked)) if entry is None else entry
    if first not in checked:
        raise AgentBuildError(
            f"swarm: entry={entry!r} is not a member; use one of {', '.join(checked)}"
        )
    check_count(kind, "max_hops", max_hops, least=0)
    if not isinstance(tool, str) or not tool:
        raise AgentBuildError("swarm: tool= names the handoff tool the members call")
    names = list(checked)
    declared = _declared(handoffs, names)
    allowed = {n: declared.get(n, []) if declared is not None else [m for m in names if m != n]
               for n in names}  # fmt: skip

    def start(scope: Scope) -> None:
        settings: dict[str, Any] = {
            "entry": first,
            "max_hops": max_hops,
            "members": names,
            "tool": tool,
        }
        if declared is not None:  # kept only when declared: a swarm without stays as it was
            settings["handoffs"] = declared
        scope["swarm"] = settings
        scope["member"] = first
        scope["hop"] = 0

    def route(scope: Scope) -> Decision:
        member = str(scope["member"])
        return Decision(member, {"chosen": member, "hop": int(scope["hop"])})

    def decide(scope: Scope) -> Decision:
        member, hop = str(scope["member"]), int(scope["hop"])
        answer = scope[f"answer_{member}"]
        to, note = str(scope.get("handoff_to", "")), str(scope.get("handoff_note", ""))
        if not to:
            scope["current"] = answer
            return Decision("done", {"hop": hop, "why": "answered"})
        row: dict[str, Any] = {"hop": hop + 1, "from": member, "to": to}
        if hop >= max_hops:
            scope.append("handoffs", {**row, "status": "refused", "reason": "max_hops"})
            scope.emit(
                "composition.handoff_refused",
                {"from": member, "hop": hop + 1, "reason": "max_hops", "max_hops": max_hops},
            )
            scope["current"] = answer
            return Decision("done", {"hop": hop, "why": "max_hops"})
        scope["hop"] = hop + 1
        said = str(scope["user_message"])
        if to not in allowed[member]:
            reason = "unknown_member" if to not in names else "not_declared"
            scope.append("handoffs", {**row, "status": "refused", "reason": reason})
            scope.emit(
                "composition.handoff_refused",
                {"from": member, "hop": hop + 1, "reason": reason, "max_hops": max_hops},
            )
            why = (
                f"no member is named {to!r}" if to not in names else f"you cannot hand off to {to}"
            )
            can = ", ".join(allowed[member]) or "no one"
            scope["current"] = (
                f"Your handoff was refused: {why}. You can hand off to: {can}; or answer "
                f"yourself.\n\n{said}"
            )
            return Decision("again", {"hop": hop + 1, "why": reason})
        scope.append("handoffs", {**row, "status": "accepted"})
        scope.emit("composition.handoff", {"from": member, "to": to, "hop": hop + 1})
        scope["member"] = to
        scope["current"] = f"{said}\n\n(Handed over by {member}: {note})" if note else said
        return Decision("again", {"hop": hop + 1, "why": "handoff"})

    plain = member_input("current")

    def given(scope: Scope) -> dict[str, Any]:
        """The member's input; continuing a conversation, its earlier turns too: the member
        takes the conversation over, not one question."""
        out = plain(scope)
        prior = thaw(scope.get("prior_history", []))
        if prior:
            out["prior_history"] = prior
        return out

    def taken(member: str) -> Callable[[Scope], dict[str, Any]]:
        def out(child: Scope) -> dict[str, Any]:
            earlier = len(thaw(child.get("prior_history", [])) or [])  # not this turn's
            to, note = _asked(tool, (thaw(child.get("history", [])) or [])[earlier:])
            answer = child.get("final_answer", "")
            return {f"answer_{member}": answer, "handoff_to": to, "handoff_note": note}

        return out

    d = (
        flow_chart("_seed", _seed, id="_seed", description="Take the message")
        .then("_start", start, id="_start", description="The entry member")
        .decider("_route", route, id="_route")
    )
    for member, runner in checked.items():
        mounted = (
            flow_chart("_take", _noop, id="_take")
            .subflow(member, runner.spec(), id=member, input=given, output=taken(member))
            .build(name=member, chart_id=f"_member_swarm-{name}_{member}")
        )
        d = d.branch(member, member, mounted, id=f"_case_{member}")
    chart: FlowChart = (
        d.end()
        .decider("_handoff", decide, id="_handoff")
        .branch("again", "_again", _noop, id="_again", loop_to="_route")
        .branch("done", "_final", _finish("current"), id="_final")
        .end()
        .build(name=f"Swarm {name}", chart_id=f"swarm-{name}", description="Swarm")
    )

    def rebuild(swap: Callable[[str, Agent], Agent]) -> Composition:
        again = {n: swap(n, r) for n, r in checked.items()}
        return build_swarm(
            again,
            entry=first,
            max_hops=max_hops,
            handoffs=declared,
            tool=tool,
            name=name,
            **options,
        )

    return Composition(name, chart, max_hops + 2, _options(kind, options), checked, rebuild)
