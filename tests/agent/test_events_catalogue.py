"""The event catalogue (issue 38): every event trackway emits is registered with its payload's
TypedDict, the generated page is current, and real runs emit only what the catalogue says.

Two checks fail when an emitted name is not registered: a scan of the source (every name an
emit call is given, as a literal or resolved in its function), and runs of real agents whose
every heard event is checked by ``EventAudit`` (the served_at property does the same for every
drawn feature set).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any, NotRequired, TypedDict

import pytest

from tests.agent.test_served_at import LOGS, REPORT, WHO, memories, with_skills
from tests.law import assert_law
from trackway.agent import (
    EVENTS,
    Agent,
    EventAudit,
    EventSpec,
    LLMCall,
    Paused,
    Sequence,
    event_catalogue,
    load_recording,
    mock,
    replay,
    save_recording,
    sliding_window,
)
from trackway.agent.events import MEMBER_KEY, _registry, event, payload_problems, render_events_page
from trackway.agent.events._docs import REGENERATE
from trackway.agent.events._registry import _EVENTS
from trackway.engine import ConfigurationError, MemoryStore
from trackway.tools import (
    ToolContext,
    allow,
    ask_human,
    define_tool,
    deny,
    tool,
    tool_session_key,
)

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "guide" / "events.md"
SCANNED = ("agent", "tools", "serve", "trackway", "recorders")
"""Where events are emitted (the engine emits none of its own: it carries them)."""

EMITTERS = frozenset({"emit", "_emit", "_emit_built", "built"})
"""The names an emit call goes through: ``scope.emit``, the agent's ``_emit(scope, ...)``
helper, ``scope._emit_built`` (and its local alias), a session's ``emit`` callback."""

_NAME = re.compile(r"^[a-z][a-z_]*\.[a-z][a-z_]*$")

FORWARDERS = {
    "agent/context/_config.py:emit": "the agent's _emit helper itself",
    "agent/runtime/_agent_hooks.py:emit": "agent.emit: the user's own events",
    "agent/loop/_tool_run.py:emit": "the sessions' emit callback (tools/define/_sessions.py)",
    "agent/loop/_tool_run.py:_settle_together": "a concurrent call's held events, re-emitted",
    "agent/offer/_serve_skills.py:serve_skills": "the skill law's events (agent/skills/_law.py)",
    "serve/_hub.py:_fan_out": "the serve hub: heard events, handed to a feed",
    "serve/_hub.py:on_emit": "the serve hub: heard events, handed to a feed",
}
"""Emit calls whose name is a parameter or a loop variable, by ``path:function``: each
forwards names emitted (and scanned) elsewhere."""


class _Site(ast.NodeVisitor):
    """The emit calls of one module: ``(name or pattern, where)``, and the dynamic ones."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.names: list[tuple[str, str]] = []
        self.keys: list[tuple[str, frozenset[str], bool, str]] = []
        """Emits of a literal name with a dict literal payload: ``(name, its literal keys,
        whether it also spreads ``**`` something, where)``."""
        self.patterns: list[tuple[str, str]] = []
        self.dynamic: list[str] = []
        self._functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._functions.append(node)
        self.generic_visit(node)
        self._functions.pop()

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Tuple(self, node: ast.Tuple) -> None:
        # ("domain.what", {...}) appended to a list that is emitted later (the skill law)
        first = node.elts[0] if len(node.elts) == 2 else None
        if (
            isinstance(first, ast.Constant)
            and isinstance(first.value, str)
            and _NAME.match(first.value)
            and isinstance(node.elts[1], ast.Dict | ast.Name)
        ):
            self.names.append((first.value, f"{self.path}:{node.lineno}"))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if called in EMITTERS and node.args:
            self._emitted(node)
        self.generic_visit(node)

    def _emitted(self, node: ast.Call) -> None:
        where = f"{self.path}:{node.lineno}"
        for i, arg in enumerate(node.args[:2]):
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                self.names.append((arg.value, where))
                payload = node.args[i + 1] if len(node.args) > i + 1 else None
                if isinstance(payload, ast.Dict):
                    keys = [k.value for k in payload.keys if isinstance(k, ast.Constant)]
                    spread = any(k is None for k in payload.keys)
                    self.keys.append((arg.value, frozenset(map(str, keys)), spread, where))
                return
            if isinstance(arg, ast.JoinedStr):
                self.patterns.append((_pattern(arg), where))
                return
        function = self._functions[-1] if self._functions else None
        named = [a for a in node.args[:2] if isinstance(a, ast.Name) and a.id != "scope"]
        resolved = _assigned(function, named[0].id) if function and named else []
        if resolved:
            self.names += [(name, where) for name in resolved]
        else:
            self.dynamic.append(f"{self.path}:{function.name if function else '<module>'}")


def _assigned(function: ast.AST, variable: str) -> list[str]:
    """The string literals assigned to ``variable`` in ``function`` (``name = "a" if c else
    "b"``), or nothing when any assignment is not made of literals."""
    found: list[str] = []
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == variable for t in node.targets
        ):
            values = _literals(node.value)
            if not values or not all(_NAME.match(v) for v in values):
                return []
            found += values
    return found


def _literals(node: ast.expr) -> list[str]:
    """The names an expression can be: a literal, or either branch of ``a if c else b``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        body, orelse = _literals(node.body), _literals(node.orelse)
        return [*body, *orelse] if body and orelse else []
    return []


def _pattern(node: ast.JoinedStr) -> str:
    parts = [re.escape(v.value) if isinstance(v, ast.Constant) else r"[a-z_]+" for v in node.values]
    return "^" + "".join(parts) + "$"


def scan() -> _Site:
    """Every emit call in the scanned packages, merged into one."""
    merged = _Site("")
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            site = _Site(str(path.relative_to(ROOT)))
            site.visit(ast.parse(path.read_text(encoding="utf-8")))
            merged.names += site.names
            merged.patterns += site.patterns
            merged.dynamic += site.dynamic
            merged.keys += site.keys
    return merged


# -- the source ----------------------------------------------------------------------------


def test_every_name_the_source_emits_is_registered() -> None:
    found = scan()
    assert len(found.names) > 60  # the scan sees the emit calls (not an empty walk)
    missing = sorted({f"{n} (emitted at {w})" for n, w in found.names if n not in EVENTS})
    assert not missing, (
        "emitted but not registered in trackway/agent/events/ (add a TypedDict and one "
        f"event(...) line, then run `{REGENERATE}`):\n  " + "\n  ".join(missing)
    )
    for pattern, where in found.patterns:
        assert any(re.match(pattern, name) for name in EVENTS), (pattern, where)


def test_the_keys_of_a_literal_payload_fit_its_typeddict() -> None:
    found = scan().keys
    assert len(found) > 30
    for name, keys, spread, where in found:
        spec = EVENTS[name]
        if spec.extra is None:  # every key the literal names is one the TypedDict names
            assert keys <= spec.required | spec.optional, (where, sorted(keys - spec.required))
        if not spread:  # and, with nothing spread in, every required key is there
            assert spec.required <= keys, (where, sorted(spec.required - keys))


def test_an_emit_whose_name_is_not_a_literal_is_a_known_forwarder() -> None:
    unknown = sorted(set(scan().dynamic) - set(FORWARDERS))
    assert not unknown, (
        "an emit call whose name the scan cannot read: emit a literal name, or add the site to "
        f"FORWARDERS with what it forwards: {unknown}"
    )


def test_every_registered_name_is_emitted_somewhere() -> None:
    emitted = {name for name, _ in scan().names}
    assert sorted(set(EVENTS) - emitted) == []  # no registration outlives its emit


def test_the_scan_finds_literals_f_strings_tuples_and_resolved_names() -> None:
    site = _Site("m.py")
    site.visit(
        ast.parse(
            "def f(scope, a):\n"
            "    _emit(scope, 'tools.gate', {})\n"
            "    scope.emit(f'time.{a}', {})\n"
            "    name = 'tools.absent' if a else 'tools.coverage_declared'\n"
            "    _emit(scope, name, {})\n"
            "    events.append(('skill.moved', {}))\n"
            "    scope.emit(a, {})\n"
        )
    )
    assert sorted(n for n, _ in site.names) == [
        "skill.moved",
        "tools.absent",
        "tools.coverage_declared",
        "tools.gate",
    ]
    assert [re.match(p, "time.clock") is not None for p, _ in site.patterns] == [True]
    assert site.dynamic == ["m.py:f"]


# -- the page ------------------------------------------------------------------------------


def test_the_events_page_is_generated_from_the_registry() -> None:
    current = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
    assert current == render_events_page(), f"docs/guide/events.md is stale: run `{REGENERATE}`"


def test_the_page_lists_every_event_under_its_domain() -> None:
    page = render_events_page()
    for spec in event_catalogue():
        assert f"| `{spec.name}` |" in page
    row = page.index("| `agent.turn_start` |")
    assert page.index("### The `agent` events") < row < page.index("### The `artifacts` events")


# -- the registry --------------------------------------------------------------------------


# functional: this module's string annotations would hide NotRequired from a class body
_Probe = TypedDict("_Probe", {"id": str, "n": NotRequired[int]})  # noqa: UP013


class _Stringly(TypedDict):
    id: str
    n: NotRequired[int]


@pytest.fixture
def scratch() -> Any:
    """Registers probe events for one test and removes them after."""
    before = dict(_EVENTS)
    yield
    _EVENTS.clear()
    _EVENTS.update(before)


def test_an_event_is_a_typeddict_and_one_line(scratch: Any) -> None:
    spec = event("probe.seen", _Probe, "A probe was seen.")
    assert EVENTS["probe.seen"] is spec
    assert (spec.domain, spec.required, spec.optional) == ("probe", {"id"}, {"n"})
    assert payload_problems("probe.seen", {"id": "a"}) == []
    assert payload_problems("probe.seen", {"id": "a", "n": 1, MEMBER_KEY: "m"}) == []
    assert payload_problems("probe.seen", {"n": 1, "zz": 2}) == [
        "probe.seen: required key 'id' is missing",
        "probe.seen: key 'zz' is not in _Probe",
    ]
    assert payload_problems("probe.seen", [1]) == [
        "probe.seen: the payload is a list, not a mapping"
    ]
    assert payload_problems("probe.unknown", {}) == [
        "probe.unknown: not registered in trackway.agent.EVENTS"
    ]
    quoted = event("probe.quoted", _Probe, "A probe quoting a record.", extra="the record")
    assert payload_problems(quoted.name, {"id": "a", "anything": 1}) == []
    assert "*+ the record*" in render_events_page()


@pytest.mark.parametrize(
    ("name", "payload", "summary", "says"),
    [
        ("nodomain", _Probe, "s", "has no domain"),
        (".what", _Probe, "s", "has no domain"),
        ("probe.x", dict, "s", "must be a TypedDict"),
        ("probe.x", _Probe, " ", "one-line summary"),
        ("tools.gate", _Probe, "s", "registered twice"),
        ("probe.x", _Stringly, "s", "reads NotRequired keys"),
    ],
)
def test_a_bad_registration_is_refused(
    scratch: Any, name: str, payload: type, summary: str, says: str
) -> None:
    with pytest.raises(ConfigurationError, match=says):
        event(name, payload, summary)


def test_the_catalogue_is_sorted_and_read_only() -> None:
    specs = event_catalogue()
    assert [(s.domain, s.name) for s in specs] == sorted((s.domain, s.name) for s in specs)
    assert all(isinstance(s, EventSpec) and s.name.startswith(f"{s.domain}.") for s in specs)
    with pytest.raises(TypeError):
        EVENTS["x.y"] = specs[0]  # type: ignore[index]


def test_the_audit_allows_your_own_events_and_names_what_does_not_fit() -> None:
    audit = EventAudit(allow=["app.*"])
    audit.hear("app.progress", {"anything": 1})
    audit.hear("agent.iteration_start", {"iteration": 1})
    audit.check()
    audit.hear("agent.iteration_start", {"iteration": 1, "extra": 2})
    audit.hear("nope.never", {})
    audit.hear("nope.never", {})  # said once
    with pytest.raises(AssertionError, match=r"2 event\(s\)[\s\S]*'extra'[\s\S]*nope.never"):
        audit.check()
    assert audit.heard[-1] == "nope.never" and len(audit.heard) == 5


def test_the_fixture_checks_the_events_of_the_test(event_audit: EventAudit) -> None:
    agent = Agent.create(provider=mock(reply="hi"), model="m").recorder(event_audit).build()
    agent.run_sync("hello")
    assert "agent.turn_end" in event_audit.heard  # checked again when the test ends
    assert_law(agent)


# -- real runs -----------------------------------------------------------------------------

LOOKUP = define_tool(
    name="lookup",
    description="Look a word up.",
    input_schema={"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
    execute=lambda args, ctx: f"{args['q']}: found",
)


def calls(*items: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"id": i, "name": n, "args": a} for i, n, a in items]}


def audited(agent: Agent, audit: EventAudit) -> Agent:
    """``agent`` with ``audit`` listening to every event (the path ``agent.on`` serves,
    member keys included) and checked against the log afterwards by :func:`kept`."""
    agent.on("*", audit)
    return agent


def kept(runner: Any) -> EventAudit:
    """The events the last run's log (or a loaded recording) keeps, checked."""
    snap = runner.snapshot() if hasattr(runner, "snapshot") else runner
    audit = EventAudit()
    audit.check_events(e for c in snap.history() for e in c.events)
    audit.check()
    return audit


async def _progressing(args: dict[str, Any], ctx: ToolContext) -> str:
    ctx.progress({"step": 1})
    return f"{args['q']}: slow"


_USAGE = {"input_tokens": 50, "output_tokens": 5}
FIXTURE = Path(__file__).parent / "fixtures" / "recording-events-v1.jsonl"


def chain_agent() -> Agent:
    """A tool chain, streamed, priced over a budget, gated, warned about bad arguments, cut
    at a result cap and nudged on a repeat (the run kept in ``FIXTURE``, made by this)."""
    slow = define_tool(
        name="slow",
        description="Slowly.",
        input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
        execute=_progressing,
    )
    replies = [
        {**calls(("a", "lookup", {"q": "x"}), ("b", "slow", {"q": "y"})), "usage": _USAGE},
        {
            **calls(("c", "lookup", {"q": 1}), ("d", "missing", {}), ("f", "lookup", {"q": "z"})),
            "usage": _USAGE,
        },
        {**calls(("e", "lookup", {"q": "x"})), "usage": _USAGE},
        {"content": "done", "usage": _USAGE},
    ]
    return (
        Agent.create(
            provider=mock(replies=replies, stream=True),
            model="m-1",
            stream=True,
            tool_arg_validation="warn",
            pricing_table={"m-1": {"input": 1.0, "output": 2.0}},
            cost_budget=(0.0000001, "warn"),
            max_tool_result_chars=6,
        )
        .tool(LOOKUP)
        .tool(slow)
        .gate(lambda call, ctx: deny("no z") if call["args"].get("q") == "z" else allow())
        .build()
    )


CHAIN_EVENTS = (
    "stream.token",
    "stream.tool_progress",
    "tools.result_truncated",
    "validation.args_invalid",
    "tools.error",
    "cost.budget_exceeded",
    "tools.repeated_call",
    "tools.gate",
    "agent.turn_end",
)


def test_a_tool_chain_streamed_priced_gated_and_warned() -> None:
    audit = EventAudit()
    agent = audited(chain_agent(), audit)
    assert agent.run_sync("go") == "done"
    audit.check()
    for name in CHAIN_EVENTS:
        assert name in audit.heard, name
    assert set(kept(agent).heard) == set(audit.heard)
    assert_law(agent)


class _CountingReads(dict[str, Any]):
    reads = 0

    def __getitem__(self, key: str) -> Any:
        type(self).reads += 1
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        type(self).reads += 1
        return super().get(key, default)


def test_emitting_never_reads_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_registry, "_EVENTS", _CountingReads(_EVENTS))
    _CountingReads.reads = 0
    heard: list[str] = []
    agent = chain_agent()
    agent.on("*", lambda event: heard.append(event.name))
    assert agent.run_sync("go") == "done"
    assert len(heard) > 30 and _CountingReads.reads == 0  # the hot path never looks it up
    EventAudit().hear("tools.gate", {})
    assert _CountingReads.reads == 1  # the check does (so the count is live)


def test_a_recording_from_this_version_loads_replays_and_its_events_fit() -> None:
    loaded = load_recording(FIXTURE)
    assert assert_law(loaded) == 4
    events = kept(loaded)  # every event the old recording keeps is still in the catalogue
    assert set(CHAIN_EVENTS) <= set(events.heard)
    replayed = replay(loaded)  # hermetic: no agent, no tools, no model
    assert [c.writes for c in replayed.history()] == [c.writes for c in loaded.history()]
    # a replay serves the recorded tool outcomes (no tool runs, so fewer events): what it
    # does emit fits the catalogue too
    replayed_events = kept(replayed)
    assert "agent.turn_end" in replayed_events.heard


def test_a_pause_and_its_resume() -> None:
    audit = EventAudit()
    agent = audited(
        Agent.create(
            provider=mock(replies=[calls(("q1", "ask_human", {"question": "Which?"})), "noted"]),
            model="m",
        )
        .tool(ask_human())
        .build(),
        audit,
    )
    out = agent.run_sync("go")
    assert isinstance(out, Paused)
    assert agent.resume_sync(out.checkpoint, "that one") == "noted"
    audit.check()
    assert {"agent.paused", "agent.resumed"} <= set(audit.heard)
    assert_law(agent)


def test_a_credential_consent_and_a_tool_session() -> None:
    audit = EventAudit()
    closed: list[str] = []

    @tool(needs=["github"])
    def issues(repo: str, ctx: ToolContext) -> str:
        """List a repository's open issues."""
        key = tool_session_key(ctx, "run")
        assert key is not None
        ctx.on_teardown(lambda: closed.append(key), scope="run")
        return f"3 open in {repo}"

    replies = [
        calls(("a", "issues", {"repo": "x/y"})),
        calls(("b", "issues", {"repo": "x/z"})),
        "Done.",
    ]
    agent = audited(
        Agent.create(provider=mock(replies=replies), model="m")
        .tool(issues)
        .credentials(lambda name, identity: "secret")
        .build(),
        audit,
    )
    out = agent.run_sync("go")
    assert isinstance(out, Paused) and out.kind == "consent"
    assert agent.resume_sync(out.checkpoint, "approve") == "Done."
    audit.check()
    for name in (
        "credential.consent",
        "tools.session_started",
        "tools.session_reused",
        "tools.session_closed",
    ):
        assert name in audit.heard, name
    assert closed
    assert_law(agent)


def test_findings_and_a_window() -> None:
    audit = EventAudit()
    replies = [
        calls(("a", "lookup", {"q": "one"})),
        calls(("b", "lookup", {"q": "two", "_findings": {"basis": "direct"}})),
        calls(
            (
                "c",
                "lookup",
                {"q": "three", "_findings": {"previous": [{"id": "a", "standing": "fact"}]}},
            )
        ),
        "done",
    ]
    agent = audited(
        Agent.create(provider=mock(replies=replies), model="m")
        .tool(LOOKUP)
        .findings()
        .window(sliding_window(keep_recent_turns=1), keep_last_tool_results=1)
        .build(),
        audit,
    )
    assert agent.run_sync("go") == "done"
    audit.check()
    assert {"findings.declared", "findings.standing", "context.window"} <= set(audit.heard)
    assert_law(agent)


def test_a_composition_member_is_named_on_what_listeners_hear() -> None:
    audit = EventAudit()
    worker = Agent.create(
        provider=mock(replies=[calls(("a", "lookup", {"q": "w"})), "found"]), model="m"
    )
    flow = (
        Sequence.create(name="flow")
        .step("look", worker.tool(LOOKUP).build())
        .step("say", LLMCall.create(provider=mock(reply="said"), model="m").build())
        .build()
    )
    members: list[Any] = []
    flow.on("*", audit)
    flow.on("stream.tool_end", lambda e: members.append(e.payload.get(MEMBER_KEY)))
    assert flow.run_sync("go") == "said"
    audit.check()
    assert "composition.turn_end" in audit.heard and members == ["look"]
    kept(flow)
    assert_law(flow)


@pytest.mark.filterwarnings("ignore::trackway.agent.CacheWarning")
def test_skills_tool_choice_and_memory() -> None:
    audit = EventAudit()
    store = MemoryStore()
    earlier = Agent.create(provider=mock(reply="ok"), model="m-1", store=store)
    earlier.memory(*memories("all")).build().run_sync("earlier", identity=WHO)
    replies = [
        calls(("a", "mover", {"q": "a"})),
        calls(("b", "pusher", {"q": "p"}), ("c", "mover", {"q": "x"})),
        calls(("d", "read_skill", {"id": "s1"}), ("e", "mover", {"q": "z"})),
        "done",
    ]
    builder = Agent.create(provider=mock(replies=replies), model="m-1", store=store)
    with_skills(builder, {"skills": "guard", "instructions": True, "choice": "top2"})
    agent = audited(builder.memory(*memories("all")).build(), audit)
    assert agent.run_sync("go", identity=WHO) == "done"
    audit.check()
    for name in (
        "skill.entry",
        "skill.moved",
        "tools.effect",
        "tool_choice.picked",
        "tool_choice.outcome",
        "memory.recalled",
        "memory.written",
    ):
        assert name in audit.heard, name
    kept(agent)
    assert_law(agent)


def test_a_period_verdict_is_said_without_an_instant() -> None:
    audit = EventAudit()
    periods: list[dict[str, Any]] = []
    replies = [
        calls(
            ("a", "report", {"q": "zz"}),  # a described result with a period
            ("b", "report", {"q": ""}),  # an absence whose store is unknown
            ("c", "logs", {"q": "e"}),  # a tool that owes a period and says none
            ("d", "report", {"q": "abc"}),  # coverage without a period: no event
        ),
        "done",
    ]
    agent = audited(
        Agent.create(provider=mock(replies=replies), model="m").tool(REPORT).tool(LOGS).build(),
        audit,
    )
    agent.on("findings.period", lambda event: periods.append(dict(event.payload)))
    assert agent.run_sync("go") == "done"
    audit.check()
    rows = {r["id"]: r for r in agent.snapshot().state["coverage_declared"]}
    assert periods == [
        {"id": "a", "name": "report", "iteration": 1, "verdict": rows["a"]["verdict"]},
        {"id": "b", "name": "report", "iteration": 1, "verdict": "unknown"},
        {"id": "c", "name": "logs", "iteration": 1, "verdict": "undeclared"},
    ]
    assert "2026" not in str(periods)  # the verdict word only
    replayed = replay(agent.snapshot())  # a replay says the same
    said = [e.payload for c in replayed.history() for e in c.events if e.name == "findings.period"]
    assert [dict(p) for p in said] == periods
    assert_law(agent)


if __name__ == "__main__":  # python -m tests.agent.test_events_catalogue: writes the fixture
    made = chain_agent()
    made.run_sync("go")
    save_recording(made, FIXTURE)
