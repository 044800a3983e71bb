"""examples/weather_agent.py runs offline: a turn, its narrative, a recording, served_at, replay."""

from __future__ import annotations

import json
import re
import runpy

from trackway import load_recording, receipts, served_at

from .example_script import EXAMPLES, run_script

EXAMPLE = EXAMPLES / "weather_agent.py"


def run_example(*args: str) -> str:
    proc = run_script(EXAMPLE, *args)
    assert proc.stderr == ""
    return proc.stdout


def test_runs_a_turn_prints_the_narrative_and_proves_request_2(tmp_path):
    out = run_example(str(tmp_path))

    assert "Answer: Paris: sunny, 71.6°F; Oslo: light rain, 48.2°F." in out
    assert "Narrative (12 commits):" in out
    told = out.split("Narrative (12 commits):\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert told == [  # one line per step: the calls, what each tool was given and gave back
        'The agent was asked "What is the weather in Paris and Oslo, in Fahrenheit?"',
        'Model call 1 asked for weather ×2; said "Let me look that up."',
        'Tool weather {city: "Paris"}: success — {city: "Paris", celsius: 22, sky: "sunny"}',
        'Tool weather {city: "Oslo"}: success — {city: "Oslo", celsius: 9, sky: "light rain"}',
        "Model call 2 asked for convert ×2",
        'Tool convert {value: 22, to: "fahrenheit"}: success — {value: 71.6, unit: "fahrenheit"}',
        'Tool convert {value: 9, to: "fahrenheit"}: success — {value: 48.2, unit: "fahrenheit"}',
        'Model call 3 answered "Paris: sunny, 71.6°F; Oslo: light rain, 48.2°F."',
        'The agent answered "Paris: sunny, 71.6°F; Oslo: light rain, 48.2°F."',
    ]

    path = tmp_path / "weather-turn.json"
    assert f"Recording: {path}" in out and "Model calls: 3" in out
    hashes = re.findall(r"^Request 2.*?([0-9a-f]{16})$", out, flags=re.MULTILINE)
    assert len(hashes) == 2 and hashes[0] == hashes[1], out
    assert "Request 2: 4 messages, tools ['weather', 'convert']" in out
    assert "Request 2 matches its receipt" in out
    assert "Replay: 12 commits, the same as the recording" in out
    assert "Replay with another system prompt diverges at system-prompt#1:" in out

    # The recording on disk holds the whole turn, and the law holds for every call.
    recording = load_recording(path)
    assert recording.state["final_answer"] == "Paris: sunny, 71.6°F; Oslo: light rain, 48.2°F."
    for k, receipt in enumerate(receipts(path), start=1):
        assert served_at(recording, k).hash == receipt["request_hash"]
        assert receipt["request_hash"].startswith(hashes[0]) == (k == 2)


def test_runs_without_arguments_in_a_temporary_directory():
    out = run_example()
    assert "weather-turn.json" in out and "Request 2 matches its receipt" in out


def test_the_tools_the_model_asked_for_ran_in_order():
    example = runpy.run_path(str(EXAMPLE))
    agent = example["build_agent"]()
    assert agent.run_sync("Weather in Oslo, in Fahrenheit?") == "Oslo: light rain, 48.2°F."
    tool_messages = [m for m in agent.snapshot().state["history"] if m["role"] == "tool"]
    assert [(m["tool_call_id"], json.loads(m["content"])) for m in tool_messages] == [
        ("w-Oslo", {"city": "Oslo", "celsius": 9, "sky": "light rain"}),
        ("f-Oslo", {"value": 48.2, "unit": "fahrenheit"}),
    ]
    assert agent.stopped_early() is None
