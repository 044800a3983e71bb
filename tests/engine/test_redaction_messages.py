"""Under a redaction policy, messages the engine writes never quote a hidden value."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pydantic
import pytest

from trackway import Executor, SqliteStore, StageError, TrackwayError, flow_chart
from trackway.engine import ConfigurationError, RedactionPolicy
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


# -- errors=True: what an error says is hidden too -------------------------------------------

ERRORS = RedactionPolicy(errors=True)


class Heard:
    """A recorder that keeps every event it hears, as text."""

    def __init__(self) -> None:
        self.heard: list[str] = []

    def __getattr__(self, hook: str) -> Any:
        if not hook.startswith("on_"):
            raise AttributeError(hook)
        return lambda event: self.heard.append(repr(event))


def _kept(tmp_path: Path, chart: Any, policy: RedactionPolicy) -> tuple[Any, bytes]:
    """Run under ``policy`` with a store file, a JSONL recording, a narrative and a recorder
    hearing every event; the raw bytes of everything retained."""
    store = SqliteStore(tmp_path / "runs.db")
    story, heard = narrative(), Heard()
    recorders = [story, jsonl(tmp_path / "run.jsonl"), heard]
    result = Executor(chart, store=store, redact=policy, recorders=recorders).run_sync(
        raise_on_error=False
    )
    stored = store.load(result.run_id).to_json()
    store.close()
    files = b"".join(p.read_bytes() for p in sorted(tmp_path.iterdir()) if p.is_file())
    kept = b"\n".join(
        [
            files,
            stored,
            result.snapshot.to_json(),
            story.text().encode(),
            "\n".join(heard.heard).encode(),
        ]
    )
    return result, kept


def _raise(error: Exception) -> Any:
    def stage(scope: Any) -> None:
        scope["seen"] = 1
        raise error

    return stage


def test_errors_hides_what_a_raised_error_says_and_keeps_its_type(tmp_path):
    chart = flow_chart("Charge", _raise(ValueError(f"card {SECRET} declined")), id="c").build()
    result, kept = _kept(tmp_path, chart, ERRORS)
    assert SECRET.encode() not in kept
    failed = result.snapshot.commits[-1]
    assert failed.error == ("ValueError", "[REDACTED]")
    assert result.snapshot.error == (
        "StageError",
        "stage 'Charge' (c#0) raised ValueError: [REDACTED]",
    )
    # the StageError is told from what the commit keeps; its cause is the real error
    assert str(result.error) == "stage 'Charge' (c#0) raised ValueError: [REDACTED]"
    assert SECRET in str(result.error.__cause__)  # the caller's cause keeps the real text


def test_errors_keeps_an_errors_own_words_and_masks_what_it_quotes(tmp_path):
    said = f"the server said {SECRET!r}"
    error = TrackwayError(f"the call failed ({said}); retry later")
    error.quoted = (said,)
    chart = flow_chart("Call", _raise(error), id="c").build()
    result, kept = _kept(tmp_path, chart, ERRORS)
    assert SECRET.encode() not in kept
    assert result.snapshot.commits[-1].error.message == "the call failed ([REDACTED]); retry later"


def test_errors_hides_the_whole_message_when_a_quote_is_not_found_in_it(tmp_path):
    error = TrackwayError(f"the call failed: {SECRET}")
    error.quoted = ("not in the message",)
    chart = flow_chart("Call", _raise(error), id="c").build()
    result, kept = _kept(tmp_path, chart, ERRORS)
    assert SECRET.encode() not in kept
    assert result.snapshot.commits[-1].error.message == "[REDACTED]"


def test_errors_hides_the_message_of_a_decider_that_chose_no_branch(tmp_path):
    chart = (
        flow_chart("Start", lambda s: None, id="s")
        .decider("Route", lambda s: SECRET, id="r")
        .branch("a", "A", lambda s: None)
        .default("a")
        .end()
        .build()
    )
    result, _ = _kept(tmp_path, chart, ERRORS)
    assert result.status == "failed" and type(result.error).__name__ == "UnknownBranchError"
    # the decision records the key it chose; the error's message is hidden like any other
    assert result.snapshot.commits[-1].error == ("UnknownBranchError", "[REDACTED]")
    assert result.snapshot.error == ("UnknownBranchError", "[REDACTED]")
    stored = SqliteStore(tmp_path / "runs.db").load(result.run_id)
    assert stored.error == ("UnknownBranchError", "[REDACTED]")
    assert SECRET in str(result.error)  # the caller's own exception: the live run


def test_without_errors_an_errors_text_is_kept(tmp_path):
    chart = flow_chart("Charge", _raise(ValueError(f"card {SECRET} declined")), id="c").build()
    result, kept = _kept(tmp_path, chart, RedactionPolicy(keys=["other"]))
    assert result.snapshot.commits[-1].error == ("ValueError", f"card {SECRET} declined")
    assert SECRET.encode() in kept


def test_emit_fields_hide_paths_inside_an_events_payload(tmp_path):
    def stage(scope: Any) -> None:
        scope.emit("app.failed", {"id": "x1", "why": {"text": SECRET, "code": 7}})
        scope.emit("app.other", {"why": {"text": "plain"}})

    policy = RedactionPolicy(emit_fields={r"^app\.failed$": ["why.text"]})
    chart = flow_chart("Emit", stage, id="e").build()
    result, kept = _kept(tmp_path, chart, policy)
    assert SECRET.encode() not in kept
    events = {e.name: e.payload for e in result.snapshot.commits[-1].events}
    assert events["app.failed"] == {"id": "x1", "why": {"text": "[REDACTED]", "code": 7}}
    assert events["app.other"] == {"why": {"text": "plain"}}
    with pytest.raises(ConfigurationError, match="takes a list of paths"):
        RedactionPolicy(emit_fields={"x": "why.text"})  # type: ignore[dict-item]
