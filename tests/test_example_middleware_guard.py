"""examples/middleware_guard.py runs offline: a refused message, links at every door, the
ledger, the narrative and a replay from the recording alone."""

from __future__ import annotations

from trackway.agent import load_recording, receipts, served_at

from .example_script import EXAMPLES, run_script

EXAMPLE = EXAMPLES / "middleware_guard.py"


def test_guards_every_door_and_replays_from_the_recording(tmp_path):
    proc = run_script(EXAMPLE, str(tmp_path))
    assert proc.stderr == ""
    out = proc.stdout
    assert "Refused by no_cards: card numbers are not taken in chat" in out
    assert "Model calls so far: 0" in out  # a refused message bills nothing
    assert "Answer: Order A7 shipped on Monday. — the support desk" in out
    assert "The model read: 'Where is order A7? I need it as soon as possible'" in out
    assert "contact [email]'" in out and "@example.com" not in out
    decisions = out.split("Decisions:\n", 1)[1].split("Narrative:", 1)[0].split()
    assert decisions[:3] == ["input", "no_cards", "rewrote"]
    assert decisions[5:8] == ["before_tool", "own_orders", "rewrote"]
    assert "Middleware signed rewrote the answer — signed" in out
    assert "without the agent: same record" in out
    recording = load_recording(tmp_path / "support.jsonl")
    rows = recording.state["middleware_decisions"]
    assert [r["door"] for r in rows] == ["input", "before_tool", "after_tool", "output"]
    assert "@" not in str(recording.state["history"])  # the model never read the address
    for k, receipt in enumerate(receipts(recording), start=1):
        assert served_at(recording, k).hash == receipt["request_hash"]
