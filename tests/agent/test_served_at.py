"""The conformance law: every model request can be rebuilt from the log, byte for byte."""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from tests.examples import examples
from trackway.agent import (
    Agent,
    AgentBuildError,
    AnswerDeniedError,
    AnswerValidationLimits,
    EventAudit,
    InputRefusedError,
    MessageDeniedError,
    ProviderConnectionError,
    ReplayDivergence,
    UnsupportedValuesError,
    act,
    assess_answer,
    chat_bubble_live_status,
    claim,
    classifier_scorer,
    define_instruction,
    define_memory,
    define_ontology,
    define_skill,
    load_recording,
    mock,
    model_gateway,
    ontology_piece,
    propose_transition,
    receipts,
    replay,
    require_instruction,
    route,
    save_recording,
    served_at,
    skill_graph,
    sliding_window,
    summarize_oldest,
    token_budget,
    with_fallback,
)
from trackway.agent.classify import ClassifierError, mock_classifier
from trackway.engine import MemoryStore, Snapshot, SqliteStore, thaw
from trackway.engine.stores._artifact_rows import ArtifactRow
from trackway.tools import (
    RunStoreArtifacts,
    ToolCallRefusedError,
    absent,
    allow,
    coverage,
    define_tool,
    deny,
    described_result,
    gated_tools,
    scrub,
    withhold,
)
from trackway.tools.artifacts._store import meta_of, mint
from trackway.tools.runner import code_runner_tool, local_code_runner

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


def lookup(args, ctx):
    if args["q"] == "boom":
        raise RuntimeError("tool exploded")
    return {"answer": args["q"].upper(), "n": len(args["q"])}


TOOL = define_tool(
    name="lookup", description="Look things up.", input_schema=SCHEMA, execute=lookup
)


async def slow_lookup(args, ctx):
    """The same lookup, async and slower for shorter queries: the calls of one answer run
    at once and finish out of call order."""
    await anyio.sleep(0.004 / (1 + len(str(args.get("q", "")))))
    ctx.progress({"q": args.get("q")})
    return lookup(args, ctx)


ASYNC_TOOL = define_tool(
    name="lookup", description="Look things up.", input_schema=SCHEMA, execute=slow_lookup
)


async def relay(args, ctx):
    """Look up through the agent's own lookup (its checks, gates and links), and once more
    with arguments its schema refuses."""
    got = await ctx.tools.call("lookup", {"q": args["q"]})
    try:
        await ctx.tools.call("lookup", {"q": 1})
    except ToolCallRefusedError as exc:
        return f"{got.status}: {got} | {exc}"
    raise AssertionError("a refused nested call ran")


RELAY = define_tool(
    name="relay", description="Look up by relay.", input_schema=SCHEMA, execute=relay
)

# the code runner: one interpreter per run (state, a traceback, cut output, a killed loop)
CODE = code_runner_tool(runner=local_code_runner(time_limit=0.3, output_limit=40))


MARK = "qqshort"  # record-only words (short) that must never be served


def report(args, ctx):
    """A declared result chosen by the query: nothing found, a ledger, or typed facts."""
    q = args["q"]
    ground = {
        "checked": [{"what": f"every row of the export for {q!r}", "short": f"{MARK} rows"}],
        "not_checked": [{"what": "the archive", "why": "not mounted", "kind": "scope"}],
    }
    period = {"queried": {"from": "2026-01-01T00:00:00Z", "to": "2026-01-02T00:00:00Z"}}
    if not q:
        return absent(
            what="rows for an empty query", period={**period, "held": "unknown"}, **ground
        )
    if q[0] in "abc":
        return coverage({"n": len(q)}, **ground)
    held = {"from": "2025-12-31T00:00:00Z", "to": "2026-01-01T12:00:00+00:00"}
    return described_result(facts=[{"q": q}], coverage=ground, period={**period, "held": held})


REPORT = define_tool(name="report", description="Report rows.", input_schema=SCHEMA, execute=report)
LOGS = define_tool(
    name="logs",
    description="Search logs.",
    input_schema={
        "type": "object",
        "properties": {"q": {"type": "string"}, "window": {"type": "string", "enum": ["1h", "2h"]}},
        "required": ["q", "window"],
    },
    execute=lambda args, ctx: f"{args['q']} over {args['window']}",
    ask_or_assume={"window": {"assume": "2h"}},
    period={"argument": "window"},
)


HIDDEN = "qqhid"  # a hidden skill's id: never in what the library serves


def mover(args, ctx):
    """A skill tool whose typed effects depend on the query: proposals (reachable, hidden,
    unknown), pushed instructions (both leases, an unknown id), a bad kind, a denial."""
    q = args.get("q") or "-"
    effects = {
        "a": [propose_transition("s2", "go on")],
        "b": [propose_transition(HIDDEN)],
        "c": [propose_transition("nope")],
        "x": [require_instruction("ins", "next-call")],
        "y": [require_instruction("ins", "until-skill-exit")],
        "z": [{"kind": "teleport"}],
        "é": [require_instruction("no-such-instruction")],
    }.get(q[0])
    if effects is None:
        return {"content": f"denied {len(q)}", "effects": [], "status": "denied"}
    return {"content": f"moved {len(q)}", "effects": effects}


MOVER = define_tool(name="mover", description="Move on.", input_schema=SCHEMA, execute=mover)
PUSHER = define_tool(
    name="pusher", description="Push.", input_schema=SCHEMA, execute=lambda a, c: "pushed"
)
SKILLS = [
    define_skill(id="s1", title="First", body="Step one.", tools=[MOVER]),
    define_skill(id="s2", title="Second", body="Step two.", tools=[PUSHER]),
    define_skill(id=HIDDEN, title="Qqhidden", body="Quiet step.", tools=[MOVER], hidden=True),
]


def ranking(request):
    """A classifier's reading that depends only on the request: names scored by length."""
    scored = [[c.name, round(1 / (1 + len(c.name)), 3)] for c in request.criteria]
    return {"ranked": scored[:3], "chosen": scored[0][0] if scored else None}


def failing(request):
    raise ClassifierError("overloaded", status=529, retryable=True)


def with_skills(builder, feature):
    """The skills, instructions, graph and tool choice a drawn feature set declares."""
    mode = feature["skills"]
    if mode is not None:
        builder.skills(SKILLS)
        if mode != "free":
            graph = skill_graph(
                route("s1", "s2", on_tool_return="mover", on_tool_status="denied"),
                route("s2", "s1"),
                route("s1", HIDDEN, when=lambda state: state["iteration"] > 2),
                route(HIDDEN, "s2"),
                entry=["s1", "s2"],
                scorer=classifier_scorer(mock_classifier(ranking)) if mode == "guard" else None,
                strictness="guard" if mode == "scoped" else mode,
                continuity="conversation" if mode == "rails" else "turn",
            )
            builder.skill_graph(graph)
    if feature["instructions"]:
        builder.instruction(
            define_instruction(
                id="ins", prompt="Be brief.", active_when=lambda s: s["iteration"] % 2 == 0
            )
        )
    choice = feature["choice"]
    if choice is not None:
        serve = {"all": "all", "top1": {"top": 1}, "top2": {"top": 2}, "fail": {"top": 1}}[choice]
        classifier = mock_classifier(failing if choice == "fail" else ranking)
        builder.tool_choice(classifier=classifier, serve=serve)


WHO = {"tenant": "t-1", "principal": "p'%_"}


def memories(mode):
    """The memories a drawn feature declares (``cut``: bounds that cut what is served)."""
    cut = mode == "cut"
    recent = define_memory("recent", turns=1 if cut else 3, max_chars=25 if cut else None)
    if mode == "recent":
        return [recent]
    return [
        recent,
        define_memory("summary", summarize=lambda p, t: f"{p or ''}<{t.user[:5]}>"),
        define_memory(
            "facts", extract=lambda t: {t.user[:3]: t.answer[:4]}, max_facts=1 if cut else 9
        ),
    ]


def deny_x(call, ctx):
    """A gate: calls whose query mentions x are denied."""
    return deny("no x queries") if "x" in str(call["args"].get("q", "")) else allow()


features = st.fixed_dictionaries(
    {
        "report": st.sampled_from(["off", "tool", "provider"]),
        "ceiling": st.one_of(st.none(), st.integers(20, 400)),
        "logs": st.booleans(),
        "gate": st.booleans(),
        "limits": st.booleans(),
        "window": st.sampled_from([None, "sliding", "budget", "summary"]),
        "findings": st.lists(st.sampled_from(["fact", "open", "noise", "ruled-out"]), max_size=6),
        "cost": st.sampled_from([None, "warn", "halt"]),
        # async lookups run at once, this many at a time (None: the sync tool, in order)
        "parallel": st.sampled_from([None, 1, 2, 4]),
        # the run kept in a SQLite store: what a worker, recover() and `trackway show` read
        "stored": st.booleans(),
        # streamed (the provider's stream()) or not (complete(), called by call-llm itself)
        "stream": st.booleans(),
        # skills (free, or a graph at each strictness), instructions, tool choice
        "skills": st.sampled_from([None, "free", "scoped", "assist", "guard", "rails"]),
        "instructions": st.booleans(),
        "choice": st.sampled_from([None, "all", "top1", "top2", "fail"]),
        # middleware at the tool doors: links that pass, rewrite, deny, scrub or withhold
        "middleware": st.sampled_from([None, "pass", "rewrite", "deny", "scrub", "withhold"]),
        # a tool that calls a tool (ctx.tools.call): nested rows on the calling row
        "nested": st.booleans(),
        # memory recalled before the turn (filled by an earlier run for the same identity)
        "memory": st.sampled_from([None, "recent", "all", "cut"]),
        # middleware at the message doors: the person's message (passed, rewritten,
        # refused) and the answer (rewritten, denied when its length is odd), or both
        "messages": st.sampled_from(
            [None, "pass", "rewrite", "refuse", "answer", "deny-answer", "both"]
        ),
        # typed answers (with typed=True): the native strategy, a fallback chain run by
        # run_typed (a fallback, a canned answer, a fallback that raises before the canned)
        "output": st.sampled_from([None, "native", "fallback", "canned", "native-chain"]),
        # .self_explain(): trace tools over the last completed run of the conversation
        # ("primed": another agent on the same store completed one first)
        "explain": st.sampled_from([None, "fresh", "primed"]),
        # the evidence gate at each posture, over answers that state a number no tool gave
        "evidence": st.sampled_from([None, "assist", "guard", "rails"]),
        # claim contracts on the answer, checked in full or cut by their limits
        "validation": st.sampled_from([None, "claims", "cut"]),
        # the mock behind a fallback chain whose first provider is down, or a model gateway
        "fallback": st.sampled_from([None, "chain", "gateway"]),
        # reasoning asked for (thinking_budget) and returned: signed, redacted and unsigned
        # blocks on every scripted turn, sent back on the tool-use turns
        "thinking": st.sampled_from([None, "signed", "mixed"]),
        # a system_prompt_cache_policy function: the system breakpoint on odd calls only
        "cache_policy": st.sampled_from([None, "odd"]),
        # .thinking_handler(fn): one that adds a block to every answer, or changes nothing
        "thinking_handler": st.sampled_from([None, "note", "same"]),
        # .live_status(...) with a voice: an observer that writes nothing (one whose on_line
        # raises is tests/agent/test_live_status.py's: a recording keeps no recorder failure)
        "live": st.sampled_from([None, "bubble"]),
        # .artifacts(...): long results placed (their tickets served, cut by the cap too);
        # "want": first a long lookup is placed, then a tool redeems its ticket and a bad one
        "artifacts": st.sampled_from([None, "place", "want"]),
        # the code runner's tool (local_code_runner, real subprocesses)
        "code": st.booleans(),
        # .time(): the builder's zone and the real clock, or the run's own clock and zone
        # (across New York's fold), period lines shown in it
        "time": st.sampled_from([None, "builder", "run"]),
        # the event catalogue (issue 38): a listener on "*" that checks each event it hears
        # against trackway.agent.EVENTS (listening changes nothing the run records)
        "events": st.sampled_from([None, "listen"]),
        # .ontology(): the map served to every call, with the library's ask or none; its
        # via tools joined to the skills' (a hidden skill's id never served)
        "ontology": st.sampled_from([None, "use-the-map", "none"]),
        # -- window facts and compaction (issue 38) --
        # .findings(keep_ledger_facts=...) under the drawn window: the fact hold's ceiling
        # (None: the default 4; 0: off)
        "facts": st.sampled_from([None, 0, 1, 4]),
        # .compaction(...) when no window is drawn: folds past 120 served characters
        "compaction": st.booleans(),
        # --- findings ledger (issue 38): .findings(serve=, answer_ask=, judge=) when standings
        # are drawn; "assert": each fact stands on an assertion (facts disagree: conflicts);
        # "tower": prose answers quote small numbers the lookups carried (with the evidence
        # gate drawn, a value whose carriers were set aside is contingent)
        "findings_ledger": st.one_of(
            st.none(),
            st.fixed_dictionaries(
                {
                    "serve": st.sampled_from(["ledger-and-facts", "ledger-only"]),
                    "answer_ask": st.sampled_from(["none", "quote-facts"]),
                    "judge": st.sampled_from([None, "mock", "fail"]),
                    "assert": st.booleans(),
                    "tower": st.booleans(),
                }
            ),
        ),
        # --- end findings ledger
    }
)

RUN_CLOCK = {"now": "2026-11-01T01:30:00-05:00", "zone": "America/New_York"}


class Numbered(RunStoreArtifacts):
    """Artifacts with refs numbered in order, so a scripted model can name the first."""

    def __init__(self) -> None:
        super().__init__(MemoryStore())
        self.n = 0

    def put(self, data, *, kind, media_type, scope):
        self.n += 1
        meta = mint(bytes(data), kind, media_type, scope)
        parts = (scope.tenant, scope.principal, scope.conversation)
        row = ArtifactRow(f"art_{self.n:022d}", kind, meta.sha256, meta.size, media_type, *parts,
                          meta.created)  # fmt: skip
        return meta_of(self.store.artifact_put(row, bytes(data)))


def digest(args, ctx):
    return {"keys": sorted(args["ticket"]), "ref": ctx.wanted["ticket"].ref}


DIGEST = define_tool(
    name="digest",
    description="Digest a lookup result.",
    input_schema={"type": "object", "properties": {"ticket": {"type": "string"}}},
    execute=digest,
    wants={"ticket": "tool-result/lookup"},
)
WANTED = [
    {"tool_calls": [{"name": "lookup", "args": {"q": "a query long enough to be placed"}}]},
    {
        "tool_calls": [
            {"name": "digest", "args": {"ticket": "art_" + "0" * 21 + "1"}},
            {"name": "digest", "args": {"ticket": "art_" + "B" * 22}},
        ]
    },
]


LIVE = {"bubble": lambda line: None}


def odd_calls(call):
    """A cache policy function of the call number."""
    return "always" if call.k % 2 else "never"


class Down:
    """A provider that nothing answers: a fallback chain moves past it on every call."""

    name = "down"
    native_output = "response_format"  # as the mock behind it: typed native answers pass

    async def complete(self, request):
        raise ProviderConnectionError("down: nothing answers", quoted=())


def served_by(provider, kind):
    """``provider`` as the drawn reliability feature serves it (the mock keeps the requests)."""
    if kind == "chain":
        return with_fallback(Down(), fallback=[provider])
    if kind == "gateway":
        return model_gateway(provider.complete, name="in-house", native_output="response_format")
    return provider


def with_thinking(replies, kind):
    """Each scripted reply with the reasoning a model returns beside it."""
    blocks = [{"kind": "thinking", "text": 'weigh "it" é', "signature": "sig/+=="}]
    if kind == "mixed":
        blocks += [
            {"kind": "redacted_thinking", "data": "EmwKAhgB"},
            {"kind": "reasoning", "text": "r"},
        ]
    out = []
    for n, reply in enumerate(replies):
        reply = {"content": reply} if isinstance(reply, str) else reply
        out.append(
            {**reply, "thinking": blocks[: 1 + n % len(blocks)]}
            if isinstance(reply, dict)
            else reply
        )
    return out


def noted(text, blocks):
    """A thinking handler that adds a block saying how long the answer was."""
    return text, [*blocks, {"kind": "reasoning", "text": f"read {len(text)} é"}]


def same(text, blocks):
    """A thinking handler that changes nothing."""
    return text, blocks


def with_middleware(builder, feature):
    """Stand the drawn tool-door links on ``builder``."""
    kind = feature["middleware"]
    if kind is None:
        return

    def before(call, ctx):
        q = call["args"].get("q") if isinstance(call["args"], dict) else None
        if kind == "rewrite" and isinstance(q, str):
            return allow({**call["args"], "q": q + "x"}, "longer", from_={"q": "person"})
        if kind == "deny" and isinstance(q, str) and len(q) % 2:
            return deny("odd queries are refused")
        return None

    def after(call, result, ctx):
        if kind == "scrub":
            return scrub(lambda text: text.replace("A", "-"))
        if kind == "withhold" and len(result["content"]) % 2:
            return withhold("odd results are withheld")
        return None

    builder.tool_middleware(before, after=after)


def with_output(builder, feature, native_ok):
    """Ask for the drawn typed answer: the strategy (native where the options leave the
    response format to it) and the fallback chain."""
    kind = feature["output"] or ""
    native = kind.startswith("native") and native_ok
    builder.output_schema(Answer, retries=1, strategy="native" if native else "instruct")
    if kind == "fallback":
        builder.output_fallback(fallback=lambda error, raw: {"value": raw[:5]})
    elif kind == "canned":
        builder.output_fallback(canned=Answer(value="canned"))
    elif kind == "native-chain":
        boom = lambda error, raw: (_ for _ in ()).throw(RuntimeError(error.stage))  # noqa: E731
        builder.output_fallback(fallback=boom, canned={"value": "canned"})


def with_message_links(builder, feature):
    """Stand the drawn message-door link (one, at the input and the output door)."""
    kind = feature["messages"]
    if kind is None:
        return

    def admit(message, ctx):
        if kind == "refuse":
            return deny("refused by the drawn rule")
        if kind in ("rewrite", "both"):
            return allow(message["content"] + ", rewritten", "rewritten")
        return None

    async def answer(message, ctx):  # an async link, awaited at its door
        text = message["content"]
        if kind == "deny-answer" and len(text) % 2:
            return deny("odd answers are withheld")
        if kind in ("answer", "both"):
            return allow(text + " (checked)", "checked")
        return None

    builder.middleware(act(name="messages", input=admit, output=answer))


def assert_denied(agent, provider, denied, typed, tmp_path_factory):
    """A run a message link denied: the law for the calls it made, the denial on the
    record, and a replay (with and without the agent) that makes the same commits."""
    assert_law(agent, provider)
    state = agent.snapshot().state
    assert state["message_denied"]["door"] == denied.door
    if isinstance(denied, InputRefusedError):  # nothing was asked of any model
        assert provider.requests == [] and "history" not in state
    else:
        assert "final_answer" not in state and "response" in state  # kept, not handed back
    loaded = load_recording(save_recording(agent, tmp_path_factory.mktemp("rec") / "run.json"))
    assert [c.stage_path for c in replay(loaded, agent).history()] == [
        c.stage_path for c in loaded.history()
    ]
    # the recording alone is enough: no link runs again, a typed answer is judged from the
    # verdicts the run kept
    assert [c.writes for c in replay(loaded).history()] == [c.writes for c in loaded.history()]


def assert_withheld(agent, provider, typed, tmp_path_factory):
    """A run the evidence gate withheld: the law for the calls it made, the verdict on the
    record, and a replay (with and without the agent) that makes the same commits."""
    assert_law(agent, provider)
    state = agent.snapshot().state
    assert state["unsupported_values"]["refused"] is True and "final_answer" not in state
    loaded = load_recording(save_recording(agent, tmp_path_factory.mktemp("rec") / "run.json"))
    paths = [c.stage_path for c in loaded.history()]
    assert [c.stage_path for c in replay(loaded, agent).history()] == paths
    # the recording alone is enough: the gate is rebuilt from settings, a typed answer
    # judged from the verdicts the run kept
    assert [c.stage_path for c in replay(loaded).history()] == paths


def findings_options(drawn):
    """The drawn ``.findings()`` options (issue 38): none, or the dials and a judge."""
    if drawn is None:
        return {}
    judge = None
    if drawn["judge"] == "mock":  # an answer per result, chosen by the result's length
        picks = ("fact", "open", "noise", "ruled-out", "sideways")  # sideways: an error row
        judge = mock_classifier(
            lambda r: {"ranked": [["open", 0.6]], "chosen": picks[len(r.state["result"]) % 5]}
        )
    elif drawn["judge"] == "fail":  # every call fails: error rows, and the run goes on
        judge = mock_classifier(lambda r: ClassifierError("judge down", status=503))
    return {"serve": drawn["serve"], "answer_ask": drawn["answer_ask"], "judge": judge}


def with_ledgers(replies, feature):
    """The replies with what the ledgers and findings need: reported usage, and standings on
    earlier calls declared in ``_findings`` (as an armed model would)."""
    standings = list(feature["findings"])
    previous: list[str] = []
    for i, reply in enumerate(replies):
        if not isinstance(reply, dict):
            reply = replies[i] = {"content": reply}
        reply.setdefault("usage", {"input_tokens": 120 * (i + 1), "output_tokens": 9})
        for call in reply.get("tool_calls", []):
            if standings and previous and isinstance(call.get("args"), dict):
                judged = {"id": previous[-1], "standing": standings.pop()}
                if (feature.get("findings_ledger") or {}).get("assert"):  # facts may disagree
                    judged["assertions"] = [{"about": "the count", "value": len(previous)}]
                call["args"] = {
                    **call["args"],
                    "_findings": {"basis": "direct", "previous": [judged]},
                }
        previous += [c["id"] for c in reply.get("tool_calls", [])]
    return replies


class Answer(BaseModel):
    value: str


texts = st.text(alphabet='abc xyzé€\n"\\', max_size=12)
tool_call = st.one_of(
    st.builds(lambda q: {"name": "lookup", "args": {"q": q}}, texts),
    st.builds(lambda q: {"name": "report", "args": {"q": q}}, texts),
    st.builds(lambda q: {"name": "logs", "args": {"q": q}}, texts),  # window left out
    st.builds(lambda q: {"name": "logs", "args": {"q": q, "window": "1h"}}, texts),
    # arguments a model may send beyond the scalars: floats and nested values, committed
    # through pydantic's JSON-mode dump rather than the direct answer record
    st.builds(
        lambda q: {"name": "lookup", "args": {"q": q, "n": 1.5, "deep": [{"x": None}]}}, texts
    ),
    st.just({"name": "lookup", "args": {"q": "boom"}}),  # the tool raises
    st.just({"name": "lookup", "args": {"wrong": 1}}),  # bad arguments
    st.just({"name": "missing", "args": {}}),  # an unknown tool
    # a tool that calls lookup through ctx.tools.call (unknown unless feature["nested"])
    st.builds(lambda q: {"name": "relay", "args": {"q": q}}, texts),
    # run_code (unknown unless feature["code"]): state kept, raised, cut, killed at the limit
    st.sampled_from(
        ["x = 'é'", "print(x)", "raise ValueError('no')", "print('y' * 99)", "while 1: pass"]
    ).map(lambda code: {"name": "run_code", "args": {"code": code}}),
    # the skills' tools and doors (unknown tools to an agent without skills)
    st.builds(lambda q: {"name": "mover", "args": {"q": q}}, st.sampled_from("abcxyzé-")),
    st.just({"name": "pusher", "args": {"q": "p"}}),
    st.builds(
        lambda i: {"name": "read_skill", "args": {"id": i}},
        st.sampled_from(["s1", "s2", HIDDEN, "nope"]),
    ),
    st.sampled_from(
        [
            {"name": "skip_step", "args": {}},
            {"name": "list_skills", "args": {}},
            {"name": "present", "args": {"content": "here"}},
        ]
    ),
    # the trace tools of .self_explain() (unknown tools to an agent without it)
    st.builds(
        lambda name, start: {"name": name, "args": {"from": start} if start else {}},
        st.sampled_from(["trace_outline", "trace_model_calls", "trace_tool_calls"]),
        st.sampled_from([None, 1, 2, 40]),
    ),
    st.builds(
        lambda key: {"name": "trace_why", "args": {"key": key}},
        st.sampled_from(["final_answer", "history", "nope"]),
    ),
    st.builds(lambda seq: {"name": "trace_commit", "args": {"seq": seq}}, st.integers(1, 12)),
)


@st.composite
def split_call(draw):
    """One lookup call a gateway split into pieces that share its id."""
    whole = orjson.dumps({"q": draw(texts)}).decode()
    cuts = sorted(draw(st.lists(st.integers(0, len(whole)), min_size=1, max_size=4)))
    pieces = [whole[a:b] for a, b in zip([0, *cuts], [*cuts, len(whole)], strict=True)]
    return {
        "tool_calls": [
            {"name": "lookup", "args": {"_unparsed_arguments": p} if p else {}} for p in pieces
        ],
        "shared": True,
    }


step = st.one_of(
    st.lists(tool_call, min_size=1, max_size=3).map(lambda calls: {"tool_calls": calls}),
    # separate calls that share one id (renamed) and split ones (merged)
    st.lists(tool_call, min_size=2, max_size=3).map(
        lambda calls: {"tool_calls": calls, "shared": True}
    ),
    split_call(),
    texts.map(lambda t: {"content": t}),
)
request_options = st.fixed_dictionaries(
    {},
    optional={
        "tool_choice": st.sampled_from(["auto", "required", "none", "lookup"]),
        "seed": st.integers(-5, 2**40),
        "top_p": st.floats(0, 1),
        "stop": st.lists(texts.filter(bool), min_size=1, max_size=2),
        "response_format": st.just({"type": "json_object"}),
        "extra_body": st.dictionaries(
            st.sampled_from(["repeat_penalty", "top_k", "min_p"]), st.integers(0, 5)
        ),
        # prompt-cache breakpoints: in the request, its hash and each receipt's decision
        "cache": st.lists(st.sampled_from(["tools", "system", "messages"]), unique=True),
    },
)


def script(steps, final, cut=False):
    replies = [dict(s) for s in steps if "tool_calls" in s]
    replies.append({"content": final, "stop_reason": "max_tokens"} if cut else final)
    for i, r in enumerate(replies):
        shared = isinstance(r, dict) and r.pop("shared", False)
        calls = [dict(c) for c in (r.get("tool_calls", []) if isinstance(r, dict) else [])]
        for j, c in enumerate(calls):
            c["id"] = f"call-{i}" if shared else f"call-{i}-{j}"
        if calls:
            r["tool_calls"] = calls
    return replies


def assert_law(agent: Agent, provider, offset: int = 0):
    snap = agent.snapshot()
    rs = receipts(agent)
    assert len(rs) == len(provider.requests) - offset
    for k, receipt in enumerate(rs, start=1):
        rebuilt = served_at(snap, k)
        assert rebuilt.hash == receipt["request_hash"]
        assert provider.requests[offset + k - 1].hash == receipt["request_hash"]  # the tap
        assert rebuilt.canonical_json() == provider.requests[offset + k - 1].canonical_json()


# a cost budget that halts after a wrap-up: the agentless replay reads the wrap-up setting
# from the wrap-up stage, not from the last stopped_early write (found at seed 0)
_LOOKUP = {"tool_calls": [{"name": "lookup", "args": {"q": ""}}]}
_HALTED_AFTER_WRAP_UP = {
    "report": "off",
    "ceiling": None,
    "logs": False,
    "gate": False,
    "limits": False,
    "window": None,
    "findings": [],
    "cost": "halt",
    "parallel": None,
    "stored": False,
    "stream": False,
    "skills": None,
    "instructions": False,
    "choice": None,
    "middleware": None,
    "nested": False,
    "memory": None,
    "messages": None,
    "output": None,
    "explain": None,
    "evidence": None,
    "validation": None,
    "fallback": None,
    "thinking": None,
    "cache_policy": None,
    "thinking_handler": None,
}
_GROUNDED_HALT = {**_HALTED_AFTER_WRAP_UP, "evidence": "assist", "validation": "claims"}
# an answer a message link denies at the iteration limit, with no wrap-up: nothing but the
# settings says wrap-up was off
_DENIED_AT_LIMIT = {**_HALTED_AFTER_WRAP_UP, "cost": None, "logs": True, "limits": True}
_DENIED_AT_LIMIT["messages"] = "deny-answer"


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(
    steps=[_LOOKUP] * 3,
    max_iterations=2,
    wrap=True,
    temperature=None,
    typed=True,
    follow=False,
    options={},
    cut=False,
    validation="enforce",
    cap=None,
    feature=_HALTED_AFTER_WRAP_UP,
)
@example(
    steps=[{"tool_calls": [{"name": "logs", "args": {"q": ""}}]}, _LOOKUP],
    max_iterations=2,
    wrap=False,
    temperature=None,
    typed=False,
    follow=False,
    options={},
    cut=False,
    validation="enforce",
    cap=None,
    feature=_DENIED_AT_LIMIT,
)
@example(
    steps=[_LOOKUP] * 2,
    max_iterations=2,
    wrap=True,
    temperature=None,
    typed=True,
    follow=False,
    options={},
    cut=False,
    validation="enforce",
    cap=None,
    feature=_GROUNDED_HALT,
)
@example(  # the code runner: state kept across calls, a traceback, a loop killed
    steps=[
        {"tool_calls": [{"name": "run_code", "args": {"code": c}}]}
        for c in ("x = 'é'", "print(x)", "while 1: pass", "raise ValueError('no')")
    ],
    max_iterations=4,
    wrap=True,
    temperature=None,
    typed=False,
    follow=True,
    options={},
    cut=False,
    validation="enforce",
    cap=None,
    feature={**_HALTED_AFTER_WRAP_UP, "cost": None, "code": True},
)
@pytest.mark.filterwarnings("ignore::trackway.agent.CacheWarning")  # cache with findings/skills
@given(
    steps=st.lists(step, max_size=6),
    max_iterations=st.integers(1, 4),
    wrap=st.booleans(),
    temperature=st.one_of(st.none(), st.floats(0, 2)),
    typed=st.booleans(),
    follow=st.booleans(),
    options=request_options,
    cut=st.booleans(),
    validation=st.sampled_from(["enforce", "warn", "off"]),
    cap=st.one_of(st.none(), st.integers(3, 12)),
    feature=features,
)
def test_served_at_hash_equals_the_receipt_and_what_the_provider_got(
    steps,
    max_iterations,
    wrap,
    temperature,
    typed,
    follow,
    options,
    cut,
    validation,
    cap,
    feature,
    tmp_path_factory,
):
    final = '{"value": "ok"}' if typed else "done"
    if feature.get("artifacts") == "want":  # a ticket placed, then redeemed (and a bad one)
        steps = [*WANTED, *steps]
    replies = script(steps, "not json" if typed else final, cut=cut and not typed)
    chained = typed and feature["output"] in ("fallback", "canned", "native-chain")
    if typed:  # one output retry, then a valid answer (an invalid one when a chain stands)
        replies.append("still not json" if chained else final)
    replies += ["second answer", "spare", "spare", "spare"]  # wrap-ups and the follow-up
    if feature["evidence"]:  # every prose answer states a number no tool result holds
        replies = [f"{r} 9911" if isinstance(r, str) and r[:1] != "{" else r for r in replies]
    if (feature.get("findings_ledger") or {}).get("tower"):  # values a lookup may carry
        replies = [f"{r} 1 2 3" if isinstance(r, str) and r[:1] != "{" else r for r in replies]
    if feature["findings"] or feature["cost"] or feature["window"]:
        replies = with_ledgers(replies, feature)
    if feature["thinking"]:
        replies = with_thinking(replies, feature["thinking"])
    if feature["cache_policy"]:  # the function decides instead of the drawn breakpoints
        options = {n: v for n, v in options.items() if n != "cache"}
        options |= {"system_prompt_cache_policy": odd_calls, "cache_strategy": "conversation"}
    provider = mock(replies=replies)
    store = SqliteStore(tmp_path_factory.mktemp("db") / "runs.db") if feature["stored"] else None
    who = None
    if feature["memory"]:  # an earlier run of another agent fills the memory first
        store = store or MemoryStore()
        who = WHO
        for said in ("earlier é\n", 'and "this"'):
            earlier = Agent.create(provider=mock(reply=f"ok {said}"), model="m-1", store=store)
            earlier.memory(*memories(feature["memory"])).build().run_sync(said, identity=who)
    if feature["explain"] == "primed":  # the conversation's last completed run, in the store
        store = store or MemoryStore()
        primer = Agent.create(provider=mock(reply="primed é"), model="m-1", store=store)
        primer.self_explain().build().run_sync('earlier "run"', identity=who)
    builder = (
        Agent.create(
            provider=served_by(provider, feature["fallback"]),
            model="m-1",
            store=store,
            max_iterations=max_iterations,
            temperature=temperature,
            wrap_up_at_max_iterations=wrap,
            max_tokens=99,
            tool_arg_validation=validation,
            max_tool_result_chars=cap,
            pricing_table={"m-1": {"input": 1.0, "output": 2.0}} if feature["cost"] else None,
            cost_budget=(0.0005, feature["cost"]) if feature["cost"] else None,
            max_parallel_tool_calls=feature["parallel"] or 4,
            stream=feature["stream"],
            thinking_budget=2048 if feature["thinking"] else None,
            **options,
        )
        .system("Be exact.")
        .tool(ASYNC_TOOL if feature["parallel"] else TOOL)
    )
    if typed:
        with_output(builder, feature, native_ok="response_format" not in options)
    reporter = REPORT
    if feature["ceiling"] is not None:
        reporter = dataclasses.replace(REPORT, result_ceiling={"max_chars": feature["ceiling"]})
    if feature["report"] == "tool":
        builder.tool(reporter)
    elif feature["report"] == "provider":  # offered from the second iteration on
        builder.tools_from(gated_tools(lambda state: state["iteration"] > 1, reporter))
    if feature["logs"]:
        builder.tool(LOGS)
    if feature["gate"]:
        builder.gate(deny_x)
    if feature["limits"]:
        builder.limits_travel_with_the_answer()
    if feature["window"] == "sliding":
        builder.window(sliding_window(keep_recent_turns=1), keep_last_tool_results=1)
    elif feature["window"] == "budget":
        builder.window(token_budget(max_input_tokens=300, keep_recent_turns=1))
    elif feature["window"] == "summary":
        summarizer = mock(respond=lambda request: "s")
        builder.window(summarize_oldest(keep_recent_turns=1, summarizer=summarizer))
    if feature["findings"]:
        builder.findings()
    # -- window facts and compaction (issue 38) --
    if feature["findings"] and feature.get("facts") is not None:
        builder.findings(keep_ledger_facts=feature["facts"])
    if feature.get("compaction") and feature["window"] is None:
        folds = mock(respond=lambda request: "s")
        builder.compaction(folds, threshold_chars=120, keep_recent_turns=1)
        builder.findings(**findings_options(feature.get("findings_ledger")))
    if feature["thinking_handler"]:
        builder.thinking_handler(noted if feature["thinking_handler"] == "note" else same)
    if feature.get("live"):
        builder.live_status(strategy=chat_bubble_live_status(on_line=LIVE[feature["live"]]))
        builder.thinking_templates({"tool.progress": "{app}: {message}"}).app_name("Ada")
    if feature["skills"] == "scoped":
        builder._skill_scoped = True  # skill_scoped_tools=True, on a builder made above
    with_skills(builder, feature)
    with_middleware(builder, feature)
    if feature["nested"]:
        builder.tool(RELAY)
    if feature.get("artifacts"):
        builder.artifacts(Numbered(), max_inline_chars=30)
        if feature["artifacts"] == "want":
            builder.tool(DIGEST)
    if feature.get("code"):
        builder.tool(CODE)
    with_message_links(builder, feature)
    if feature["memory"]:
        builder.memory(*memories(feature["memory"]))
    if feature["explain"]:
        builder.self_explain(max_chars=700)
        if feature["skills"]:  # the record names a hidden skill, read back to the model
            with pytest.raises(AgentBuildError, match="names the hidden skills"):
                builder.build()
            return
    if feature["evidence"]:
        builder.names_and_numbers_from_evidence(posture=feature["evidence"])
    validated = feature["validation"] is not None and not feature["limits"]  # refused together
    if validated:
        cut = AnswerValidationLimits(max_reads=1, max_checks=1)
        builder.answer_validation(
            claims=[
                claim("word", pattern=r"(\w+)", from_tools=("lookup",)),
                claim("sure", pattern=r"(?i)(done|answer)", from_tools="lookup"),
            ],
            limits=cut if feature["validation"] == "cut" else None,
        )
    if feature.get("time") is not None:
        builder.time(zone="Australia/Lord_Howe" if feature.get("time") == "builder" else None)
    if feature.get("ontology") is not None:  # .ontology(): the map, joined to the skills
        builder.ontology(served_map(feature), ask=feature["ontology"])
    first: Any = "first question"
    if feature.get("time") == "run":
        first = {"message": first, "time": RUN_CLOCK}
    agent = builder.build()
    heard = listen_for_events(agent, feature)
    try:
        if chained:  # the chain is run_typed's: each step recorded, replayed from the record
            assert isinstance(agent.run_typed_sync(first, identity=who), Answer)
            assert agent.snapshot().state["output_fallback"][0]["tier"] == "primary"
        else:
            agent.run_sync(first, identity=who)
    except MessageDeniedError as denied:  # a message link refused the message or the answer
        assert_denied(agent, provider, denied, typed, tmp_path_factory)
        return
    except UnsupportedValuesError:  # the gate withheld the answer: the record and replay
        assert feature["evidence"] == "rails"
        assert_withheld(agent, provider, typed, tmp_path_factory)
        return
    if feature["evidence"] is None:  # not configured: nothing judged, nothing written
        assert "evidence" not in agent.snapshot().state["settings"]
        assert "unsupported_values" not in agent.snapshot().state
    assert_law(agent, provider)
    assert_events_fit(agent, heard)
    # configured: recorded in settings; not configured: no key, and no row says a ticket
    assert ("artifacts" in agent.snapshot().state["settings"]) == bool(feature.get("artifacts"))
    if not feature.get("artifacts"):
        assert not any("artifacts" in r for r in agent.snapshot().state.get("tool_results", []))
    assert_time_rows(agent, feature.get("time"))
    assert_ontology(agent, feature)
    if feature["middleware"] is None and feature["messages"] is None:  # not configured
        assert "middleware_decisions" not in agent.snapshot().state
    assert ("self_explain" in agent.snapshot().state["settings"]) == bool(feature["explain"])
    if feature["messages"] in ("rewrite", "both"):  # the model read the rewritten message
        assert agent.snapshot().state["user_message"] == "first question, rewritten"
    if feature["messages"] in ("answer", "both"):  # the person got the rule's answer
        assert agent.snapshot().state["final_answer"].endswith(" (checked)")
        unmet = agent.output_contract_unmet() or {}
        assert unmet.get("broken_by") in (None, "messages")  # every field: None when unset
    served_tools = {
        m["tool_call_id"]: m["content"]
        for m in agent.snapshot().state["history"]
        if m["role"] == "tool"
    }
    for row in agent.snapshot().state.get("tool_results", []):
        if row.get("scrubbed"):  # the scrubbed letter reaches no request
            assert "A" not in served_tools[row["id"]]
        if row["name"] == "relay" and row["status"] == "success":  # both nested calls
            assert [n["id"] for n in row["nested"]] == [f"{row['id']}.1", f"{row['id']}.2"]
            assert row["nested"][1]["status"] == "refused"
    if feature["memory"]:  # what was recalled is served after the system prompt
        assert '[memory "recent"' in (provider.requests[0].system or "")
        assert all(row["entries"] for row in agent.snapshot().state["memory_recall"])
    if store is not None:  # the stored log serves the same requests as the live one
        kept = store.load(agent.snapshot().run_id)
        for k, receipt in enumerate(receipts(agent), start=1):
            assert served_at(kept, k).hash == receipt["request_hash"]
    for request in provider.requests:  # record-only words are never served
        assert MARK.encode() not in request.canonical_json()
        # a hidden skill is never named by the library (the model's own guesses aside)
        ours = request.model_copy(
            update={"messages": tuple(m for m in request.messages if m.role != "assistant")}
        )
        assert HIDDEN.encode() not in ours.canonical_json()
        assert b"Qqhidden" not in ours.canonical_json()
    assert MARK.encode() not in orjson.dumps(thaw(agent.snapshot().state["history"]))
    assert_one_id_per_call(agent)
    rows = agent.snapshot().state.get("tool_results", [])
    tool_messages = [m for m in agent.snapshot().state["history"] if m["role"] == "tool"]
    assert [r["id"] for r in rows] == [m["tool_call_id"] for m in tool_messages]
    assert [r["chars"] for r in rows] == [len(m["content"]) for m in tool_messages]
    drawn = feature.get("findings_ledger")  # findings ledger (issue 38): only what a tool made
    if feature["findings"] and drawn is not None and drawn["judge"] is not None:
        judged = {r["id"] for r in agent.findings() if r["kind"].startswith("judgment")}
        assert judged <= {r["id"] for r in rows if r["status"] not in ("denied", "invalid")}
    for row in rows:  # a cut result says so, and by how much
        if row.get("truncated"):
            assert cap is not None and row["chars_returned"] > cap
    snap = agent.snapshot()
    for k, request in enumerate(provider.requests, start=1):
        # every option is in the request (tool_choice only with the tools it chooses from)
        for name, value in options.items():
            if name in ("cache", "system_prompt_cache_policy", "cache_strategy"):
                continue
            sent = getattr(request, name)
            if name == "tool_choice" and request.tools is None:
                assert sent is None
            else:
                assert sent == (tuple(value) if name == "stop" else value), (k, name)
        if "cache" in options:  # one order (byte-stable); each receipt records the decision
            order = [b for b in ("tools", "system", "messages") if b in options["cache"]]
            assert request.cache == tuple(order)
            assert receipts(agent)[k - 1]["cache"] == {"breakpoints": order}
    for n, receipt in enumerate(receipts(agent) if feature["cache_policy"] else (), start=1):
        said = receipt["cache"]  # as the function decided: its number is the receipt's k
        assert said["system"] == ("always" if receipt["k"] % 2 else "never")
        assert ("system" in said["breakpoints"]) == (said["system"] == "always")
        assert list(served_at(snap, n).cache or ()) == said["breakpoints"]
    last = receipts(agent)[-1]
    stopped = snap.state.get("stopped_early") or {}
    # an answer cut at max_tokens is never reported as finished
    if last["stop_reason"] == "max_tokens":
        assert stopped["reason"] == "max-tokens" or stopped["answer_cut_at_max_tokens"]
    else:
        assert stopped.get("reason") != "max-tokens"
    path = tmp_path_factory.mktemp("rec") / "run.json"
    save_recording(agent, path)
    loaded = load_recording(path)
    assert loaded == agent.snapshot()
    for k, receipt in enumerate(receipts(loaded), start=1):
        assert served_at(loaded, k).hash == receipt["request_hash"]
    assert assess_answer(loaded) == agent.assessment()  # the fold reads the record alone
    report = agent.answer_validation()
    if not validated:  # not configured: no key, no setting
        assert report is None and "answer_validation" not in loaded.state["settings"]
    elif "final_answer" in loaded.state:
        assert report is not None
        assert report["complete"] == all(c["outcome"] != "skipped" for c in report["checks"])
    replayed = replay(loaded, agent)  # hermetic: recorded answers and tool results only
    # the recording alone is enough to replay: a typed answer is judged from the verdicts
    # the run kept (output_judged), no validator code needed
    alone = replay(loaded)
    assert [c.writes for c in alone.history()] == [c.writes for c in loaded.history()]
    if typed:  # the schema is on the record, and every verdict it gave
        assert loaded.state["settings"]["output_schema"]["model"] == "Answer"
        assert loaded.state["output_judged"]
    assert [c.stage_path for c in replayed.history()] == [c.stage_path for c in loaded.history()]
    if follow:
        used = len(provider.requests)
        with contextlib.suppress(AnswerDeniedError, UnsupportedValuesError):  # withheld again
            agent.run_sync(
                "and then?",
                continue_from=agent.checkpoint(),
                identity=who,
                time=RUN_CLOCK if feature.get("time") == "run" else None,
            )
        assert_law(agent, provider, offset=used)


# the event catalogue (issue 38): every event heard live, and every event the log keeps,
# is registered and its payload fits the TypedDict
def listen_for_events(agent: Agent, feature: dict[str, Any]) -> EventAudit:
    heard = EventAudit()
    if feature.get("events") == "listen":
        agent.on("*", heard)
    return heard


def assert_events_fit(agent: Agent, heard: EventAudit) -> None:
    heard.check()
    kept = EventAudit()
    kept.check_events(event for commit in agent.snapshot().history() for event in commit.events)
    kept.check()


def served_map(feature: dict[str, Any]) -> Any:
    """The map a drawn feature set declares: the lookup tool, and the skills' tools (one
    shared with the hidden skill) when there are skills."""
    via = ["lookup", *(("mover", "pusher") if feature["skills"] else ())]
    return define_ontology(
        id="desk",
        version="1",
        sources={"records": {"meaning": "the records", "configured": True}},
        nodes={
            "thing": {"meaning": "a thing looked up", "aliases": ["item"],
                      "sources": [{"source": "records", "via": via, "coverage": "all things"}]},
            "weight": {"meaning": "how heavy a thing is", "unit": "kg"},
        },
        edges=[{"from": "weight", "to": "thing", "relation": "of"}],
    )  # fmt: skip


def assert_ontology(agent: Agent, feature: dict[str, Any]) -> None:
    """Under .ontology() the map is the run constant and every call was served its piece
    (the hidden skill never named); without it, no key, no setting, no event."""
    state = agent.snapshot().state
    served = [
        e for c in agent.snapshot().history() for e in c.events if e.name == "ontology.served"
    ]
    if feature.get("ontology") is None:
        assert "ontology" not in state and "ontology" not in state["settings"] and not served
        return
    assert thaw(state["ontology"])["hash"] == served_map(feature).hash
    assert [e.payload["k"] for e in served] == list(range(1, len(receipts(agent)) + 1))
    systems = {served_at(agent, k).system for k in range(1, len(receipts(agent)) + 1)}
    piece = ontology_piece(served_map(feature), tools=thaw(state["ontology"]).get("tools"),
                           hidden_skill_ids=[HIDDEN])  # fmt: skip
    for system in systems:
        assert system is not None and piece in system


def assert_time_rows(agent: Agent, time: str | None) -> None:
    """Under .time() one clock row opens the turn and each dispatched call has its row;
    without it, no key and no setting."""
    state = agent.snapshot().state
    if time is None:
        assert "time_rows" not in state and "time" not in state["settings"]
        return
    rows = state["time_rows"]
    zone = "Australia/Lord_Howe" if time == "builder" else "America/New_York"
    assert rows[0]["kind"] == "clock" and rows[0]["zone"] == zone
    assert rows[0]["now_source"] == ("default" if time == "builder" else "app")
    called = [r["call_id"] for r in rows if r["kind"] == "call"]
    assert called == [r["id"] for r in state.get("tool_results", [])]


def assert_one_id_per_call(agent: Agent) -> None:
    """No request repeats a tool-call id, and every repair is in a receipt."""
    history = agent.snapshot().state["history"]
    ids = [c["id"] for m in history for c in (m.get("tool_calls") or ())]
    assert len(ids) == len(set(ids))
    results = [m["tool_call_id"] for m in history if m["role"] == "tool"]
    assert len(results) == len(set(results))
    assert set(results) <= set(ids)


def test_replay_names_the_first_divergent_stage_and_key(tmp_path):
    provider = mock(
        replies=[{"tool_calls": [{"id": "a", "name": "lookup", "args": {"q": "x"}}]}, "done"]
    )
    agent = Agent.create(provider=provider, model="m").tool(TOOL).build()
    agent.run_sync("go")
    path = save_recording(agent, tmp_path / "run.json")
    replay(load_recording(path), agent)  # faithful: no divergence

    other_tool = define_tool(
        name="lookup", description="Look things up (v2).", input_schema=SCHEMA, execute=lookup
    )
    changed = Agent.create(provider=mock(reply="x"), model="m").tool(other_tool).build()
    with pytest.raises(ReplayDivergence) as info:
        replay(load_recording(path), changed)
    assert info.value.stage_path == "tools#1" and info.value.key == "tools"
    assert "commit 2 (tools#1) wrote 'tools'" in str(info.value)


def test_served_at_refuses_an_out_of_range_call():
    agent = Agent.create(provider=mock(reply="hi"), model="m").build()
    agent.run_sync("hello")
    assert served_at(agent, 1).messages[0].content == "hello"
    with pytest.raises(IndexError, match="made 1 model call,"):
        served_at(agent, 2)
    assert isinstance(agent.snapshot(), Snapshot)


def _member_requests(snapshot: Snapshot, mount: str) -> list[tuple[str, str]]:
    """Each model call of the agent mounted at ``mount``: the hash of the request rebuilt
    from that member's own log (its frame), and the hash its receipt recorded."""
    from trackway.agent.context._request import assemble
    from trackway.engine import StagePath
    from trackway.engine.core._state import StateStore

    state = StateStore()
    out = []
    for commit in snapshot.commits:
        if commit.frame != mount:
            continue
        if StagePath.parse(commit.stage_path).name == "call-llm":
            receipt = next(op.value[0] for op in commit.ops if op.key == "receipts")
            out.append((assemble(state.current()).request_hash, receipt["request_hash"]))
        state.apply(commit.seq, commit.writes)
    return out


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    first=st.lists(step, max_size=4),
    second=st.lists(step, max_size=4),
    max_iterations=st.integers(1, 4),
    wrap=st.booleans(),
)
def test_the_law_holds_for_agents_mounted_twice_in_one_run(first, second, max_iterations, wrap):
    """Two mounts of one agent in one run: each keeps its own run-local message cache, and
    every request it sent is rebuilt from its own frame of the log."""
    from trackway.engine import Executor, flow_chart

    replies = [*script(first, "first answer"), "spare", *script(second, "second answer")]
    replies += ["spare"] * 6
    provider = mock(replies=replies)
    agent = (
        Agent.create(
            provider=provider,
            model="m-1",
            max_iterations=max_iterations,
            wrap_up_at_max_iterations=wrap,
        )
        .system("Be exact.")
        .tool(TOOL)
        .build()
    )
    chart = (
        flow_chart("Ask", lambda s: s.__setitem__("question", "what?"), id="ask")
        .subflow("First", agent.spec(), id="first", input={"message": "question"},
                 output={"a": "final_answer"})
        .subflow("Second", agent.spec(), id="second", input={"message": "question"},
                 output={"b": "final_answer"})
        .build()
    )  # fmt: skip
    snapshot = Executor(chart, max_iterations=100).run_sync().snapshot
    mounts = [c.frame for c in snapshot.commits if c.kind == "subflow-input"]
    assert len(mounts) == 2
    rebuilt = [pair for mount in mounts for pair in _member_requests(snapshot, mount)]
    assert len(rebuilt) == len(provider.requests)
    for (from_log, receipt), sent in zip(rebuilt, provider.requests, strict=True):
        assert from_log == receipt == sent.hash


FIXTURES = Path(__file__).parent / "fixtures"


def test_a_recording_from_the_previous_version_loads_rebuilds_and_replays():
    """Written by commit 5c5076e (before receipts said how each call was made): it loads,
    every call is rebuilt to its receipt's hash, and it replays without an agent."""
    loaded = load_recording(FIXTURES / "recording-5c5076e.json")
    rs = receipts(loaded)
    assert len(rs) == 2 and all("via" not in r for r in rs)
    for k, receipt in enumerate(rs, start=1):
        assert served_at(loaded, k).hash == receipt["request_hash"]
    assert served_at(loaded, 1).temperature == 0.5
    replayed = replay(loaded)
    assert [c.stage_path for c in replayed.history()] == [c.stage_path for c in loaded.history()]
    assert replayed.state["final_answer"] == "done"


# --- issue 38, patterns: an agent with drawn tool turns as a member of each pattern --------------


@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=st.lists(step, max_size=3),
    pattern=st.sampled_from(["map_reduce", "tree_of_thoughts", "swarm"]),
    runs=st.integers(1, 3),
    max_iterations=st.integers(1, 4),
)
def test_the_law_holds_for_an_agent_inside_each_pattern(steps, pattern, runs, max_iterations):
    """The same agent run ``runs`` times as a pattern's member (an item of a map-reduce, a
    proposal of a tree, a swarm member handed the conversation): every request it sent is
    rebuilt from the record, and the record replays alone."""
    from tests.law import assert_law as law
    from trackway.agent import handoff_tool, map_reduce, swarm, tree_of_thoughts

    turn = script(steps, "an answer")
    provider = mock(replies=[reply for _ in range(runs) for reply in turn] + ["spare"] * 8)
    agent = (
        Agent.create(provider=provider, model="m-1", max_iterations=max_iterations)
        .system("Be exact.")
        .tool(TOOL)
        .build()
    )
    if pattern == "map_reduce":
        split = [f"item {i}" for i in range(runs)]
        runner = map_reduce(agent, split=lambda m: split, max_items=3, concurrency=1)
    elif pattern == "tree_of_thoughts":
        runner = tree_of_thoughts(
            agent, evaluate=lambda p, t: 1.0, k=runs, beam=1, depth=1, concurrency=1
        )
    else:
        hand = {"tool_calls": [{"id": "h", "name": "handoff", "args": {"to": "member"}}]}
        front = Agent.create(provider=mock(replies=[hand, "over"]), model="m").tool(handoff_tool())
        runner = swarm({"front": front.build(), "member": agent}, max_hops=1)
    runner.run_sync("what?")
    calls = receipts(runner)
    mine = [r for r in calls if r["member"] in ("member",) or r["member"][:4] in ("map_", "prop")]
    assert [r["request_hash"] for r in mine] == [request.hash for request in provider.requests]
    assert law(runner) == len(calls)
    assert receipts(replay(runner.snapshot())) == calls
