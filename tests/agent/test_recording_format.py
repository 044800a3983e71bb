"""One recording format (JSON Lines, ``trackway.recording/2``) for charts, agents and
compositions; the formats before it still load. A fixture per format version is kept."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from trackway import Executor, flow_chart
from trackway.agent import (
    Agent,
    LLMCall,
    Sequence,
    load_recording,
    mock,
    receipts,
    replay,
    save_recording,
    served_at,
)
from trackway.engine import DocumentError
from trackway.recorders import RECORDING_FORMAT, jsonl
from trackway.recorders import load_recording as load_stream

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize(
    "name",
    ["recording-5c5076e.json", "recording-jsonl-v1.jsonl", "recording-v2.jsonl"],
)
def test_every_format_version_loads_and_rebuilds_its_calls(name: str) -> None:
    snap = load_recording(FIXTURES / name)
    calls = receipts(snap)
    assert calls
    for k, receipt in enumerate(calls, start=1):
        assert served_at(snap, k).hash == receipt["request_hash"]
    replay(snap)  # an agent's recording replays without the agent, whatever its version


def test_save_recording_writes_the_streamed_format_with_the_chart(tmp_path: Path) -> None:
    agent = Agent.create(provider=mock(replies=["hi"]), model="m").build()
    agent.run_sync("hello")
    path = save_recording(agent, tmp_path / "run.jsonl")
    lines = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    assert lines[0]["type"] == "on_run_start"
    assert lines[0]["format"] == RECORDING_FORMAT == "trackway.recording/2"
    assert lines[0]["chart"]["id"] == "agent-agent" and "flowchart" in lines[0]["chart"]["mermaid"]
    assert lines[-1]["type"] == "on_run_end" and lines[-1]["status"] == "done"
    assert load_recording(path) == agent.snapshot() == load_stream(path)


def test_the_live_stream_and_the_saved_file_read_the_same(tmp_path: Path) -> None:
    streamed = tmp_path / "live.jsonl"
    agent = Agent.create(provider=mock(replies=["hi"]), model="m").recorder(jsonl(streamed)).build()
    agent.run_sync("hello")
    agent.shutdown()
    saved = save_recording(agent, tmp_path / "saved.jsonl")
    assert load_recording(streamed) == load_recording(saved) == agent.snapshot()


def test_charts_results_and_compositions_save_to_the_one_format(tmp_path: Path) -> None:
    def double(scope):  # type: ignore[no-untyped-def]
        scope["y"] = scope["x"] * 2

    chart = flow_chart("Double", double).build(name="double", chart_id="double")
    result = Executor(chart).run_sync({"x": 2})
    loaded = load_recording(save_recording(result, tmp_path / "chart.jsonl"))
    assert loaded.state["y"] == 4 and loaded == result.snapshot
    flow = (
        Sequence.create()
        .step("a", LLMCall.create(provider=mock(replies=["one"]), model="m").build())
        .step("b", LLMCall.create(provider=mock(replies=["two"]), model="m").build())
        .build()
    )
    flow.run_sync("go")
    record = load_recording(save_recording(flow, tmp_path / "flow.jsonl"))
    assert [r["member"] for r in receipts(record)] == ["a", "b"]
    replay(record, flow)


def test_what_is_not_a_recording_is_refused_naming_the_file(tmp_path: Path) -> None:
    junk = tmp_path / "junk.jsonl"
    junk.write_bytes(b'{"type": "on_run_start", "format": "trackway.recording/9", "run_id": "r"}\n')
    with pytest.raises(DocumentError, match="trackway.recording/9"):
        load_recording(junk)
    with pytest.raises(DocumentError, match="cannot read the recording"):
        load_recording(tmp_path / "missing.jsonl")
