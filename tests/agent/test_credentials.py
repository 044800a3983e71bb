"""Credentials behind consent: a tool that needs a credential waits for the person's consent
(a pause of kind ``consent``) before its first call of a run; the value is fetched for the
call only, scoped to the run's identity, and never reaches a request, the state, the store,
a recording, an event, a narrative or a log."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from trackway.agent import (
    Agent,
    AgentBuildError,
    DecisionRequiredError,
    ResumeIdentityConflictError,
    is_paused,
    mock,
    replay,
    save_recording,
)
from trackway.engine import SqliteStore, thaw
from trackway.recorders import narrative
from trackway.tools import (
    CredentialError,
    ToolContext,
    ToolDefinitionError,
    allow,
    define_tool,
    tool,
)

SECRET = "ghp_0123456789abcdefSECRET"
ANN = {"tenant": "acme", "principal": "ann"}


def calls(*items: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"id": i, "name": n, "args": a} for i, n, a in items]}


@tool(needs=["github"])
def issues(repo: str, ctx: ToolContext) -> str:
    """List a repository's open issues."""
    token = ctx.credential("github")
    assert token == SECRET
    return f"3 open issues in {repo} (read with {token})"


@tool(needs=["github"])
def close(number: int, ctx: ToolContext) -> str:
    """Close an issue."""
    raise PermissionError(f"token {ctx.credential('github')} may not close #{number}")


class Vault:
    """Credentials by identity: what a real deployment's secret store would answer."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, Any]] = []

    def __call__(self, name: str, identity: Any) -> str:
        self.asked.append((name, None if identity is None else identity.principal))
        return SECRET


def build(replies: list[Any], vault: Vault, tmp_path: Path | None = None) -> Any:
    provider = mock(replies=replies)
    story = narrative(max_value_chars=10_000)
    store = None if tmp_path is None else SqliteStore(tmp_path / "runs.db")
    agent = (
        Agent.create(provider=provider, model="m", store=store)
        .tool(issues)
        .tool(close)
        .credentials(vault)
        .recorder(story)
        .build()
    )
    return agent, provider, story


def test_the_first_call_waits_for_consent_and_the_value_goes_nowhere(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    vault = Vault()
    replies = [
        calls(("a", "issues", {"repo": "x/y"})),
        calls(("b", "issues", {"repo": "x/z"}), ("c", "close", {"number": 7})),
        "Done.",
    ]
    agent, provider, story = build(replies, vault, tmp_path)
    events: list[Any] = []
    caplog.set_level(logging.DEBUG)
    paused = agent.run_sync("triage", identity=ANN)
    assert is_paused(paused) and paused.kind == "consent"
    assert paused.question == (
        "May issues use your 'github' credential for this conversation? Answer 'approve' or "
        "'decline'."
    )
    assert vault.asked == []  # nothing is fetched before the person answers
    with pytest.raises(ResumeIdentityConflictError):  # only the identity asked may answer
        agent.resume_sync(paused.checkpoint, "approve", identity={**ANN, "principal": "bob"})
    with pytest.raises(DecisionRequiredError):
        agent.resume_sync(paused.checkpoint, "yes please", identity=ANN)
    agent.on("*", events.append)
    assert agent.resume_sync(paused.checkpoint, "approve", identity=ANN) == "Done."
    # asked once per call that ran, for the run's identity; the run asked the person once
    assert vault.asked == [("github", "ann")] * 3
    st = thaw(agent.snapshot().state)
    assert st["consents"] == [
        {"credential": "github", "tool": "issues", "id": "a", "iteration": 1, "granted": True}
    ]
    served = {m["tool_call_id"]: m["content"] for m in st["history"] if m["role"] == "tool"}
    assert served["a"] == "3 open issues in x/y (read with [credential])"
    assert served["c"].endswith("token [credential] may not close #7")
    rows = {r["id"]: r for r in st["tool_results"]}
    assert rows["a"]["masked"] is True and rows["c"]["status"] == "failure"
    # the byte scan: every surface the run leaves behind
    for request in provider.requests:
        assert SECRET not in request.model_dump_json()
    assert SECRET not in json.dumps(st)
    assert SECRET not in json.dumps([list(c) for c in agent.snapshot().history()], default=str)
    assert SECRET.encode() not in (tmp_path / "runs.db").read_bytes()
    for wal in tmp_path.glob("runs.db-*"):
        assert SECRET.encode() not in wal.read_bytes()
    recording = save_recording(agent, tmp_path / "rec.jsonl")
    assert SECRET not in Path(tmp_path / "rec.jsonl").read_text()
    assert SECRET not in json.dumps([e.payload for e in events], default=str)
    told = story.text(paused.run_id)
    assert "issues" in told and SECRET not in told
    assert SECRET not in caplog.text
    replay(recording)  # no credentials, no vault: the consent and outcomes are recorded
    assert vault.asked == [("github", "ann")] * 3


def test_a_refused_consent_teaches_the_model_and_is_not_asked_again() -> None:
    vault = Vault()
    replies = [
        calls(("a", "issues", {"repo": "x/y"})),
        calls(("b", "issues", {"repo": "x/z"})),
        "I could not read the issues.",
    ]
    agent, _, _ = build(replies, vault)
    paused = agent.run_sync("triage", identity=ANN)
    answer = {"decision": "decline", "note": "not today"}
    assert agent.resume_sync(paused.checkpoint, answer, identity=ANN) == (
        "I could not read the issues."
    )
    assert vault.asked == []
    st = thaw(agent.snapshot().state)
    assert st["consents"][0]["granted"] is False
    served = [m["content"] for m in st["history"] if m["role"] == "tool"]
    assert served[0].startswith("Not run: the person did not consent to issues using their ")
    assert served[0].endswith("They said: not today")
    assert served[1].startswith("Not run: the person did not consent")  # no second question
    assert [r["consent"] for r in st["tool_results"]] == ["github", "github"]
    replay(agent.snapshot())


def test_declarations_are_checked_where_they_are_written() -> None:
    with pytest.raises(ToolDefinitionError, match="give a list of credential names"):
        define_tool(name="t", description="d", input_schema={}, execute=lambda a, c: "", needs="x")
    with pytest.raises(ToolDefinitionError, match="names one twice"):
        tool(needs=["a", "a"], name="t", description="d")(lambda ctx: "")
    with pytest.raises(AgentBuildError, match=r"need credentials .* \.credentials\(provider\)"):
        Agent.create(provider=mock(reply="x"), model="m").tool(issues).build()

    @tool
    def undeclared(ctx: ToolContext) -> str:
        """Read a credential it never declared."""
        return ctx.credential("github")

    agent = (
        Agent.create(provider=mock(replies=[calls(("a", "undeclared", {})), "ok"]), model="m")
        .tool(undeclared)
        .build()
    )
    agent.run_sync("go")
    served = next(m for m in agent.snapshot().state["history"] if m["role"] == "tool")
    assert CredentialError.__name__ in served["content"]
    assert "define_tool(..., needs=['github'])" in served["content"]


def test_a_vault_that_fails_fails_the_call_and_says_so() -> None:
    def empty(name: str, identity: Any) -> None:
        return None

    agent = (
        Agent.create(
            provider=mock(replies=[calls(("a", "issues", {"repo": "x/y"})), "sorry"]), model="m"
        )
        .tool(issues)
        .credentials(empty)
        .build()
    )
    paused = agent.run_sync("go")
    agent.resume_sync(paused.checkpoint, "approve")
    st = thaw(agent.snapshot().state)
    assert st["tool_results"][0]["status"] == "failure"
    assert st["tool_results"][0]["error"]["kind"] == "credentials"


def test_a_checked_in_call_is_asked_first_then_consent_with_the_links_arguments() -> None:
    vault = Vault()
    ran: list[str] = []

    @tool(needs=["github"])
    def label(repo: str, ctx: ToolContext) -> str:
        """Label a repository."""
        ran.append(repo)
        return f"labelled {repo}"

    def pin(call: dict[str, Any], ctx: ToolContext) -> Any:
        return allow({"repo": "acme/pinned"}, "one repo only", from_={"repo": "policy"})

    agent = (
        Agent.create(
            provider=mock(replies=[calls(("a", "label", {"repo": "x/y"})), "ok"]), model="m"
        )
        .tool(label)
        .check_in(["label"])
        .tool_middleware(pin)
        .credentials(vault)
        .build()
    )
    first = agent.run_sync("label it", identity=ANN)
    assert first.kind == "check_in"  # the links ran, then the person is asked
    second = agent.resume_sync(first.checkpoint, "approve", identity=ANN)
    assert second.kind == "consent" and ran == []
    assert agent.resume_sync(second.checkpoint, "approve", identity=ANN) == "ok"
    assert ran == ["acme/pinned"]  # what the link made of the call ran
    row = thaw(agent.snapshot().state["tool_results"])[0]
    assert row["rewritten"] == [{"argument": "repo", "value": "acme/pinned", "source": "policy"}]
    replay(agent.snapshot())
