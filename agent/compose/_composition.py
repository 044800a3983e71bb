"""Compositions: runners made of runners, on one record.

``LLMCall`` is one model call with no tools. ``Sequence`` hands each step the previous step's
answer; ``Parallel`` runs its branches concurrently and lists their answers in declaration
order (or hands them to ``.merge(...)``: a function or a judge runner); ``Conditional`` lets
the first predicate that holds pick a member; ``Loop`` runs its body until a predicate
holds or ``max_rounds`` is reached. A composition is one flowchart whose members are
isolated subflows: one run id, one commit log, one recording; the identity and session
reach every member; a member that pauses pauses the whole, and ``resume`` continues it.
Every composition shares the Agent's surface (``run``, ``run_sync``, ``resume``, ``on``,
``attach``, ``snapshot``, ``spec``, ``checkpoint``, ``commit_count``) and nests freely.

Structural stages and mounts have ids starting with ``_``; ``receipts`` and ``served_at``
name a member by its step or branch name (nested members by a dotted path).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from trackway.engine import Decision, FlowChart, Scope, flow_chart, thaw
from trackway.engine.core._keywords import unknown_keyword_message

from ..context._config import AgentConfig
from ..loop._inputs import Runtime
from ..messages._errors import AgentBuildError
from ..providers._mock import MockProvider
from ..providers._provider import Provider
from ..runtime._agent import Agent

__all__ = ["Composition", "Conditional", "LLMCall", "Loop", "Parallel", "Sequence"]

Runner = Agent
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")


def _member_name(kind: str, name: Any, taken: Mapping[str, Any]) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise AgentBuildError(
            f"{kind}: member name {name!r} must start with a letter and hold letters, digits, "
            "'_' or '-' (at most 64): receipts and served_at name members by it"
        )
    if name in taken:
        raise AgentBuildError(f"{kind}: two members are named {name!r}; names are unique")
    return name


def _runner(kind: str, name: str, runner: Any) -> Agent:
    if not isinstance(runner, Agent):
        raise AgentBuildError(
            f"{kind}: member {name!r} must be a runner (an Agent, LLMCall or another "
            f"composition), not {runner!r}"
        )
    return runner


def _seed(scope: Scope) -> None:
    """The composition's own turn: the person's message, and the conversation so far."""
    message = scope["message"]
    prior = thaw(scope.get("prior_history", []))
    scope["user_message"] = message
    scope["current"] = message
    scope.extend("history", [*prior, {"role": "user", "content": message}])


def member_input(source: str) -> Callable[[Scope], dict[str, Any]]:
    """A member's input: ``source`` as its message, and the caller (identity, session)."""

    def given(scope: Scope) -> dict[str, Any]:
        out: dict[str, Any] = {"message": str(scope[source])}
        for key in ("identity", "session_id"):  # the caller reaches every member
            if scope.get(key) is not None:
                out[key] = scope[key]
        return out

    return given


def _member_output(name: str, *also: str) -> Callable[[Scope], dict[str, Any]]:
    def taken(child: Scope) -> dict[str, Any]:
        answer = child.get("final_answer", "")
        return {f"answer_{name}": answer, **dict.fromkeys(also, answer)}

    return taken


def _finish(source: str) -> Callable[[Scope], None]:
    def final(scope: Scope) -> None:
        scope["final_answer"] = scope[source]
        scope.emit("composition.turn_end", {"answer": scope[source]})

    return final


def _noop(scope: Scope) -> None:
    """A structural stage (a chart starts with a stage)."""


def _wrapped(name: str, runner: Agent, chart_id: str) -> FlowChart:
    """``runner`` mounted isolated in a chart of its own (a branch target shares state)."""
    return (
        flow_chart("_take", _noop, id="_take")
        .subflow(
            name,
            runner.spec(),
            id=name,
            input=member_input("current"),
            output=_member_output(name),
        )
        .build(name=name, chart_id=f"_member_{chart_id}_{name}")
    )


Rebuild = Callable[[Callable[[str, Agent], Agent]], "Composition"]


class Composition(Agent):
    """A runner made of runners (see the module docstring)."""

    members: dict[str, Agent]
    """The members by name (a parallel's judge is ``"judge"``)."""

    def __init__(
        self,
        name: str,
        chart: FlowChart,
        rounds: int,
        runtime: Runtime | None,
        members: Mapping[str, Agent],
        rebuild: Rebuild,
    ) -> None:
        self.members = dict(members)
        self._rebuild = rebuild
        cfg = AgentConfig(
            provider=MockProvider(replies=[]),  # never called: members have their own
            model="composition",
            max_iterations=max(rounds, 1),
            options={},
            name=name,
            system=None,
            tools={},
            configure=None,
            output_model=None,
            output_retries=0,
            wrap_up=False,
            stream=False,
        )
        super().__init__(cfg, chart, [], runtime)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}: {', '.join(self.members)}>"

    def with_members(self, swap: Callable[[str, Agent], Agent]) -> Composition:
        """The same composition with each member replaced by ``swap(name, member)`` (how a
        replay puts recorded members in)."""
        return self._rebuild(swap)


def _options(kind: str, options: Mapping[str, Any]) -> Runtime:
    accepted = ("name", "store", "durability", "redact")
    unknown = [key for key in options if key not in accepted]
    if unknown:
        raise AgentBuildError(unknown_keyword_message(f"{kind}.create()", unknown[0], accepted))
    return Runtime(
        store=options.get("store"),
        durability=options.get("durability", "sync"),
        redact=options.get("redact"),
    )


class LLMCall:
    """One model call, no tools: ``LLMCall.create(provider=..., system=...).build()``."""

    @staticmethod
    def create(
        *, provider: Provider, model: str | None = None, system: str | None = None, **options: Any
    ) -> Any:
        if "max_iterations" in options:
            raise AgentBuildError("LLMCall makes one model call: leave max_iterations out")
        builder = Agent.create(provider=provider, model=model, max_iterations=1, **options)
        return builder.system(system) if system is not None else builder


class Sequence:
    """Steps in order; each gets the previous step's answer (the first, the message)."""

    def __init__(self, name: str, options: Mapping[str, Any]) -> None:
        self._name, self._options = name, options
        self._steps: dict[str, Agent] = {}

    @staticmethod
    def create(*, name: str = "sequence", **options: Any) -> Sequence:
        return Sequence(name, options)

    def step(self, name: str, runner: Agent) -> Sequence:
        self._steps[_member_name("Sequence.step", name, self._steps)] = _runner(
            "Sequence", name, runner
        )
        return self

    def build(self) -> Composition:
        if not self._steps:
            raise AgentBuildError("Sequence needs at least one .step(name, runner)")
        b = flow_chart("_seed", _seed, id="_seed", description="Take the message")
        for name, runner in self._steps.items():
            b = b.subflow(
                name,
                runner.spec(),
                id=name,
                input=member_input("current"),
                output=_member_output(name, "current"),
            )
        chart = b.then("_final", _finish("current"), id="_final").build(
            name=f"Sequence {self._name}", chart_id=f"sequence-{self._name}", description="Sequence"
        )

        def rebuild(swap: Callable[[str, Agent], Agent]) -> Composition:
            again = Sequence(self._name, self._options)
            for n, r in self._steps.items():
                again.step(n, swap(n, r))
            return again.build()

        return Composition(
            self._name, chart, 1, _options("Sequence", self._options), self._steps, rebuild
        )


class Parallel:
    """Branches run concurrently; the answer lists their answers in declaration order, each
    under its name, unless ``.merge(fn_or_runner)`` makes it."""

    def __init__(self, name: str, options: Mapping[str, Any]) -> None:
        self._name, self._options = name, options
        self._branches: dict[str, Agent] = {}
        self._merge: Any = None

    @staticmethod
    def create(*, name: str = "parallel", **options: Any) -> Parallel:
        return Parallel(name, options)

    def branch(self, name: str, runner: Agent) -> Parallel:
        self._branches[_member_name("Parallel.branch", name, self._branches)] = _runner(
            "Parallel", name, runner
        )
        return self

    def merge(self, merge: Callable[[dict[str, str]], str] | Agent) -> Parallel:
        """``fn(answers) -> str`` (answers by branch name, in order), or a runner (a judge)
        that is given the listed answers as its message."""
        if not callable(merge) and not isinstance(merge, Agent):
            raise AgentBuildError("Parallel.merge takes a function (answers) -> str or a runner")
        self._merge = merge
        return self

    def build(self) -> Composition:
        if len(self._branches) < 2:
            raise AgentBuildError("Parallel needs at least two .branch(name, runner)")
        names = list(self._branches)

        def listed(scope: Scope) -> None:
            answers = {n: str(scope[f"answer_{n}"]) for n in names}
            if callable(self._merge) and not isinstance(self._merge, Agent):
                scope["current"] = str(self._merge(answers))
            else:
                scope["current"] = "\n\n".join(f"{n}: {a}" for n, a in answers.items())

        branches = {n: (n, _wrapped(n, r, self._name)) for n, r in self._branches.items()}
        b = (
            flow_chart("_seed", _seed, id="_seed", description="Take the message")
            .fork("_members", branches, id="_members")
            .then("_gather", listed, id="_gather", description="List the answers")
        )
        if isinstance(self._merge, Agent):
            if "judge" in self._branches:
                raise AgentBuildError(
                    "Parallel: a branch is named 'judge', the name of the merge runner; "
                    "rename the branch"
                )
            b = b.subflow(
                "judge",
                self._merge.spec(),
                id="judge",
                input=member_input("current"),
                output=_member_output("judge", "current"),
            )
        chart = b.then("_final", _finish("current"), id="_final").build(
            name=f"Parallel {self._name}", chart_id=f"parallel-{self._name}", description="Parallel"
        )
        members = dict(self._branches)
        if isinstance(self._merge, Agent):
            members["judge"] = self._merge

        def rebuild(swap: Callable[[str, Agent], Agent]) -> Composition:
            again = Parallel(self._name, self._options)
            for n, r in self._branches.items():
                again.branch(n, swap(n, r))
            judge = self._merge
            if judge is not None:
                again.merge(swap("judge", judge) if isinstance(judge, Agent) else judge)
            return again.build()

        return Composition(
            self._name, chart, 1, _options("Parallel", self._options), members, rebuild
        )


class Conditional:
    """The first ``when(predicate, ...)`` whose predicate holds picks the member (predicates
    read the message and the state); ``otherwise`` when none does."""

    def __init__(self, name: str, options: Mapping[str, Any]) -> None:
        self._name, self._options = name, options
        self._cases: list[tuple[Callable[[str, Mapping[str, Any]], bool], str, Agent]] = []
        self._otherwise: tuple[str, Agent] | None = None

    @staticmethod
    def create(*, name: str = "conditional", **options: Any) -> Conditional:
        return Conditional(name, options)

    def _taken(self) -> dict[str, Any]:
        names: dict[str, Any] = {n: 1 for _, n, _ in self._cases}
        if self._otherwise is not None:
            names[self._otherwise[0]] = 1
        return names

    def when(
        self, predicate: Callable[[str, Mapping[str, Any]], bool], name: str, runner: Agent
    ) -> Conditional:
        if not callable(predicate):
            raise AgentBuildError(
                "Conditional.when(predicate, name, runner): predicate(message, state) -> bool"
            )
        name = _member_name("Conditional.when", name, self._taken())
        self._cases.append((predicate, name, _runner("Conditional", name, runner)))
        return self

    def otherwise(self, name: str, runner: Agent) -> Conditional:
        name = _member_name("Conditional.otherwise", name, self._taken())
        self._otherwise = (name, _runner("Conditional", name, runner))
        return self

    def build(self) -> Composition:
        if not self._cases or self._otherwise is None:
            raise AgentBuildError(
                "Conditional needs at least one .when(...) and an .otherwise(...)"
            )
        cases, fallback = list(self._cases), self._otherwise

        def pick(scope: Scope) -> Decision:
            message = str(scope["message"])
            view = {k: scope.get(k) for k in ("message", "identity", "session_id")}
            for index, (predicate, name, _) in enumerate(cases):
                if predicate(message, view):
                    scope["chosen"] = name
                    return Decision(name, {"chosen": name, "case": index})
            scope["chosen"] = fallback[0]
            return Decision(fallback[0], {"chosen": fallback[0], "case": "otherwise"})

        def chosen_answer(scope: Scope) -> None:
            scope["current"] = scope[f"answer_{scope['chosen']}"]

        d = flow_chart("_seed", _seed, id="_seed").decider("_pick", pick, id="_pick")
        for _, name, runner in [*cases, (None, *fallback)]:
            d = d.branch(name, name, _wrapped(name, runner, self._name), id=f"_case_{name}")
        chart = (
            d.end()
            .then("_gather", chosen_answer, id="_gather")
            .then("_final", _finish("current"), id="_final")
            .build(
                name=f"Conditional {self._name}",
                chart_id=f"conditional-{self._name}",
                description="Conditional",
            )
        )

        def rebuild(swap: Callable[[str, Agent], Agent]) -> Composition:
            again = Conditional(self._name, self._options)
            for predicate, n, r in cases:
                again.when(predicate, n, swap(n, r))
            again.otherwise(fallback[0], swap(fallback[0], fallback[1]))
            return again.build()

        members = {n: r for _, n, r in cases} | {fallback[0]: fallback[1]}
        return Composition(
            self._name, chart, 1, _options("Conditional", self._options), members, rebuild
        )


class Loop:
    """``body`` runs on the message, then on its own last answer, until ``until(answer,
    round)`` holds or ``max_rounds`` rounds ran (the answer is the last one)."""

    def __init__(self, body: Agent, name: str, options: Mapping[str, Any]) -> None:
        self._body = _runner("Loop", "body", body)
        self._name, self._options = name, options
        self._until: Callable[[str, int], bool] | None = None
        self._rounds = 3

    @staticmethod
    def create(body: Agent, *, name: str = "loop", **options: Any) -> Loop:
        return Loop(body, name, options)

    def until(self, predicate: Callable[[str, int], bool]) -> Loop:
        if not callable(predicate):
            raise AgentBuildError("Loop.until(predicate): predicate(answer, round) -> bool")
        self._until = predicate
        return self

    def max_rounds(self, n: int) -> Loop:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise AgentBuildError(f"Loop.max_rounds({n!r}): use a whole number ≥ 1")
        self._rounds = n
        return self

    def build(self) -> Composition:
        until, rounds = self._until, self._rounds

        def judge(scope: Scope) -> Decision:
            done = int(scope.get("round", 0)) + 1
            scope["round"] = done
            answer = str(scope["current"])
            met = until is not None and bool(until(answer, done))
            if met or done >= rounds:
                why = "until held" if met else f"max_rounds ({rounds}) reached"
                return Decision("done", {"round": done, "why": why})
            return Decision("again", {"round": done})

        chart = (
            flow_chart("_seed", _seed, id="_seed")
            .subflow(
                "body",
                self._body.spec(),
                id="body",
                input=member_input("current"),
                output=_member_output("body", "current"),
            )
            .decider("_until", judge, id="_until")
            .branch("again", "_again", _noop, id="_again", loop_to="body")
            .branch("done", "_final", _finish("current"), id="_final")
            .end()
            .build(name=f"Loop {self._name}", chart_id=f"loop-{self._name}", description="Loop")
        )

        def rebuild(swap: Callable[[str, Agent], Agent]) -> Composition:
            again = Loop(swap("body", self._body), self._name, self._options).max_rounds(rounds)
            return again.until(until).build() if until is not None else again.build()

        members = {"body": self._body}
        return Composition(
            self._name, chart, rounds + 2, _options("Loop", self._options), members, rebuild
        )
