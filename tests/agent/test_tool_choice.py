"""Tool choice by classifier: the pick filed before each call, the outcome after it, the
narrowing under ``serve={"top": N}`` and every reason it serves the full set, all rebuilt by
``served_at`` and replayed without the classifier."""

from __future__ import annotations

from typing import Any

import pytest

from trackway.agent import (
    TOOL_CHOICE_QUESTION,
    Agent,
    AgentBuildError,
    define_skill,
    mock,
    receipts,
    replay,
    served_at,
)
from trackway.agent.classify import ClassifierError, mock_classifier
from trackway.tools import define_tool

Q = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


def tool(name: str) -> Any:
    return define_tool(
        name=name, description=f"Use {name}.", input_schema=Q, execute=lambda a, c: f"{name} ok"
    )


TOOLS = [tool("alpha"), tool("beta"), tool("gamma"), tool("delta")]


def call(name: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "args": {"q": "x"}}]}


def pick(*ranked: tuple[str, float], chosen: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"ranked": [list(r) for r in ranked], "usage": {"input_tokens": 7}}
    if chosen is not None:
        out["chosen"] = chosen
    return out


def build(provider: Any, classifier: Any, serve: Any = "all", **kw: Any) -> Agent:
    return (
        Agent.create(provider=provider, model="m", **kw)
        .system("Be exact.")
        .tools(TOOLS)
        .tool_choice(classifier=classifier, serve=serve)
        .build()
    )


def law(agent: Agent, provider: Any) -> list[Any]:
    snap = agent.snapshot()
    out = []
    for k, receipt in enumerate(receipts(agent), start=1):
        request = served_at(snap, k)
        assert request.hash == receipt["request_hash"] == provider.requests[k - 1].hash
        out.append(request)
    assert len(out) == len(provider.requests)
    for replayed in (replay(snap, agent), replay(snap)):  # the classifier is not asked again
        assert [c.stage_path for c in replayed.history()] == [c.stage_path for c in snap.history()]
    return out


def names(request: Any) -> list[str]:
    return [t.name for t in request.tools or ()]


def test_advisory_choice_serves_the_unarmed_agents_bytes_and_files_pick_and_outcome() -> None:
    replies = [call("beta"), "done"]
    plain_provider = mock(replies=list(replies))
    plain = Agent.create(provider=plain_provider, model="m").system("Be exact.").tools(TOOLS)
    plain.build().run_sync("go")
    provider = mock(replies=list(replies))
    classifier = mock_classifier([pick(("beta", 0.8), ("alpha", 0.2), chosen="beta")] * 2)
    agent = build(provider, classifier)
    agent.run_sync("go")
    law(agent, provider)
    assert [r.hash for r in provider.requests] == [r.hash for r in plain_provider.requests]
    rows = agent.snapshot().state["tool_choices"]
    assert [r["kind"] for r in rows] == ["pick", "outcome", "pick", "outcome"]
    first = rows[0]
    assert first["offered"] == ["alpha", "beta", "gamma", "delta"]
    assert first["ranked"] == [{"name": "beta", "score": 0.8}, {"name": "alpha", "score": 0.2}]
    assert first["chosen"] == "beta" and first["narrowed"] is False
    assert rows[1] == {"k": 1, "kind": "outcome", "called": ["beta"], "first_agrees": True}
    assert rows[3] == {"k": 2, "kind": "outcome", "called": []}
    (asked, _) = classifier.calls
    assert asked.question_id == TOOL_CHOICE_QUESTION
    assert [c.name for c in asked.criteria] == ["alpha", "beta", "gamma", "delta"]
    assert asked.state == {"message": "go", "skill": None}


def test_top_n_narrows_the_served_list_at_the_one_site_it_is_built() -> None:
    provider = mock(replies=[call("gamma"), "done"])
    classifier = mock_classifier([pick(("gamma", 0.9), ("alpha", 0.5), ("beta", 0.1))] * 2)
    agent = build(provider, classifier, serve={"top": 2})
    agent.run_sync("go")
    first, _ = law(agent, provider)
    assert names(first) == ["alpha", "gamma"]  # wire order, the top two
    row = agent.snapshot().state["tool_choices"][0]
    assert row["served"] == ["alpha", "gamma"] and row["narrowed"] is True


def test_the_doors_are_never_candidates_and_never_narrowed_away() -> None:
    skill = define_skill(id="s", title="S", body="B.", tools=[tool("epsilon")])
    provider = mock(replies=["done"])
    classifier = mock_classifier([pick(("alpha", 0.9), ("read_skill", 0.8))])
    agent = (
        Agent.create(provider=provider, model="m")
        .tools(TOOLS)
        .skill(skill)
        .tool_choice(classifier=classifier, serve={"top": 1})
        .build()
    )
    agent.run_sync("go")
    (first,) = law(agent, provider)
    assert names(first) == ["alpha", "read_skill", "list_skills", "skip_step", "present"]
    assert "read_skill" not in [c.name for c in classifier.calls[0].criteria]


@pytest.mark.parametrize(
    ("script", "top", "reason"),
    [
        ([pick(("alpha", 0.9))], 2, "unavailable"),  # fewer than N scored
        ([pick(("alpha", 0.9), ("beta", 0.5))], 4, "too-few"),  # fewer than N + 1 offered
    ],
)
def test_the_full_set_is_served_with_the_reason_on_the_row(
    script: list[Any], top: int, reason: str
) -> None:
    provider = mock(replies=["done"])
    agent = build(provider, mock_classifier(script), serve={"top": top})
    agent.run_sync("go")
    (first,) = law(agent, provider)
    assert names(first) == ["alpha", "beta", "gamma", "delta"]
    row = agent.snapshot().state["tool_choices"][0]
    assert row["skip"] == reason and row["narrowed"] is False


def test_a_failed_classifier_is_an_error_row_and_the_full_set() -> None:
    provider = mock(replies=["done"])
    failing = mock_classifier([ClassifierError("rate limited", status=429, retryable=True)])
    agent = build(provider, failing, serve={"top": 1})
    agent.run_sync("go")
    (first,) = law(agent, provider)
    assert names(first) == ["alpha", "beta", "gamma", "delta"]
    row = agent.snapshot().state["tool_choices"][0]
    assert row["kind"] == "error" and row["status"] == 429 and row["retryable"] is True
    assert row["served"] == ["alpha", "beta", "gamma", "delta"]


def test_a_miss_is_answered_off_wire_and_the_next_call_serves_everything() -> None:
    provider = mock(replies=[call("delta"), call("alpha"), "done"])
    classifier = mock_classifier([pick(("alpha", 0.9), ("beta", 0.5), chosen="alpha")] * 3)
    agent = build(provider, classifier, serve={"top": 1})
    agent.run_sync("go")
    first, second, third = law(agent, provider)
    assert names(first) == ["alpha"]
    assert "was not offered" in second.messages[-1].content
    assert names(second) == ["alpha", "beta", "gamma", "delta"]  # after the miss
    assert names(third) == ["alpha"]
    rows = agent.snapshot().state["tool_choices"]
    assert rows[1]["miss"] == {"wanted": ["delta"]} and rows[1]["first_agrees"] is False
    assert rows[2]["skip"] == "after-miss"
    off_wire = [e for c in agent.snapshot().history() for e in c.events]
    assert [e.payload["name"] for e in off_wire if e.name == "tools.answered_off_wire"] == ["delta"]


def test_the_wrap_up_call_asks_nothing_and_says_why() -> None:
    provider = mock(replies=[call("alpha"), "wrapped"])
    classifier = mock_classifier([pick(("alpha", 0.9), ("beta", 0.5))])
    agent = build(provider, classifier, serve={"top": 1}, max_iterations=1)
    agent.run_sync("go")
    _, wrap = law(agent, provider)
    assert wrap.tools is None
    row = agent.snapshot().state["tool_choices"][-2]
    assert row["skip"] == "wrap-up" and "ranked" not in row
    assert len(classifier.calls) == 1


def test_tool_choice_and_react_mode_are_checked_at_build() -> None:
    base = Agent.create(provider=mock(reply="x"), model="m").tools(TOOLS)
    with pytest.raises(AgentBuildError, match="top must be a whole number >= 1"):
        base.tool_choice(classifier=mock_classifier([]), serve={"top": 0})
    with pytest.raises(AgentBuildError, match="use mock_classifier"):
        base.tool_choice(classifier=object())
    with pytest.raises(AgentBuildError, match="react_mode='classic' serves one tool list"):
        (
            Agent.create(provider=mock(reply="x"), model="m", react_mode="classic")
            .tools(TOOLS)
            .tool_choice(classifier=mock_classifier([]))
            .build()
        )
    with pytest.raises(AgentBuildError, match="nothing to group: use 'dynamic'"):
        Agent.create(provider=mock(reply="x"), model="m", react_mode="dynamic-grouped")  # type: ignore[arg-type]
    classic = Agent.create(provider=mock(reply="x"), model="m", react_mode="classic").tools(TOOLS)
    assert classic.build().run_sync("go") == "x"
