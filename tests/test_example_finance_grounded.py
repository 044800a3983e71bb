"""examples/finance_grounded.py runs offline: one turn with an invented figure under each
posture of the evidence gate, each saved and replayed from its recording alone."""

from __future__ import annotations

from tests.law import assert_law
from trackway.agent import load_recording

from .example_script import EXAMPLES, run_script

EXAMPLE = EXAMPLES / "finance_grounded.py"


def test_each_posture_does_what_it_says_and_replays(tmp_path):
    proc = run_script(EXAMPLE, str(tmp_path))
    assert proc.stderr == ""
    assist, guard, rails = proc.stdout.split("== posture ")[1:]
    assert "23% above last year" in assist and "Verdict: 23 (of 8 values)" in assist
    assert "Revision asked" not in assist and "revised=False refused=False" in assist
    assert 'Revision asked: "23%"' in guard and "no growth rate" in guard
    assert "Verdict: every name and number grounded" in guard
    assert "Answer:" not in rails and "Withheld: 1 value(s) in no tool result" in rails
    assert "revised=True refused=True" in rails
    assert proc.stdout.count("alone: True") == 3
    for posture, calls in (("assist", 2), ("guard", 3), ("rails", 3)):
        loaded = load_recording(tmp_path / f"finance-{posture}.jsonl")
        assert assert_law(loaded) == calls
