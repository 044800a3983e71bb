"""Why did the agent answer that? The causal trace, the transcript and the narrative say."""

from __future__ import annotations

from pathlib import Path

import anyio

from trackway import Executor, causal_chain, flow_chart
from trackway._demo import demo_agent
from trackway.agent import save_recording, transcript
from trackway.recorders import narrative

WEATHER_TRACE = """\
Final (final#8, commit 9) wrote final_answer
  ← via response: Call LLM (call-llm#6, commit 7) wrote receipts, response
    ← via history: Tool calls (tool-calls#5, commit 6) wrote history, tool_results, iteration
      ← via response: Call LLM (call-llm#3, commit 4) wrote receipts, response
        ← via history: Seed (seed#0, commit 1) wrote settings, user_message, iteration, \
max_iterations, history
          ← via message: run input
      ← control: 'tool-calls' chosen by Route (route#4, commit 5) wrote nothing
        ← via response: Call LLM (call-llm#3, commit 4) wrote receipts, response (see above)
  ← control: 'final' chosen by Route (route#7, commit 8) wrote nothing
    ← via response: Call LLM (call-llm#6, commit 7) wrote receipts, response (see above)"""


def test_the_answer_is_traced_to_the_model_calls_and_the_tool_result_they_read() -> None:
    agent = demo_agent()
    agent.run_sync("Weather in Paris?")
    chain = causal_chain(agent.snapshot(), "final_answer")
    assert chain.render() == WEATHER_TRACE
    assert chain.gaps == []  # optional features read absent are not false alarms
    full = causal_chain(agent.snapshot(), "final_answer", profile=False)
    assert len(full.writers()) > len(chain.writers()) - 1 and full.gaps  # everything, noise too


def test_a_plain_chart_keeps_its_gaps_and_ignore_and_optional_apply_by_hand() -> None:
    chart = flow_chart("Read", lambda s: s.__setitem__("out", s.get("typo", 1))).build()
    snap = Executor(chart).run_sync().snapshot
    assert causal_chain(snap, "out").gaps == [
        "read#0 read 'typo', which no stage had written and the input did not hold (it was absent)"
    ]
    assert causal_chain(snap, "out", optional=["typo"]).gaps == []
    two = (
        flow_chart("A", lambda s: s.__setitem__("n", 1))
        .then("B", lambda s: s.__setitem__("out", s["n"]))
        .build()
    )
    traced = causal_chain(Executor(two).run_sync().snapshot, "out", ignore=["n"])
    assert traced.writers() == [2]


def test_the_transcript_is_the_conversation_as_served_call_by_call(tmp_path: Path) -> None:
    agent = demo_agent()
    result = anyio.run(agent.run_result, "Weather in Paris?")
    calls = agent.transcript()
    assert [(c.k, c.member) for c in calls] == [(1, ""), (2, "")]
    assert [(m.role, m.content) for m in calls[0].served] == [("user", "Weather in Paris?")]
    assert calls[0].answer["tool_calls"] == [
        {"id": "c1", "name": "weather", "args": {"city": "Paris"}}
    ]
    assert [(m.role, m.content) for m in calls[1].served] == [
        ("assistant", ""),
        ("tool", "Paris: sunny, 22°C"),
    ]
    assert calls[1].answer["content"] == "It is sunny in Paris, 22°C."
    assert calls[0].usage is None  # the mock reports no usage, and the transcript says so
    # the same from a recording, with no agent
    assert transcript(save_recording(agent, tmp_path / "rec.jsonl")) == calls
    assert result.transcript() == calls
    assert result.all_messages() == result.messages
    assert result.all_messages()[-1].content == "It is sunny in Paris, 22°C."


def test_the_narrative_shows_the_arguments_the_result_and_the_models_text() -> None:
    story = narrative()
    demo_agent((story,)).run_sync("Weather in Paris?")
    text = story.text()
    assert 'Tool weather {city: "Paris"}: success — "Paris: sunny, 22°C"' in text
    assert 'Model call 2 answered "It is sunny in Paris, 22°C."' in text
    short = narrative(max_value_chars=8)
    demo_agent((short,)).run_sync("Weather in Paris?")
    assert '"It is sunny in P..." (27 chars)' in short.text()  # cut, marked, its length said
    full = narrative(detail="full")
    demo_agent((full,)).run_sync("Weather in Paris?")
    text = full.text()
    assert 'emitted stream.tool_start {id: "c1", name: "weather", args: {city: "Paris"}}' in text
    assert 'result: "Paris: sunny, 22°C"' in text
    assert 'wrote response = {content: "It is sunny in Paris, 22°C."' in text
