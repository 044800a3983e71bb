"""A planted secret must not appear in any retained surface, while the live run uses it."""

from __future__ import annotations

import pytest

from trackway import Executor, Rule, Snapshot, SqliteStore, decide, flow_chart
from trackway.engine import CheckpointError, ConfigurationError, RedactionPolicy

SECRET = "sk-live-0123456789"
CARD = "4111111111111111"
POLICY = RedactionPolicy(
    keys=["api_key", "input_key"],
    patterns=[r"password"],
    fields={"card": ["number"], "cards": ["number"]},
    emits=[r"^auth\."],
)


class Everything:
    """A recorder that keeps a printable copy of every event it hears."""

    name = "everything"

    def __init__(self):
        self.lines: list[str] = []

    def __getattr__(self, hook):
        if not hook.startswith("on_"):
            raise AttributeError(hook)
        return lambda event: self.lines.append(f"{hook} {event!r}")


def chart():
    def receive(s):
        s["api_key"] = s["input_key"]
        s["db_password"] = SECRET + "-pw"
        s["card"] = {"number": CARD, "holder": "Ada"}
        s.append("cards", {"number": CARD, "last4": CARD[-4:]})
        s.emit("auth.token", {"token": SECRET})
        s.emit("progress", {"pct": 50})

    def use(s):
        # the live run sees real values
        s["key_length"] = len(s["api_key"])
        s["prefix"] = s["api_key"][:3]

    def route(s):
        return decide(s, [Rule({"api_key": SECRET}, "ok", label="key matches")], "bad")

    return (
        flow_chart("Receive", receive)
        .then("Use", use)
        .decider("Route", route)
        .branch("ok", "OK", lambda s: s.__setitem__("verdict", "ok"))
        .branch("bad", "Bad", lambda s: s.__setitem__("verdict", "bad"))
        .end()
        .then("Ask", lambda s: s.pause({"q": "go?"}), on_resume=lambda s, v: None)
        .build()
    )


def test_no_retained_surface_holds_the_secret_and_the_live_run_used_it(tmp_path):
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from trackway.recorders import jsonl, metrics, narrative, otel

    store = SqliteStore(tmp_path / "runs.db")
    recorder = Everything()
    story = narrative()
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    recording = tmp_path / "run.jsonl"
    ex = Executor(
        chart(),
        store=store,
        recorders=[recorder, story, jsonl(recording), metrics(), otel(tracer_provider=provider)],
        redact=POLICY,
    )
    first = ex.run_sync(
        {"input_key": "placeholder", "api_key_hint": "none"} | {"input_key": SECRET}
    )
    assert first.state["key_length"] == len(SECRET) and first.state["verdict"] == "ok"
    result = ex.resume_sync(first.checkpoint, "yes")  # real values came back with the checkpoint
    assert result.status == "done"

    snap = result.snapshot
    assert snap.state["api_key"] == "[REDACTED]" and snap.state["db_password"] == "[REDACTED]"
    assert snap.state["card"] == {"number": "[REDACTED]", "holder": "Ada"}
    assert snap.state["cards"][0] == {"number": "[REDACTED]", "last4": "1111"}
    route = next(c for c in snap.history() if c.stage_id == "route")
    cond = route.detail["decision"]["rules"][0]["conditions"][0]
    assert cond["actual"] == "[REDACTED]" and cond["redacted"] is True
    auth = next(e for c in snap.history() for e in c.events if e.name == "auth.token")
    assert auth.payload == "[REDACTED]"

    surfaces = {
        "snapshot json": snap.to_json(),
        "snapshot reloaded": Snapshot.from_json(snap.to_json()).to_json(),
        "recorder events": "\n".join(recorder.lines).encode(),
        "store load": store.load(result.run_id).to_json(),
        "narrative": story.text().encode(),
        "spans": "\n".join(s.to_json() for s in spans.get_finished_spans()).encode(),
    }
    store.close()
    for path in tmp_path.iterdir():
        surfaces[f"store file {path.name}"] = path.read_bytes()
    for name, blob in surfaces.items():
        assert SECRET.encode() not in blob, f"the secret leaked into {name}"
        assert CARD.encode() not in blob, f"the card number leaked into {name}"
    assert b"[REDACTED]" in surfaces["snapshot json"]
    assert first.run_id.encode() in surfaces["recorder events"]  # the recorder did hear it all


def test_checkpoints_carry_real_values_unless_redacted_at_rest():
    raw = Executor(chart(), redact=POLICY).run_sync({"input_key": SECRET}).checkpoint
    assert SECRET.encode() in raw.to_json()  # needed to resume; the docs say so
    masked_policy = RedactionPolicy(
        keys=["api_key", "input_key"],
        patterns=[r"password"],
        fields={"card": ["number"]},
        emits=[r"^auth\."],
        redact_checkpoints=True,
    )
    ex = Executor(chart(), redact=masked_policy)
    masked = ex.run_sync({"input_key": SECRET}).checkpoint
    assert masked.redacted and SECRET.encode() not in masked.to_json()
    with pytest.raises(CheckpointError, match="masked copy"):
        ex.resume_sync(masked, "yes")


def test_policy_misuse_is_refused():
    with pytest.raises(ConfigurationError, match="takes a list"):
        RedactionPolicy(keys="api_key")  # type: ignore[arg-type]


def test_deleting_a_hidden_key_deletes_it_in_the_retained_snapshot_too():
    chart = (
        flow_chart("Set", lambda s: s.__setitem__("t", "x"))
        .then("Drop", lambda s: s.__delitem__("t"))
        .build()
    )
    result = Executor(chart, redact=RedactionPolicy(keys=["t"])).run_sync()
    assert dict(result.snapshot.state) == {} and result.snapshot.state_at(1) == {"t": "[REDACTED]"}


def test_a_store_that_first_sees_a_run_at_its_resume_gets_it_redacted(tmp_path):
    # the input and the log so far reach the store through the same funnel as live commits
    chart = flow_chart("Ask", lambda s: s.pause("?"), on_resume=lambda s, v: None).build()
    policy = RedactionPolicy(keys=["api_key"])
    checkpoint = Executor(chart, redact=policy).run_sync({"api_key": SECRET}).checkpoint
    store = SqliteStore(tmp_path / "runs.db")
    Executor(chart, store=store, redact=policy).resume_sync(checkpoint, "yes")
    assert store.load(checkpoint.run_id).state["api_key"] == "[REDACTED]"
    store.close()
    for path in tmp_path.iterdir():
        assert SECRET.encode() not in path.read_bytes(), path.name


def test_pauses_hides_pause_payloads_and_resume_values_from_every_surface(tmp_path):
    from trackway import Executor, SqliteStore, flow_chart
    from trackway.engine import RedactionPolicy

    secret_q, secret_a = "sk-live-Q-91ab77", "sk-live-A-02cd55"
    heard = []

    class Ears:
        def on_pause(self, event):
            heard.append(event.payload)

        def on_resume(self, event):
            heard.append(event.value)

    def ask(scope):
        scope.pause({"question": f"is {secret_q} right?"})

    def take(scope, value):
        scope["answered"] = True

    chart = flow_chart("Ask", ask, id="ask", on_resume=take).build()
    db = tmp_path / "runs.db"
    executor = Executor(
        chart, store=SqliteStore(db), redact=RedactionPolicy(pauses=True), recorders=[Ears()]
    )
    first = executor.run_sync()
    assert first.checkpoint.payload == {"question": f"is {secret_q} right?"}  # the caller's copy
    done = executor.resume_sync(first.checkpoint, {"answer": secret_a})
    assert done.status == "done" and done.state["answered"] is True
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("runs.db*"))
    for secret in (secret_q, secret_a):
        assert secret.encode() not in stored
        assert secret.encode() not in done.snapshot.to_json()
    assert heard == ["[REDACTED]", "[REDACTED]"]
    details = [c.detail for c in done.snapshot.history()]
    assert details[0]["pause"] == "[REDACTED]" and details[1]["resume"] == {"value": "[REDACTED]"}


def test_redacted_checkpoints_hide_the_pause_payload_under_pauses():
    from trackway import Executor, flow_chart
    from trackway.engine import RedactionPolicy

    chart = flow_chart("Ask", lambda scope: scope.pause({"q": "sk-live-Z-88"})).build()
    policy = RedactionPolicy(pauses=True, redact_checkpoints=True)
    result = Executor(chart, redact=policy).run_sync()
    assert result.checkpoint.payload == "[REDACTED]"
    assert b"sk-live-Z-88" not in result.checkpoint.to_json()
