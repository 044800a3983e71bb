"""The installed ``trackway`` command on damaged input: a recording holding values nested
deeper than trackway writes. Each is run as a real
process: it names the file and what is wrong on stderr, prints no traceback and exits 1."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from trackway import Agent, mock
from trackway.agent import save_recording

TRACKWAY = Path(sys.executable).with_name("trackway")


def trackway(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TRACKWAY), *args], capture_output=True, text=True, timeout=120, check=False
    )


def assert_named_failure(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, proc.stderr
    for word in words:
        assert word in proc.stderr, proc.stderr


# -- recordings nested deeper than trackway writes ----------------------------------------------


def deep_recording(tmp_path: Path, levels: int) -> tuple[Path, int]:
    """A real agent's recording whose first written value is replaced by one ``levels``
    deep (written by hand: orjson refuses to write it); the line it is on."""
    agent = Agent.create(provider=mock(replies=["hi"]), model="m").build()
    agent.run_sync("hello")
    path = save_recording(agent, tmp_path / "rec.jsonl")
    lines = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    number = next(
        n for n, line in enumerate(lines, 1) if line["type"] == "on_commit" and line["ops"]
    )
    lines[number - 1]["ops"][0]["value"] = "@@deep@@"
    raw = b"\n".join(orjson.dumps(line) for line in lines) + b"\n"
    path.write_bytes(raw.replace(b'"@@deep@@"', b"[" * levels + b"1" + b"]" * levels))
    return path, number


@pytest.mark.parametrize("levels", [255, 300, 1021, 1024])
def test_replay_and_view_name_a_recording_nested_too_deep(tmp_path: Path, levels: int) -> None:
    path, number = deep_recording(tmp_path, levels)
    assert_named_failure(trackway("replay", str(path)), str(path), f"line {number}", "deeper")
    html = tmp_path / "view.html"
    viewed = trackway("view", str(path), "-o", str(html))
    assert_named_failure(viewed, str(path), f"line {number}", "deeper")
    assert not html.exists()
