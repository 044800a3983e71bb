"""Golden recordings: a scripted multi-turn tool run, byte for byte.

The hot path of the agent (request assembly, tool dispatch, recorder fan-out, value
encoding) is optimized for speed; none of that may change what a run leaves behind. Each
scenario runs a scripted agent with a live ``jsonl`` recorder and a ``narrative`` recorder
attached (in full, and compact) and a ``"*"`` event listener, then compares against
checked-in files in ``tests/agent/golden/``:

- ``<scenario>.live.jsonl``: the live recording (every recorder event, as written),
- ``<scenario>.saved.jsonl``: ``save_recording`` of the finished run,
- ``<scenario>.events.jsonl``: every agent event (name, stage path, seq, payload) in order,
- ``<scenario>.narrative.txt``: the full narrative's text (every read and write),
- ``<scenario>.compact.txt``: the default narrative's text (one line per step).

Only timestamps (``started_at``, ``ended_at``, ``duration``) and run ids are normalized
(:func:`normalize`, on the raw bytes, so any other byte that changes fails the test). The
run must also be the same on every anyio backend (the agent tests run on asyncio and trio).

Regenerating is deliberate: ``TRACKWAY_REGEN_GOLDEN=1 .venv/bin/pytest
tests/agent/test_golden_recording.py -p no:cacheprovider`` rewrites the files; review the
diff (``git diff tests/agent/golden``) before committing it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from trackway.agent import Agent, receipts, replay, save_recording, served_at, sliding_window
from trackway.agent import mock as mock_provider
from trackway.recorders import jsonl, narrative
from trackway.tools import define_tool

GOLDEN = Path(__file__).parent / "golden"
REGEN = os.environ.get("TRACKWAY_REGEN_GOLDEN") == "1"

_TIMES = re.compile(rb'"(started_at|ended_at|duration)":(-?[0-9][0-9.eE+-]*)')
_RUN_ID = re.compile(rb"run-[0-9a-f]{16}-[0-9a-f]{6}")


def normalize(data: bytes) -> bytes:
    """``data`` with timestamps replaced by ``"<t>"`` and run ids by ``run-<n>`` (numbered
    in order of first appearance). Nothing else is touched."""
    data = _TIMES.sub(rb'"\1":"<t>"', data)
    seen: dict[bytes, bytes] = {}

    def number(match: re.Match[bytes]) -> bytes:
        return seen.setdefault(match.group(0), b"run-<%d>" % (len(seen) + 1))

    return _RUN_ID.sub(number, data)


def _tool(name: str, execute: Callable[[dict[str, Any], Any], Any]) -> Any:
    return define_tool(
        name=name,
        description=f"The {name} tool.",
        input_schema={
            "type": "object",
            "properties": {"key": {"type": "string"}},
            "required": ["key"],
        },
        execute=execute,
    )


def _broken(args: dict[str, Any], ctx: Any) -> str:
    raise RuntimeError(f"no value for {args['key']}")


TOOLS = [
    _tool("lookup", lambda args, ctx: f"value of {args['key']}"),
    _tool("fetch", lambda args, ctx: {"key": args["key"], "rows": [1, 2.5, None, "x"]}),
    _tool("broken", _broken),
]


def _call(i: int, name: str = "lookup", args: Any = None) -> dict[str, Any]:
    return {"id": f"call_{i}", "name": name, "args": {"key": f"k{i}"} if args is None else args}


def _script() -> list[Any]:
    """Tool turns of every shape the loop handles, then the final answer."""
    usage = {"input_tokens": 12, "output_tokens": 3}
    return [
        {"tool_calls": [_call(1)], "usage": usage},
        {"content": "Two at once.", "tool_calls": [_call(2), _call(3, "fetch")]},
        {"tool_calls": [_call(4, args={"key": 5})], "usage": usage},  # invalid arguments
        {"tool_calls": [_call(5, "broken")]},  # the tool raises
        {"tool_calls": [_call(6, "missing")]},  # not a registered tool
        *({"tool_calls": [_call(i)], "usage": usage} for i in range(7, 13)),
        {"content": "done after 12 turns", "usage": usage, "stop_reason": "stop"},
    ]


SCENARIOS: dict[str, Callable[[], Any]] = {
    "tools": lambda: Agent.create(
        provider=mock_provider(replies=_script()), model="scripted", max_iterations=20
    ),
    "windowed": lambda: Agent.create(
        provider=mock_provider(replies=_script()), model="scripted", max_iterations=20
    ).window(sliding_window(keep_recent_turns=3), keep_last_tool_results=2),
}


def _run(scenario: str, tmp: Path) -> dict[str, bytes]:
    builder = SCENARIOS[scenario]().system("Answer briefly.")
    for tool in TOOLS:
        builder = builder.tool(tool)
    told = narrative(detail="full")
    compact = narrative()
    live = tmp / "live.jsonl"
    agent = builder.recorder(jsonl(live)).recorder(told).recorder(compact).build()
    events: list[bytes] = []
    agent.on(
        "*",
        lambda e: events.append(
            orjson.dumps(
                {"name": e.name, "stage_path": e.stage_path, "seq": e.seq, "payload": e.payload},
                default=dict,
            )
        ),
    )
    assert agent.run_sync("go") == "done after 12 turns"
    agent.shutdown()
    snap = agent.snapshot()
    for k, receipt in enumerate(receipts(snap), start=1):  # the law, while we are here
        assert served_at(snap, k).hash == receipt["request_hash"]
    replay(snap)
    saved = save_recording(agent, tmp / "saved.jsonl")
    return {
        "live.jsonl": live.read_bytes(),
        "saved.jsonl": saved.read_bytes(),
        "events.jsonl": b"\n".join(events) + b"\n",
        "narrative.txt": told.text().encode() + b"\n",
        "compact.txt": compact.text().encode() + b"\n",
    }


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_a_scripted_run_leaves_the_golden_record(scenario: str, tmp_path: Path) -> None:
    produced = _run(scenario, tmp_path)
    for suffix, data in produced.items():
        path = GOLDEN / f"{scenario}.{suffix}"
        got = normalize(data)
        if REGEN:
            GOLDEN.mkdir(exist_ok=True)
            path.write_bytes(got)
            continue
        want = path.read_bytes()
        if got != want:  # the first differing line, not a wall of bytes
            pairs = zip(got.splitlines(), want.splitlines(), strict=False)
            line = next((i for i, (a, b) in enumerate(pairs, 1) if a != b), None)
            pytest.fail(f"{path.name} differs from the golden file (first at line {line})")


def test_normalize_touches_only_timestamps_and_run_ids() -> None:
    raw = (
        b'{"run_id":"run-18ed31377294d7db-b2d7ab","started_at":1796145940.6063223,'
        b'"duration":4.2e-05,"k":1.5,"x":"run-18ed31377294d7dc-000000"}'
    )
    assert normalize(raw) == (
        b'{"run_id":"run-<1>","started_at":"<t>","duration":"<t>","k":1.5,"x":"run-<2>"}'
    )
    assert normalize(raw.replace(b'"k":1.5', b'"k":1.50')) != normalize(raw)
