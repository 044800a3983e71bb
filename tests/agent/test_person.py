"""A person in the loop: questions the model asks, data it requests, check-ins before
consequential calls; resumes in any process, once; and the record across every pause."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.backends import run_async
from tests.examples import examples
from trackway.agent import (
    Agent,
    DecisionRequiredError,
    InvalidAnswerError,
    Paused,
    PendingQuestionError,
    ProviderConnectionError,
    ResumeIdentityConflictError,
    RunCheckpointError,
    is_paused,
    is_said_by_person,
    mock,
    receipts,
    replay,
    served_at,
)
from trackway.engine import CheckpointClaimedError, ExecutorUsageError, SqliteStore
from trackway.tools import ask_human, define_tool, request_input

from .person_agent import build

ROOT = Path(__file__).resolve().parents[2]


def ask(question: str, call_id: str = "a1") -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": "ask_human", "args": {"question": question}}]}


def refund(amount: float, call_id: str = "r1") -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": "refund", "args": {"amount": amount}}]}


def assert_record(agent: Agent) -> None:
    """The law for every call, and a replay with no agent, across the pauses."""
    for k, receipt in enumerate(receipts(agent), start=1):
        assert served_at(agent, k).hash == receipt["request_hash"]
    snap = agent.snapshot()
    assert [c.stage_path for c in replay(snap).history()] == [c.stage_path for c in snap.history()]


def test_a_question_at_the_first_iteration() -> None:
    agent = build([ask("Which order?"), "Thanks, noted."])
    outcome = agent.run_sync("I want a refund")
    assert is_paused(outcome) and isinstance(outcome, Paused)
    assert (outcome.question, outcome.kind) == ("Which order?", "ask_human")
    assert outcome.call == {"id": "a1", "name": "ask_human", "args": {"question": "Which order?"}}
    assert outcome.run_id == agent.snapshot().run_id
    assert agent.resume_sync(outcome.checkpoint, "order 42") == "Thanks, noted."
    history = agent.snapshot().state["history"]
    assert history[-1] == {
        "role": "tool",
        "content": "order 42",
        "tool_call_id": "a1",
        "name": "ask_human",
    }
    assert "pending_question" not in agent.snapshot().state
    assert_record(agent)


def test_a_check_in_at_iteration_n_approved_declined_and_refused() -> None:
    lookups = [
        {"tool_calls": [{"id": f"l{i}", "name": "ask_human", "args": {"question": f"q{i}"}}]}
        for i in range(2)
    ]
    agent = build([*lookups, refund(5), "Refunded."])
    outcome = agent.run_sync("refund please")
    for answer in ("first", "second"):
        assert isinstance(outcome, Paused) and outcome.kind == "ask_human"
        outcome = agent.resume_sync(outcome.checkpoint, answer)
    assert isinstance(outcome, Paused)
    assert (outcome.kind, outcome.question) == ("check_in", "Refund this order?")
    assert agent.snapshot().state["iteration"] == 3  # paused at iteration n = 3
    with pytest.raises(DecisionRequiredError, match="answer 'approve' or 'decline'"):
        agent.resume_sync(outcome.checkpoint, "sure, why not")
    # the refused answer did not use the checkpoint: the same one takes a decision
    assert agent.resume_sync(outcome.checkpoint, {"decision": "approve"}) == "Refunded."
    assert agent.snapshot().state["history"][-1]["content"] == "refunded 5 for None"
    assert_record(agent)

    declined = build([refund(9), "Not refunded."])
    paused = declined.run_sync("refund")
    assert isinstance(paused, Paused)
    note = {"decision": "decline", "note": "over the limit"}
    assert declined.resume_sync(paused.checkpoint, note) == "Not refunded."
    result = declined.snapshot().state["history"][-1]["content"]
    assert result == "The person declined this call, so it was not run. They said: over the limit"
    assert_record(declined)


def test_two_pauses_in_one_model_turn() -> None:
    both = {
        "tool_calls": [
            {"id": "r1", "name": "refund", "args": {"amount": 5}},
            {"id": "a1", "name": "ask_human", "args": {"question": "Anything else?"}},
        ]
    }
    agent = build([both, "All done."])
    first = agent.run_sync("refund")
    assert isinstance(first, Paused) and first.call["id"] == "r1"
    second = agent.resume_sync(first.checkpoint, "approve")
    assert isinstance(second, Paused) and second.call["id"] == "a1"
    assert agent.resume_sync(second.checkpoint, "no") == "All done."
    roles = [(m["role"], m.get("tool_call_id")) for m in agent.snapshot().state["history"]]
    assert roles == [("user", None), ("assistant", None), ("tool", "r1"), ("tool", "a1")]
    paths = [c.stage_path for c in agent.snapshot().history() if "tool-calls" in c.stage_path]
    assert paths == [paths[0], f"{paths[0]}:resume1", f"{paths[0]}:resume2"]
    assert_record(agent)


def test_request_input_takes_only_an_answer_matching_its_schema() -> None:
    form = request_input(
        question="Where should we ship it?",
        schema={
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    )
    call = {"tool_calls": [{"id": "f1", "name": "request_input", "args": {}}]}
    agent = Agent.create(provider=mock(replies=[call, "Shipping."]), model="m").tool(form).build()
    paused = agent.run_sync("ship it")
    assert isinstance(paused, Paused) and paused.schema is not None
    with pytest.raises(InvalidAnswerError, match="does not match its schema: the answer"):
        agent.resume_sync(paused.checkpoint, {"town": "Paris"})
    assert agent.resume_sync(paused.checkpoint, {"city": "Paris"}) == "Shipping."
    assert agent.snapshot().state["history"][-1]["content"] == '{"city":"Paris"}'
    assert_record(agent)


def test_a_checkpoint_resumes_once_and_a_pending_question_blocks_a_follow_up() -> None:
    agent = build([ask("Which order?"), "ok", "again"])
    paused = agent.run_sync("refund")
    assert isinstance(paused, Paused)
    with pytest.raises(PendingQuestionError, match="waiting for a person's answer"):
        run_async(agent.follow_up, "something else")  # it continues that conversation
    assert agent.resume_sync(paused.checkpoint, "42") == "ok"
    with pytest.raises(CheckpointClaimedError, match="already resumed"):
        agent.resume_sync(paused.checkpoint, "43")


def test_abandon_pause_drops_the_question_on_the_record() -> None:
    agent = build([ask("Which order?"), "fresh start"])
    paused = agent.run_sync("refund")
    assert isinstance(paused, Paused)
    assert agent.abandon_pause_sync() == {
        "question": "Which order?",
        "id": "a1",
        "name": "ask_human",
    }
    state = agent.snapshot().state
    assert state["abandoned_question"]["question"] == "Which order?"
    assert (
        state["history"][-1]["content"] == "The person did not answer: the question was withdrawn."
    )
    assert agent.snapshot().commits[-1].detail["resume"] == {"value": {"abandon": True}}
    assert agent.abandon_pause_sync() is None  # nothing waits any more
    assert agent.run_sync("new question") == "fresh start"


def test_a_resume_for_another_identity_is_refused_before_the_claim() -> None:
    agent = build([ask("Which order?"), "ok"])
    paused = agent.run_sync("refund", identity={"tenant": "acme"}, session_id="s1")
    assert isinstance(paused, Paused)
    with pytest.raises(ResumeIdentityConflictError, match="paused for identity"):
        agent.resume_sync(paused.checkpoint, "42", identity={"tenant": "globex"})
    with pytest.raises(ResumeIdentityConflictError, match="paused in session 's1'"):
        agent.resume_sync(paused.checkpoint, "42", session_id="s2")
    answer = agent.resume_sync(
        paused.checkpoint, "42", identity={"tenant": "acme"}, session_id="s1"
    )
    assert answer == "ok"


def test_resume_in_another_process_from_the_json_checkpoint(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    agent = build([refund(7)], SqliteStore(db))
    paused = agent.run_sync("refund", identity={"tenant": "acme"})
    assert isinstance(paused, Paused)
    saved = tmp_path / "checkpoint.json"
    saved.write_bytes(paused.checkpoint.to_json())
    done = subprocess.run(
        [sys.executable, "-m", "tests.agent.person_agent", str(db), str(saved), "approve"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Refund done."
    store = SqliteStore(db, read_only=True)
    try:
        run = store.load(paused.run_id)
    finally:
        store.close()
    assert run.status == "done"
    assert run.state["history"][-1]["content"] == "refunded 7 for acme"
    assert run.state["identity"] == {"tenant": "acme"}
    again = build(["never"], SqliteStore(db))
    with pytest.raises(CheckpointClaimedError):
        again.resume_sync(saved.read_bytes(), "approve")


def test_two_concurrent_resumes_one_wins(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    paused = build([refund(3)], SqliteStore(db)).run_sync("refund")
    assert isinstance(paused, Paused)
    data = paused.checkpoint.to_json()
    outcomes: list[str] = []
    start = threading.Barrier(2)

    def resume() -> None:
        agent = build(["Refund done."], SqliteStore(db))
        start.wait()
        try:
            outcomes.append(str(agent.resume_sync(data, "approve")))
        except CheckpointClaimedError:
            outcomes.append("claimed")

    threads = [threading.Thread(target=resume) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(outcomes) == ["Refund done.", "claimed"]


def test_library_messages_are_marked_and_never_taken_for_the_person() -> None:
    lookup = define_tool(
        name="lookup",
        description="Look up.",
        input_schema={"type": "object", "properties": {}},
        execute=lambda args, ctx: "ok",
    )
    call = {"tool_calls": [{"id": "c1", "name": "lookup", "args": {}}]}
    agent = (
        Agent.create(provider=mock(replies=[call, "best effort"]), model="m", max_iterations=1)
        .tool(lookup)
        .build()
    )
    agent.run_sync("find it")
    history = agent.snapshot().state["history"]
    assert [is_said_by_person(m) for m in history] == [True, False]
    assert history[-1]["origin"] == "library"


def test_ask_human_with_a_fixed_question_and_async_resume() -> None:
    fixed = ask_human(question="Are you sure?", name="confirm")
    call = {"tool_calls": [{"id": "c1", "name": "confirm", "args": {}}]}
    agent = Agent.create(provider=mock(replies=[call, "ok"]), model="m").tool(fixed).build()
    paused = run_async(agent.run, "delete it")
    assert isinstance(paused, Paused) and paused.question == "Are you sure?"
    with pytest.raises(InvalidAnswerError, match="answer with a non-empty str"):
        run_async(agent.resume, paused.checkpoint, 42)
    assert run_async(agent.resume, paused.checkpoint, "yes") == "ok"


# -- the law over generated runs with people in them -------------------------------------------

person_step = st.one_of(
    st.builds(lambda q: ("ask", q), st.text("abc ?", min_size=1, max_size=8)),
    st.sampled_from([("refund", "approve"), ("refund", "decline"), ("refund", "nonsense")]),
)


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.lists(person_step, min_size=1, max_size=2), max_size=3))
def test_the_law_holds_across_generated_pauses(steps: list[list[tuple[str, str]]]) -> None:
    replies: list[Any] = []
    answers: list[str] = []
    for turn, calls in enumerate(steps):
        tool_calls = []
        for j, (kind, value) in enumerate(calls):
            call_id = f"c{turn}-{j}"
            if kind == "ask":
                tool_calls.append({"id": call_id, "name": "ask_human", "args": {"question": value}})
                answers.append(f"answer to {value}")
            else:
                tool_calls.append({"id": call_id, "name": "refund", "args": {"amount": 1}})
                answers.append(value)
        replies.append({"tool_calls": tool_calls})
    replies.append("finished")
    agent = build(replies)
    outcome = agent.run_sync("go")
    for answer in answers:
        assert isinstance(outcome, Paused)
        if answer == "nonsense":
            with pytest.raises(DecisionRequiredError):
                agent.resume_sync(outcome.checkpoint, answer)
            answer = "approve"
        outcome = agent.resume_sync(outcome.checkpoint, answer)
    assert outcome == "finished"
    history = agent.snapshot().state["history"]
    results = [m["tool_call_id"] for m in history if m["role"] == "tool"]
    assert len(results) == len(answers) == len(set(results))
    assert_record(agent)


# -- failures that can be resumed --------------------------------------------------------------


class FailingOnCall:
    """A provider that answers from a script and fails at call ``fail_at``."""

    name = "flaky"

    def __init__(self, replies: list[Any], fail_at: int) -> None:
        self.inner = mock(replies=replies)
        self.fail_at = fail_at
        self.calls = 0

    async def complete(self, request: Any) -> Any:
        self.calls += 1
        if self.calls == self.fail_at:
            raise ProviderConnectionError("flaky: could not connect to http://127.0.0.1:9")
        return await self.inner.complete(request)


def test_a_provider_failure_carries_the_conversation_and_resume_on_error_retries() -> None:
    lookup = define_tool(
        name="lookup",
        description="Look up.",
        input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
        execute=lambda args, ctx: f"found {args.get('q')}",
    )
    call = {"tool_calls": [{"id": "c1", "name": "lookup", "args": {"q": "x"}}]}
    flaky = FailingOnCall([call], fail_at=2)
    agent = Agent.create(provider=flaky, model="m").tool(lookup).build()
    with pytest.raises(ProviderConnectionError) as caught:  # still the provider's own class
        agent.run_sync("find x", identity={"tenant": "acme"})
    failure = caught.value
    assert isinstance(failure, RunCheckpointError)
    assert failure.last_completed_iteration == 1
    assert failure.run_id == agent.snapshot().run_id
    roles = [m["role"] for m in failure.checkpoint.history]
    assert roles == ["user", "assistant", "tool"]  # up to the last completed iteration
    saved = failure.checkpoint.to_json()

    fresh = mock(replies=["x is found"])
    again = Agent.create(provider=fresh, model="m").tool(lookup).build()
    assert again.resume_on_error_sync(saved, identity={"tenant": "acme"}) == "x is found"
    (request,) = fresh.requests
    assert [m.role for m in request.messages] == ["user", "assistant", "tool"]  # no new message
    assert again.snapshot().run_id != failure.run_id
    assert again.snapshot().state["identity"] == {"tenant": "acme"}
    assert_record(again)


def test_abandoning_a_question_answered_elsewhere_clears_it_here(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    here = build([ask("Which order?"), "new turn"], SqliteStore(db))
    paused = here.run_sync("refund")
    assert isinstance(paused, Paused)
    assert build(["answered"], SqliteStore(db)).resume_sync(paused.checkpoint, "42") == "answered"
    with pytest.raises(CheckpointClaimedError):
        here.abandon_pause_sync()
    assert here.run_sync("next") == "new turn"  # nothing waits here any more


def test_resume_by_the_paused_run_id_in_the_agents_store(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "runs.db")
    paused = build([ask("Which order?")], store).run_sync("I want a refund")
    assert isinstance(paused, Paused)
    (waiting,) = store.paused()
    assert waiting.run_id == paused.run_id and waiting.payload["question"] == "Which order?"
    # another agent object, as another process builds it, finds the run by its id
    fresh = build(["Thanks, noted."], store)
    assert fresh.resume_sync(paused.run_id, "order 42") == "Thanks, noted."
    assert store.paused() == []
    with pytest.raises(CheckpointClaimedError):
        build(["never"], store).resume_sync(paused.checkpoint.checkpoint_id, "again")
    with pytest.raises(ExecutorUsageError, match="store"):
        build(["never"]).resume_sync(paused.run_id, "order 42")
    store.close()
