"""A weather agent that runs offline, and the proof of what it sent to its model.

Run it: ``python examples/weather_agent.py [DIR]``. Without ``DIR`` it uses a temporary
directory. The agent has two tools, ``weather`` and ``convert`` (a unit conversion); a
scripted stand-in for the model (the ``mock`` provider) asks for them the way an LLM would.
The script runs one turn and prints the answer and the narrative of the turn. Then it saves
the turn as a recording, rebuilds the second model request from the recording alone and
checks its hash against the receipt the run committed, and replays the turn without a model
or tools: first with the same agent, then with a changed system prompt, which diverges.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from trackway import (
    Agent,
    LLMRequest,
    ReplayDivergence,
    ToolContext,
    define_tool,
    load_recording,
    mock,
    receipts,
    replay,
    save_recording,
    served_at,
)
from trackway.recorders import narrative

SYSTEM = "You answer weather questions. Give temperatures in the unit the user asks for."
QUESTION = "What is the weather in Paris and Oslo, in Fahrenheit?"
FORECASTS = {
    "Paris": {"celsius": 22, "sky": "sunny"},
    "Oslo": {"celsius": 9, "sky": "light rain"},
}


# -- the tools ----------------------------------------------------------------------------


def current_weather(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    forecast = FORECASTS.get(args["city"])
    if forecast is None:
        raise LookupError(f"no forecast for {args['city']}")
    return {"city": args["city"], **forecast}


def convert_temperature(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    value, unit = args["value"], args["to"]
    converted = value * 9 / 5 + 32 if unit == "fahrenheit" else (value - 32) * 5 / 9
    return {"value": round(converted, 1), "unit": unit}


WEATHER = define_tool(
    name="weather",
    description="Current weather for a city: temperature in Celsius and the sky.",
    input_schema={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
    execute=current_weather,
)
CONVERT = define_tool(
    name="convert",
    description="Convert a temperature between Celsius and Fahrenheit.",
    input_schema={
        "type": "object",
        "properties": {
            "value": {"type": "number"},
            "to": {"enum": ["celsius", "fahrenheit"]},
        },
        "required": ["value", "to"],
    },
    execute=convert_temperature,
)


# -- the model, offline -------------------------------------------------------------------


def offline_model(request: LLMRequest) -> str | dict[str, Any]:
    """Stands in for an LLM: reads the conversation and picks the next step."""
    results = {m.tool_call_id: json.loads(m.content) for m in request.messages if m.role == "tool"}
    cities = [city for city in FORECASTS if city in request.messages[0].content]
    if not results:
        calls = [{"id": f"w-{c}", "name": "weather", "args": {"city": c}} for c in cities]
        return {"content": "Let me look that up.", "tool_calls": calls}
    if f"f-{cities[0]}" not in results:
        calls = [
            {
                "id": f"f-{c}",
                "name": "convert",
                "args": {"value": results[f"w-{c}"]["celsius"], "to": "fahrenheit"},
            }
            for c in cities
        ]
        return {"tool_calls": calls}
    parts = [f"{c}: {results[f'w-{c}']['sky']}, {results[f'f-{c}']['value']}°F" for c in cities]
    return "; ".join(parts) + "."


def build_agent(system: str = SYSTEM, recorders: tuple[object, ...] = ()) -> Agent:
    builder = (
        Agent.create(provider=mock(respond=offline_model), model="offline", max_iterations=5)
        .system(system)
        .tools([WEATHER, CONVERT])
    )
    for recorder in recorders:
        builder.recorder(recorder)
    return builder.build()


# -- the turn, its recording and its replay -----------------------------------------------


def main(argv: list[str]) -> int:
    if not argv:
        with tempfile.TemporaryDirectory() as tmp:
            return main([tmp])
    story = narrative()
    agent = build_agent(recorders=(story,))
    answer = agent.run_sync(QUESTION)
    print(f"Question: {QUESTION}")
    print(f"Answer: {answer}")
    print(f"\nNarrative ({agent.commit_count()} commits):")
    print(story.text())

    path = save_recording(agent, Path(argv[0]) / "weather-turn.json")
    print(f"\nRecording: {path}")
    recording = load_recording(path)
    calls = receipts(recording)
    print(f"Model calls: {len(calls)}")

    # Request 2, rebuilt from the recording alone, is the request the model was sent.
    request = served_at(recording, 2)
    receipt = calls[1]
    print(
        f"Request 2: {len(request.messages)} messages, tools "
        f"{[t.name for t in request.tools or ()]}, sha256 {request.hash[:16]}"
    )
    if request.hash != receipt["request_hash"]:
        print("Request 2 does NOT match its receipt", file=sys.stderr)
        return 1
    print(f"Request 2 matches its receipt: {receipt['request_hash'][:16]}")

    replayed = replay(recording, build_agent())
    print(f"Replay: {len(replayed)} commits, the same as the recording")
    try:
        replay(recording, build_agent(system="Answer in Kelvin."))
    except ReplayDivergence as divergence:
        print(f"Replay with another system prompt diverges at {divergence.stage_path}:")
        print(f"  {divergence}")
    else:
        print("Replay with another system prompt did not diverge", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
