"""Under a redaction policy, messages the engine writes never quote a hidden value."""

from __future__ import annotations

from pathlib import Path

import pydantic
import pytest

from trackway import (
    Executor,
    RedactionPolicy,
    SqliteStore,
    StageError,
    flow_chart,
)
from trackway.recorders import jsonl, narrative

SECRET = "sk-live-9876543210"
POLICY = RedactionPolicy(keys=["api_key", "tokens"])


def _surfaces(tmp_path: Path, chart, input=None) -> tuple[object, str]:
    """Run under the policy with a store, a JSONL recording and a narrative; everything
    retained, as text."""
    store = SqliteStore(tmp_path / "runs.db")
    story = narrative()
    recording = tmp_path / "run.jsonl"
    result = Executor(chart, store=store, redact=POLICY, recorders=[story, jsonl(recording)])
    result = result.run_sync(input, raise_on_error=False)
    stored = store.load(result.run_id).to_json()
    store.close()
    files = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    text = "\n".join(
        [
            story.text(),
            result.snapshot.to_json().decode(),
            stored.decode(),
            files.decode(errors="replace"),
            str(result.snapshot.error),
        ]
    )
    return result, text


class Model(pydantic.BaseModel):
    api_key: int = 0
    other: str = ""


def test_a_refused_write_to_a_hidden_key_is_recorded_without_its_value(tmp_path):
    chart = flow_chart("Write", lambda s: s.__setitem__("api_key", SECRET), state=Model).build()
    result, text = _surfaces(tmp_path, chart)
    assert result.status == "failed"
    assert SECRET not in text
    assert "the write of 'api_key' was refused (StateValidationError)" in text
    assert type(result.error.__cause__).__name__ == "StateValidationError"


def test_a_refused_value_of_a_hidden_key_is_not_quoted(tmp_path):
    big = 2**70
    chart = flow_chart("Write", lambda s: s.__setitem__("api_key", big)).build()
    result, text = _surfaces(tmp_path, chart)
    assert isinstance(result.error, StageError)
    assert str(big) not in text


def test_output_schema_failures_on_hidden_keys_name_the_rule_not_the_value(tmp_path):
    schema = {"type": "object", "properties": {"api_key": {"type": "integer"}}}
    chart = flow_chart("Write", lambda s: s.__setitem__("api_key", SECRET)).build(
        output_schema=schema
    )
    result, text = _surfaces(tmp_path, chart)
    assert result.status == "failed" and SECRET not in text
    assert "api_key: fails the schema's 'type' rule" in str(result.snapshot.error)


def test_a_for_each_over_a_hidden_key_hides_its_items(tmp_path):
    def body(scope):
        token = scope["item"]
        scope["result"] = len(token)

    chart = (
        flow_chart("Start", lambda s: s.__setitem__("tokens", [SECRET, SECRET + "2"]), id="s")
        .parallel_for_each("Each", items="tokens", branch=body, into="lengths", max_branches=4)
        .build()
    )
    result, text = _surfaces(tmp_path, chart)
    assert result.status == "done" and list(result.state["lengths"]) == [18, 19]
    assert SECRET not in text


@pytest.mark.parametrize("policy", [None])
def test_without_a_policy_messages_still_say_what_was_wrong(policy, tmp_path):
    chart = flow_chart("Write", lambda s: s.__setitem__("api_key", "x"), state=Model).build()
    result = Executor(chart, redact=policy).run_sync(raise_on_error=False)
    assert "'api_key' = \"x\"" in str(result.error)
