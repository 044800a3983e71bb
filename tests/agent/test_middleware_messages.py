"""Middleware at the message doors: the person's message as it comes in (``input``) and the
answer as it goes out (``output``). A refused message bills nothing and admits no
conversation; a rewrite is what the model reads or the person gets; a rule that breaks a
valid typed answer is named and costs no retry; every decision is on the record, replayed
from it alone, and hidden with the conversation under ``conversation_redaction``."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from tests.backends import run_async
from tests.law import assert_law
from trackway.agent import (
    Agent,
    AnswerDeniedError,
    Conversation,
    InputRefusedError,
    MessageContext,
    MessageDeniedError,
    MiddlewareError,
    MiddlewareFailedError,
    NoConversationError,
    OutputContractError,
    act,
    conversation_redaction,
    is_paused,
    load_recording,
    mock,
    receipts,
    replay,
    save_recording,
)
from trackway.engine import SqliteStore, StageError, thaw
from trackway.recorders import jsonl, narrative
from trackway.tools import allow, ask, define_tool, deny

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
LOOKUP = define_tool(
    name="lookup",
    description="Look things up.",
    input_schema=SCHEMA,
    execute=lambda args, ctx: f"found {args['q']}",
)


def no_secrets(message: dict[str, Any], ctx: MessageContext) -> Any:
    """Refuses a message that names a card; spells out an abbreviation."""
    if "card" in message["content"]:
        return deny("card numbers are not taken here")
    if "asap" in message["content"]:
        return allow(message["content"].replace("asap", "as soon as possible"), "spelled out")
    return None


def signed(message: dict[str, Any], ctx: MessageContext) -> Any:
    return allow(message["content"] + " — the bot", "signed")


def state(agent: Agent) -> dict[str, Any]:
    return dict(thaw(agent.snapshot().state))


def served_ok(agent: Agent) -> None:
    """The conformance law, call by call."""
    assert_law(agent.snapshot())


# -- the input door ----------------------------------------------------------------------------


def test_a_refused_message_calls_no_model_admits_no_conversation_and_is_recorded() -> None:
    provider = mock(replies=["first answer", "never"])
    agent = Agent.create(provider=provider, model="m").input_middleware(no_secrets).build()
    assert agent.run_sync("hello") == "first answer"
    kept = agent.checkpoint()  # an admitted conversation, kept by the caller

    with pytest.raises(InputRefusedError) as refused:
        agent.run_sync("my card is 4111")
    error = refused.value
    assert isinstance(error, MessageDeniedError)
    assert (error.door, error.middleware) == ("input", "no_secrets")
    assert error.reason == "card numbers are not taken here"
    assert "no model was called" in str(error)
    assert len(provider.requests) == 1  # nothing was asked, so nothing was billed
    snap = agent.snapshot()
    assert error.run_id == snap.run_id and snap.status == "broken"
    assert [c.stage_id for c in snap.history()] == ["seed"]  # the run ended at its door
    st = state(agent)
    assert "history" not in st and "receipts" not in st and "settings" not in st
    assert st["middleware_decisions"] == [
        {
            "middleware": "no_secrets",
            "door": "input",
            "iteration": 1,
            "outcome": "deny",
            "changed": False,
            "why": "card numbers are not taken here",
        }
    ]
    assert st["message_denied"] == {
        "door": "input",
        "middleware": "no_secrets",
        "reason": "card numbers are not taken here",
        "iteration": 1,
    }
    denied = [e for c in snap.history() for e in c.events if e.name == "agent.message_denied"]
    assert len(denied) == 1
    # a refused message is not an admitted conversation: there is nothing to continue
    with pytest.raises(NoConversationError, match="'no_secrets' refused the last run's message"):
        agent.checkpoint()
    with pytest.raises(NoConversationError):
        agent.follow_up_sync("and then?")
    assert len(provider.requests) == 1
    # a conversation kept from an earlier run continues explicitly, through the door again
    with pytest.raises(InputRefusedError):
        agent.run_sync("the card again", continue_from=kept)
    assert agent.run_sync("go on", continue_from=kept) == "never"
    assert [m.content for m in provider.requests[-1].messages] == [
        "hello",
        "first answer",
        "go on",
    ]


def test_run_result_and_stream_raise_the_refusal_too() -> None:
    agent = (
        Agent.create(provider=mock(replies=["x"]), model="m").input_middleware(no_secrets).build()
    )
    with pytest.raises(InputRefusedError):
        agent.run_result_sync("card 1234")

    async def streamed() -> tuple[list[str], Any]:
        names: list[str] = []
        with pytest.raises(InputRefusedError):
            async with agent.stream("card 1234") as events:
                async for event in events:
                    names.append(event.name)
        return names, events.result

    names, result = run_async(streamed)
    assert names == ["middleware.decided", "agent.message_denied"]
    assert result is not None and result.messages == () and result.usage.calls == 0


def test_a_rewritten_message_is_what_the_model_reads_and_what_history_holds() -> None:
    provider = mock(replies=["on it", "again"])
    agent = Agent.create(provider=provider, model="m").input_middleware(no_secrets).build()
    assert agent.run_sync("call me asap") == "on it"
    (request,) = provider.requests
    assert [m.content for m in request.messages] == ["call me as soon as possible"]
    st = state(agent)
    assert st["message"] == "call me asap"  # the run's input, as the caller gave it
    assert st["user_message"] == "call me as soon as possible"
    assert st["history"] == [{"role": "user", "content": "call me as soon as possible"}]
    (row,) = st["middleware_decisions"]
    assert row["changed"] is True and row["why"] == "spelled out"
    assert row["value"] == "call me as soon as possible"
    served_ok(agent)  # the rewrite is in history: every request rebuilds from the record
    # a follow-up is a new turn: it passes the door as well
    agent.follow_up_sync("asap please")
    assert provider.requests[-1].messages[-1].content == "as soon as possible please"
    served_ok(agent)


def test_a_resume_answers_a_paused_turn_and_passes_no_door() -> None:
    seen: list[str] = []

    def watch(message: dict[str, Any], ctx: MessageContext) -> Any:
        seen.append(message["content"])
        return None

    call = {"tool_calls": [{"id": "c1", "name": "lookup", "args": {"q": "x"}}]}
    agent = (
        Agent.create(provider=mock(replies=[call, "found"]), model="m")
        .tool(LOOKUP)
        .check_in(["lookup"])
        .input_middleware(watch)
        .build()
    )
    paused = agent.run_sync("find x")
    assert is_paused(paused)
    assert agent.resume_sync(paused.checkpoint, "approve") == "found"
    assert seen == ["find x"]
    doors = [r["door"] for r in state(agent)["middleware_decisions"]]
    assert doors == ["input"]


def test_resume_on_error_rechecks_the_message_against_the_links() -> None:
    said = Conversation(history=[{"role": "user", "content": "my card is 4111"}], agent="agent")
    provider = mock(replies=["never"])
    agent = Agent.create(provider=provider, model="m").input_middleware(no_secrets).build()
    with pytest.raises(InputRefusedError):
        agent.resume_on_error_sync(said)
    assert provider.requests == []


def test_a_link_is_handed_who_the_run_is_for() -> None:
    contexts: list[MessageContext] = []

    def keep(message: dict[str, Any], ctx: MessageContext) -> Any:
        contexts.append(ctx)
        return None

    agent = (
        Agent.create(provider=mock(replies=["ok"]), model="m", name="desk")
        .message_middleware(keep)
        .build()
    )
    agent.run_sync("hi", identity={"tenant": "acme"}, session_id="s-1")
    run_id = agent.snapshot().run_id
    assert [(c.door, c.iteration, c.agent, c.run_id) for c in contexts] == [
        ("input", 1, "desk", run_id),
        ("output", 1, "desk", run_id),
    ]
    assert all(c.identity is not None and c.identity.tenant == "acme" for c in contexts)
    assert all(c.session_id == "s-1" for c in contexts)


# -- the message middleware: one function, both doors -----------------------------------------


def test_message_middleware_sees_the_message_coming_in_and_the_answer_going_out() -> None:
    seen: list[dict[str, Any]] = []

    def polite(message: dict[str, Any], ctx: MessageContext) -> Any:
        seen.append(dict(message))
        if message["role"] == "user":
            return allow(message["content"].strip(), "trimmed")
        return allow(message["content"] + " Anything else?", "offered more")

    provider = mock(replies=["It is 22°C."])
    agent = Agent.create(provider=provider, model="m").message_middleware(polite).build()
    assert agent.run_sync("  weather?  ") == "It is 22°C. Anything else?"
    assert seen == [
        {"role": "user", "content": "  weather?  ", "door": "input"},
        {"role": "assistant", "content": "It is 22°C.", "door": "output"},
    ]
    assert provider.requests[0].messages[-1].content == "weather?"
    st = state(agent)
    assert st["final_answer"] == "It is 22°C. Anything else?"
    assert st["response"]["content"] == "It is 22°C."  # the model's answer, as it gave it
    assert [(r["door"], r["changed"]) for r in st["middleware_decisions"]] == [
        ("input", True),
        ("output", True),
    ]
    # the conversation goes on with the answer the person got
    assert agent.checkpoint().history[-1] == {
        "role": "assistant",
        "content": "It is 22°C. Anything else?",
    }


# -- the output door ---------------------------------------------------------------------------


def test_output_links_walk_in_order_and_the_last_rewrite_is_the_answer() -> None:
    def shout(message: dict[str, Any], ctx: MessageContext) -> Any:
        return allow(message["content"].upper(), "louder")

    agent = (
        Agent.create(provider=mock(replies=["fine"]), model="m")
        .middleware(
            act(output=shout), act(output=signed), act(name="quiet", output=lambda m, c: None)
        )
        .build()
    )
    assert agent.run_sync("how are you?") == "FINE — the bot"
    rows = state(agent)["middleware_decisions"]
    assert [(r["middleware"], r["changed"], r.get("value")) for r in rows] == [
        ("shout", True, "FINE"),
        ("signed", True, "FINE — the bot"),
        ("quiet", False, None),
    ]


def test_an_output_rule_sees_the_limits_block_the_person_would_get() -> None:
    from trackway.tools import absent

    def partial(args: dict[str, Any], ctx: Any) -> Any:
        return absent(what="reports", checked=["2020"], not_checked=["2019"])

    years = define_tool(
        name="years", description="Years.", input_schema={"type": "object"}, execute=partial
    )
    seen: list[str] = []

    def look(message: dict[str, Any], ctx: MessageContext) -> Any:
        seen.append(message["content"])
        return None

    call = {"tool_calls": [{"id": "c1", "name": "years", "args": {}}]}
    agent = (
        Agent.create(provider=mock(replies=[call, "2020 was fine."]), model="m")
        .tool(years)
        .limits_travel_with_the_answer()
        .middleware(act(output=look))
        .build()
    )
    answer = agent.run_sync("how were the years?")
    assert seen == [answer]  # the rule read exactly what the caller got
    assert answer.startswith("2020 was fine.") and "2019" in answer


def test_a_denied_answer_is_withheld_and_kept_in_the_record() -> None:
    def no_prices(message: dict[str, Any], ctx: MessageContext) -> Any:
        return deny("prices are quoted by sales") if "$" in message["content"] else None

    provider = mock(replies=["It costs $40.", "later"])
    agent = Agent.create(provider=provider, model="m").middleware(act(output=no_prices)).build()
    with pytest.raises(AnswerDeniedError) as denied:
        agent.run_sync("how much?")
    assert (denied.value.door, denied.value.middleware) == ("output", "no_prices")
    assert "$40" not in str(denied.value)  # the withheld answer is not quoted to the caller
    st = state(agent)
    assert st["response"]["content"] == "It costs $40."  # what the model said, on the record
    assert "final_answer" not in st
    assert st["message_denied"]["door"] == "output"
    assert [c.stage_id for c in agent.snapshot().history()][-1] == "route"
    # the conversation goes on without the withheld answer
    assert agent.checkpoint().history == [{"role": "user", "content": "how much?"}]
    assert agent.follow_up_sync("ok, and when?") == "later"


class Ticket(BaseModel):
    title: str
    priority: int


VALID = '{"title": "Printer down", "priority": 2}'


def test_a_rule_that_breaks_a_valid_typed_answer_is_named_and_costs_no_retry() -> None:
    provider = mock(replies=[VALID, VALID, VALID])
    agent = (
        Agent.create(provider=provider, model="m")
        .output_schema(Ticket, retries=2)
        .middleware(act(output=signed))
        .build()
    )
    assert agent.run_sync("file it") == VALID + " — the bot"
    assert len(provider.requests) == 1  # a rule breaks every answer alike: nothing re-asked
    unmet = agent.output_contract_unmet()
    assert unmet is not None and unmet["broken_by"] == "signed"
    assert unmet["attempts"] == 1 and "JSON" in unmet["error"]
    route = next(c for c in agent.snapshot().history() if c.stage_id == "route")
    assert route.detail["decision"]["broken_by"] == "signed"
    with pytest.raises(OutputContractError):
        agent.run_typed_sync("file it")
    assert len(provider.requests) == 2
    replay(agent.snapshot(), agent)


def test_a_rule_that_repairs_a_failing_answer_ends_the_retries() -> None:
    def fenced(message: dict[str, Any], ctx: MessageContext) -> Any:
        text = message["content"].removeprefix("```json").removesuffix("```").strip()
        return allow(text, "code fence removed")

    provider = mock(replies=[f"```json\n{VALID}\n```", "never"])
    agent = (
        Agent.create(provider=provider, model="m")
        .output_schema(Ticket, retries=2)
        .middleware(act(output=fenced))
        .build()
    )
    assert agent.run_typed_sync("file it") == Ticket(title="Printer down", priority=2)
    assert len(provider.requests) == 1
    assert agent.output_contract_unmet() is None


def test_an_answer_the_model_got_wrong_is_asked_again_as_the_model_gave_it() -> None:
    provider = mock(replies=["not json", VALID])
    agent = (
        Agent.create(provider=provider, model="m")
        .output_schema(Ticket, retries=1)
        .middleware(act(output=signed), act(name="last", output=lambda m, c: None))
        .build()
    )
    agent.run_sync("file it")
    assert len(provider.requests) == 2  # the model's own answer failed: one retry
    retry = provider.requests[1].messages
    assert retry[1].content == "not json"  # it reads its own answer, not the rule's
    assert agent.output_contract_unmet()["broken_by"] == "signed"  # type: ignore[index]
    rows = state(agent)["middleware_decisions"]
    assert [(r["middleware"], r["iteration"]) for r in rows] == [
        ("signed", 1),
        ("last", 1),
        ("signed", 2),
        ("last", 2),
    ]


# -- links: async, bad returns, raising --------------------------------------------------------


def test_async_links_are_awaited() -> None:
    async def admit(message: dict[str, Any], ctx: MessageContext) -> Any:
        return allow(message["content"] + "?", "asked")

    async def tidy(message: dict[str, Any], ctx: MessageContext) -> Any:
        return allow(message["content"].strip(), "tidied")

    provider = mock(replies=["  yes  "])
    agent = (
        Agent.create(provider=provider, model="m").middleware(act(input=admit, output=tidy)).build()
    )
    assert agent.run_sync("really") == "yes"
    assert provider.requests[0].messages[-1].content == "really?"


def test_an_async_callable_object_is_awaited_and_a_hidden_coroutine_is_refused() -> None:
    class Admit:
        async def __call__(self, message: dict[str, Any], ctx: MessageContext) -> Any:
            return allow(message["content"] + "!", "excited")

    async def later(message: dict[str, Any], ctx: MessageContext) -> Any:
        return None

    provider = mock(replies=["ok", "ok"])
    agent = Agent.create(provider=provider, model="m").input_middleware(Admit(), name="admit")
    assert agent.build().run_sync("hi") == "ok"
    assert provider.requests[0].messages[-1].content == "hi!"
    sneaky = (
        Agent.create(provider=provider, model="m")
        .middleware(act(name="sneaky", output=lambda m, c: later(m, c)))
        .build()
    )
    with pytest.raises(MiddlewareError, match="'sneaky' .* not async def: declare it async def"):
        sneaky.run_sync("hi")


@pytest.mark.parametrize(
    ("door", "returned", "said"),
    [
        ("input", ask("sure?"), r"'bad' at the input door returned .*return one of allow"),
        ("input", allow({"content": "x"}), r"rewrote the message to \{'content'"),
        ("input", allow("   "), r"rewrote the message to empty text"),
        ("output", allow(42), r"'bad' at the output door rewrote the answer to 42"),
        ("output", "yes", r"'bad' at the output door returned 'yes'"),
    ],
)
def test_a_link_that_returns_what_its_door_cannot_take_is_named(
    door: str, returned: Any, said: str
) -> None:
    def bad(message: dict[str, Any], ctx: MessageContext) -> Any:
        return returned

    provider = mock(replies=["fine"])
    agent = Agent.create(provider=provider, model="m").middleware(act(**{door: bad})).build()
    with pytest.raises(MiddlewareError, match=said) as caught:
        agent.run_sync("hello")
    assert isinstance(caught.value.stage_error, StageError)
    assert len(provider.requests) == (0 if door == "input" else 1)


def test_a_link_that_raises_at_the_input_door_fails_the_run_before_any_model_call() -> None:
    def flaky(message: dict[str, Any], ctx: MessageContext) -> Any:
        raise ConnectionError("policy service unreachable")

    provider = mock(replies=["never"])
    agent = Agent.create(provider=provider, model="m").input_middleware(flaky).build()
    with pytest.raises(MiddlewareFailedError) as caught:
        agent.run_sync("hello")
    error = caught.value
    assert (error.middleware, error.door) == ("flaky", "input")
    assert "'flaky' at the input door raised ConnectionError" in str(error)
    assert isinstance(error.__cause__, ConnectionError)
    assert provider.requests == [] and "receipts" not in state(agent)
    assert agent.snapshot().status == "failed"


def test_a_link_that_raises_at_the_output_door_fails_the_turn_and_keeps_the_answer() -> None:
    def broken(message: dict[str, Any], ctx: MessageContext) -> Any:
        raise ValueError("rule table missing")

    agent = (
        Agent.create(provider=mock(replies=["the answer"]), model="m")
        .middleware(act(output=broken))
        .build()
    )
    with pytest.raises(MiddlewareFailedError, match="'broken' at the output door") as caught:
        agent.run_sync("hello")
    assert caught.value.stage_error is not None
    assert caught.value.stage_error.stage_path.startswith("route")
    st = state(agent)
    assert st["response"]["content"] == "the answer" and "final_answer" not in st
    assert len(receipts(agent)) == 1  # the call was made (and billed); its answer is kept


# -- the record: replay, narrative, redaction --------------------------------------------------


@pytest.mark.parametrize("message", ["call me asap", "my card", "quote a price"])
def test_replay_reads_the_decisions_and_needs_no_agent(tmp_path: Path, message: str) -> None:
    calls: list[str] = []

    def priced(msg: dict[str, Any], ctx: MessageContext) -> Any:
        calls.append(msg["door"])
        return deny("no prices") if "$" in msg["content"] else allow(msg["content"] + ".")

    call = {"tool_calls": [{"id": "c1", "name": "lookup", "args": {"q": "x"}}]}
    answer = "It is $4" if "price" in message else "done"
    agent = (
        Agent.create(provider=mock(replies=[call, answer]), model="m")
        .tool(LOOKUP)
        .input_middleware(no_secrets)
        .message_middleware(priced)
        .build()
    )
    with contextlib.suppress(MessageDeniedError):  # a refusal is recorded all the same
        agent.run_sync(message)
    ran = len(calls)
    loaded = load_recording(save_recording(agent, tmp_path / "run.jsonl"))
    replayed = replay(loaded)  # no agent, no model, no link
    assert len(calls) == ran
    assert [c.stage_path for c in replayed.history()] == [c.stage_path for c in loaded.history()]
    assert replayed.state.get("middleware_decisions") == loaded.state.get("middleware_decisions")
    replay(loaded, agent)  # against the agent: the links are stood in for too
    assert len(calls) == ran


def test_the_narrative_tells_what_the_links_did() -> None:
    story = narrative()
    agent = (
        Agent.create(provider=mock(replies=["fine"]), model="m")
        .input_middleware(no_secrets)
        .middleware(act(output=signed))
        .recorder(story)
        .build()
    )
    agent.run_sync("asap")
    told = story.text()
    assert "Middleware no_secrets rewrote the message — spelled out" in told
    assert "Middleware signed rewrote the answer — signed" in told
    with pytest.raises(InputRefusedError):
        agent.run_sync("card")
    told = story.text()
    assert "Middleware no_secrets refused the message — card numbers are not taken here" in told
    assert "was asked" not in told  # a refused message was never put to the agent


def test_rewrites_are_hidden_with_the_conversation(tmp_path: Path) -> None:
    rewritten_in, rewritten_out, failed = "Q-7f3a91", "A-c2e804", "X-19bd55"

    def mark_in(message: dict[str, Any], ctx: MessageContext) -> Any:
        return allow(f"{message['content']} {rewritten_in}", "tagged")

    def mark_out(message: dict[str, Any], ctx: MessageContext) -> Any:
        if "boom" in message["content"]:
            raise ValueError(f"cannot tag {failed}")
        return allow(f"{message['content']} {rewritten_out}", "tagged")

    heard: list[str] = []
    story = narrative()

    def build(reply: str, db: str) -> Agent:
        agent = (
            Agent.create(
                provider=mock(replies=[reply]),
                model="m",
                store=SqliteStore(tmp_path / db),
                redact=conversation_redaction(),
            )
            .middleware(act(name="tag", input=mark_in, output=mark_out))
            .recorder(jsonl(tmp_path / f"{db}.jsonl"))
            .recorder(story)
            .build()
        )
        agent.on("*", lambda event: heard.append(repr(event)))
        return agent

    agent = build("fine", "runs.db")
    answer = agent.run_sync("hello")
    assert answer == f"fine {rewritten_out}"  # the live run sees real values
    assert rewritten_in in agent._state()["user_message"]
    rows = thaw(agent.snapshot().state["middleware_decisions"])
    assert [r["value"] for r in rows] == ["[REDACTED]", "[REDACTED]"]
    assert [r["why"] for r in rows] == ["tagged", "tagged"]  # who decided what, and why
    failing = build("boom", "fail.db")
    with pytest.raises(MiddlewareFailedError) as caught:
        failing.run_sync("hello")
    assert failed in str(caught.value)  # the caller reads the link's own words
    surfaces = {
        "store": b"".join(p.read_bytes() for p in sorted(tmp_path.glob("*.db*"))),
        "recordings": b"".join(p.read_bytes() for p in sorted(tmp_path.glob("*.jsonl"))),
        "snapshots": agent.snapshot().to_json() + failing.snapshot().to_json(),
        "events": "\n".join(heard).encode(),
        "narrative": story.text().encode(),
    }
    leaks = [
        (secret, where)
        for secret in (rewritten_in, rewritten_out, failed)
        for where, data in surfaces.items()
        if secret.encode() in data
    ]
    assert leaks == []
    assert all(surfaces.values())


# -- not configured: nothing changes -----------------------------------------------------------


def test_no_message_links_change_no_stage_no_key_and_no_request() -> None:
    call = {"tool_calls": [{"id": "c1", "name": "lookup", "args": {"q": "x"}}]}

    def run(links: tuple[Any, ...]) -> tuple[Agent, list[bytes]]:
        provider = mock(replies=[call, "done"])
        agent = Agent.create(provider=provider, model="m").tool(LOOKUP).middleware(*links).build()
        agent.run_sync("go")
        return agent, [r.canonical_json() for r in provider.requests]

    plain, plain_requests = run(())
    passing, passing_requests = run(
        (act(name="pass", input=lambda m, c: allow(), output=lambda m, c: None),)
    )
    assert passing_requests == plain_requests  # pass-through links change no request
    assert plain.spec().describe() == passing.spec().describe()  # no stage added
    plain_state = state(plain)
    assert "middleware_decisions" not in plain_state and "message_denied" not in plain_state
    assert "middleware" not in plain_state["settings"]
    linked = state(passing)
    assert [r["door"] for r in linked["middleware_decisions"]] == ["input", "output"]
    assert {k: v for k, v in linked.items() if k not in ("middleware_decisions", "settings")} == {
        k: v for k, v in plain_state.items() if k != "settings"
    }
    assert plain.spec().to_mermaid() == passing.spec().to_mermaid()
