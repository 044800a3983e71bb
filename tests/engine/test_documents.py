"""Persisted documents: one loader, one family of errors that name the field and source."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from trackway import Executor, Snapshot, flow_chart, load_recording
from trackway.agent import Conversation, ConversationFormatError, InvalidRunInputError
from trackway.engine import DocumentError
from trackway.recorders import jsonl
from trackway.recorders import load_recording as load_jsonl


def _snapshot_doc() -> dict[str, Any]:
    chart = (
        flow_chart("A", lambda s: s.__setitem__("a", 1), id="a")
        .then("B", lambda s: s.append("log", "x"), id="b")
        .then("C", lambda s: s.__setitem__("c", 3), id="c")
        .build()
    )
    return orjson.loads(Executor(chart).run_sync({"n": 1}).snapshot.to_json())


def test_a_snapshot_round_trips_and_rebuilds_time_travel():
    doc = _snapshot_doc()
    snap = Snapshot.from_json(orjson.dumps(doc))
    assert snap.state_at(1) == {"n": 1, "a": 1} and snap.state["c"] == 3


@pytest.mark.parametrize(
    ("edit", "field", "fragment"),
    [
        (lambda d: d["commits"][1]["ops"][0].update(kind="zap"), "commits.1.ops.0.kind", "zap"),
        (lambda d: d["commits"].insert(1, dict(d["commits"][0])), "commits.1.seq", "is 1"),
        (lambda d: d["commits"].pop(1), "commits.1.seq", "is 3"),
        (lambda d: d["commits"][0].pop("stage_path"), "commits.0.stage_path", "is missing"),
        (lambda d: d["commits"][2].update(outcome="fine"), "commits.2.outcome", "fine"),
        (lambda d: d.update(format="trackway.snapshot/9"), "format", "this version reads"),
        (lambda d: d.update(status="sideways"), "status", "a run is one of"),
        (lambda d: d["commits"][0].update(stage_path="#/#:x"), "commits.0.stage_path", "#"),
        (lambda d: d["commits"][2].update(run_id="run-other"), "commits.2.run_id", "another"),
        (lambda d: d["commits"][1]["ops"][0].update(value="x"), "commits.1", "appends a str"),
        # a container the log keeps as JSON only is judged by its shape, never decoded twice
        (lambda d: d["commits"][1]["ops"][0].update(value={"x": 1}), "commits.1", "a dict"),
        (lambda d: d["commits"][1]["ops"][0].update(value=None), "commits.1", "appends a null"),
        (
            lambda d: d["commits"][1]["ops"][0].update(kind="merge", value=["x"]),
            "commits.1",
            "merges a list, not a dict",
        ),
        (lambda d: d["commits"][1]["ops"][0].update(key="a"), "commits.1", "holds a int"),
    ],
)
def test_a_damaged_snapshot_is_refused_naming_the_field(edit, field, fragment):
    doc = _snapshot_doc()
    edit(doc)
    with pytest.raises(DocumentError) as info:
        Snapshot.from_json(orjson.dumps(doc), source="runs/x.json")
    assert info.value.field == field and info.value.document == "snapshot"
    assert fragment in str(info.value) and str(info.value).startswith("runs/x.json: ")


def test_an_integer_beyond_64_bits_is_refused_not_read_as_a_float():
    data = orjson.dumps(_snapshot_doc()).replace(b'"n":1', b'"n":1180591620717411303424', 1)
    with pytest.raises(DocumentError, match="does not fit in 64 bits"):
        Snapshot.from_json(data)


def test_not_json_and_not_an_object_are_refused():
    with pytest.raises(DocumentError, match="invalid JSON"):
        Snapshot.from_json(b"{nope")
    with pytest.raises(DocumentError, match="expected a JSON object, got list"):
        Snapshot.from_json(b"[1]")


def test_conversations_load_through_the_same_loader():
    convo = Conversation(history=[{"role": "user", "content": "hi"}], agent="a")
    assert Conversation.from_json(convo.to_json()) == convo
    with pytest.raises(ConversationFormatError, match="history") as info:
        Conversation.from_json(b'{"format": "trackway.conversation/1", "agent": "a"}')
    assert isinstance(info.value, InvalidRunInputError) and isinstance(info.value, DocumentError)
    assert info.value.field == "history"


def test_recordings_name_the_file_and_what_is_wrong(tmp_path):
    missing = tmp_path / "none.json"
    with pytest.raises(DocumentError, match="none.json.*cannot read the recording"):
        load_recording(missing)
    junk = tmp_path / "junk.json"
    junk.write_bytes(b'{"format": "trackway.agent-recording/1", "snapshot": 3}')
    with pytest.raises(DocumentError, match="junk.json: corrupt recording") as info:
        load_recording(junk)
    assert info.value.source == str(junk) and info.value.field == "snapshot"


def test_a_jsonl_recording_with_a_damaged_commit_line_names_it(tmp_path):
    path = tmp_path / "run.jsonl"
    chart = flow_chart("A", lambda s: s.__setitem__("a", 1), id="a").build()
    Executor(chart, recorders=[jsonl(path)]).run_sync()
    lines = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    for line in lines:
        if line["type"] == "on_commit":
            line["ops"][0]["kind"] = "zap"
    path.write_bytes(b"\n".join(orjson.dumps(line) for line in lines))
    with pytest.raises(DocumentError, match=r"run.jsonl: the commit line of seq 1.*ops\.0\.kind"):
        load_jsonl(path)
    with pytest.raises(DocumentError, match="cannot read the recording"):
        load_jsonl(tmp_path / "absent.jsonl")
