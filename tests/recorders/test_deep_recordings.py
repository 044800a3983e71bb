"""A recording holding a value nested deeper than trackway writes (orjson reads 1024 levels
and writes 254) is refused with a DocumentError naming the file, the line and the depth,
never a bare TypeError from re-encoding it. A write no run makes is named by its line too."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from trackway import Executor, Snapshot, flow_chart
from trackway.agent import load_recording as load_any_recording
from trackway.engine import DocumentError
from trackway.engine.core._values import MAX_DEPTH
from trackway.recorders import jsonl, load_recording

# The value depths: the first orjson cannot write, one in the middle, the deepest a recording
# line can hold (the line adds three levels around an op's value) and one past that.
DEPTHS = [MAX_DEPTH + 1, 300, 1021, 1024]
_MARK = b'"@@deep@@"'


def deep(levels: int) -> bytes:
    """A JSON value ``levels`` lists deep, written by hand (orjson refuses to write it)."""
    return b"[" * levels + b"1" + b"]" * levels


def recorded(tmp_path: Path) -> tuple[Path, list[dict[str, object]]]:
    def start(scope):  # type: ignore[no-untyped-def]
        scope["plain"] = "a value"
        scope.emit("noted", {"what": "a payload"})

    chart = flow_chart("Start", start, id="start").then("End", lambda s: None, id="end").build()
    path = tmp_path / "run.jsonl"
    Executor(chart, recorders=[jsonl(path)]).run_sync({"given": "an input"})
    return path, [orjson.loads(line) for line in path.read_bytes().splitlines()]


def write_with(path: Path, lines: list[dict[str, object]], levels: int) -> None:
    """Write ``lines`` back, the marked value replaced by one ``levels`` deep."""
    raw = b"\n".join(orjson.dumps(line) for line in lines) + b"\n"
    assert raw.count(_MARK) == 1
    path.write_bytes(raw.replace(_MARK, deep(levels)))


def line_of(lines: list[dict[str, object]], kind: str) -> int:
    return next(n for n, line in enumerate(lines, 1) if line["type"] == kind)


def commit_line(lines: list[dict[str, object]]) -> tuple[int, dict[str, object]]:
    return next(
        (n, line) for n, line in enumerate(lines, 1) if line["type"] == "on_commit" and line["ops"]
    )


@pytest.mark.parametrize("levels", DEPTHS)
def test_a_deep_value_in_a_commit_names_the_file_and_the_line(tmp_path: Path, levels: int) -> None:
    path, lines = recorded(tmp_path)
    number, line = commit_line(lines)
    line["ops"][0]["value"] = "@@deep@@"  # type: ignore[index]
    write_with(path, lines, levels)
    for load in (load_recording, load_any_recording):
        with pytest.raises(DocumentError) as info:
            load(path)
        message = str(info.value)
        assert str(path) in message and f"line {number}" in message, message
        # past 1021 the line itself is deeper than orjson reads (1024), so it is not parsed
        said = "than trackway writes" if levels > 1021 else f"than {MAX_DEPTH} levels"
        assert f"nested deeper {said}" in message, message
        assert info.value.source == str(path) and info.value.field == f"line {number}"
        assert not isinstance(info.value.__cause__, TypeError)


def test_a_deep_event_payload_names_the_line(tmp_path: Path) -> None:
    path, lines = recorded(tmp_path)
    number, line = commit_line(lines)
    line["events"][0]["payload"] = "@@deep@@"  # type: ignore[index]
    write_with(path, lines, 300)
    with pytest.raises(DocumentError, match=rf"line {number}: .*payload of the event 'noted'"):
        load_recording(path)


def test_a_deep_run_input_names_the_line_of_the_run_start(tmp_path: Path) -> None:
    path, lines = recorded(tmp_path)
    start = line_of(lines, "on_run_start")
    lines[start - 1]["input"]["given"] = "@@deep@@"  # type: ignore[index]
    write_with(path, lines, 300)
    with pytest.raises(DocumentError) as info:
        load_recording(path)
    message = str(info.value)
    assert f"line {start}" in message and "'given'" in message
    assert f"nested deeper than {MAX_DEPTH} levels" in message


def test_a_deep_value_in_a_snapshot_document_names_the_commit(tmp_path: Path) -> None:
    chart = flow_chart("Start", lambda s: s.__setitem__("plain", "@@deep@@")).build()
    doc = Executor(chart).run_sync().snapshot.to_json()
    path = tmp_path / "snapshot.json"
    path.write_bytes(doc.replace(_MARK, deep(300)))
    with pytest.raises(DocumentError) as info:
        load_any_recording(path)
    message = str(info.value)
    assert str(path) in message and "commit 1" in message and "'plain'" in message
    assert f"nested deeper than {MAX_DEPTH} levels" in message
    with pytest.raises(DocumentError, match=f"nested deeper than {MAX_DEPTH} levels"):
        Snapshot.from_json(path.read_bytes())


def test_the_deepest_value_trackway_writes_still_loads(tmp_path: Path) -> None:
    path, lines = recorded(tmp_path)
    _, line = commit_line(lines)
    line["ops"][0]["value"] = "@@deep@@"  # type: ignore[index]
    write_with(path, lines, MAX_DEPTH)
    assert load_recording(path).state["plain"] is not None


def test_a_write_no_run_makes_names_the_file_and_its_line(tmp_path: Path) -> None:
    # Checked while the snapshot is rebuilt, after every line was read: still named by line.
    path, lines = recorded(tmp_path)
    number, line = commit_line(lines)
    line["ops"][0]["kind"] = "append"  # appends a str: no run writes that
    path.write_bytes(b"\n".join(orjson.dumps(one) for one in lines) + b"\n")
    with pytest.raises(DocumentError) as info:
        load_recording(path)
    assert str(info.value).startswith(f"{path}: line {number}: corrupt log: commit 1")
    assert info.value.source == str(path) and info.value.field == f"line {number}"
