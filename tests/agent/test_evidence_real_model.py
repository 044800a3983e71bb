"""The evidence gate over a real model's answer: llama.cpp serving SmolLM2-135M-Instruct
(``.ci/llama.sh`` starts it; ``TRACKWAY_TEST_LLAMA_URL`` names it). The tool returns figures;
what the model makes of them is its own business. The test records whether the answer was
grounded and checks that the gate's verdict on its numbers equals a check made here,
independently (a regular expression over the answer against the tool's figures), never the
model's quality. The run then obeys the law and replays with the network closed."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from tests.law import assert_law
from trackway.agent import Agent, load_recording, openai, replay, save_recording
from trackway.testing import block_network
from trackway.tools import define_tool

pytestmark = pytest.mark.real_llm

LLAMA = os.environ.get("TRACKWAY_TEST_LLAMA_URL")
FIGURES = {"company": "Acme", "revenue": 4200000, "margin": 12.5, "employees": 310}
QUARTER = define_tool(
    name="quarter",
    description="Acme's latest quarter: revenue in USD, margin in percent, employees.",
    input_schema={"type": "object", "properties": {"company": {"type": "string"}}},
    execute=lambda args, ctx: FIGURES,
)
# a bare number: not glued to a letter or to a joiner of the value rule (- _ . / @ : ')
NUMBER = re.compile(
    r"(?<![\w.\-/@:'])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?![\w\-/@:']|[.,]\d)"
)


def bare(number: str) -> str:
    """A number as a value: no group commas, no trailing fractional zeros, no leading zeros."""
    whole, _, fraction = number.replace(",", "").partition(".")
    fraction = fraction.rstrip("0")
    whole = whole.lstrip("0") or "0"
    return f"{whole}.{fraction}" if fraction else whole


def invented_numbers(answer: str) -> set[str]:
    """The bare numbers of ``answer`` that are not the tool's figures."""
    given = {bare(str(v)) for v in FIGURES.values() if not isinstance(v, str)}
    return {bare(m) for m in NUMBER.findall(answer)} - given


@pytest.mark.skipif(not LLAMA, reason="set TRACKWAY_TEST_LLAMA_URL (start it with .ci/llama.sh)")
def test_the_gate_judges_a_real_answer_as_an_independent_check_does(
    tmp_path: Path, record_property: Any
) -> None:
    assert LLAMA
    agent = (
        Agent.create(
            provider=openai("smollm2", base_url=LLAMA, timeout=60.0, backoff=0.05),
            max_iterations=2,  # the forced call runs, the next is wrapped up into an answer
            max_tokens=60,
            temperature=0.0,
            tool_choice="quarter",
            stream=False,
        )
        .system("Answer with the figures the quarter tool returns.")
        .tool(QUARTER)
        .names_and_numbers_from_evidence(posture="guard")
        .build()
    )
    answer = agent.run_sync("What were Acme's revenue and margin last quarter?")
    assert isinstance(answer, str)
    rows = agent.snapshot().state["tool_results"]
    assert [r["status"] for r in rows] == ["success"] * len(rows) and rows
    verdict = agent.unsupported_values()
    flagged = {
        v["value"]
        for v in (verdict or {}).get("values", ())
        if v["kind"] == "number" and re.fullmatch(r"\d+(?:\.\d+)?", v["value"])
    }
    expected = invented_numbers(answer)
    record_property("answer", answer)
    record_property("grounded", verdict is None)
    record_property("invented_numbers", sorted(expected))
    assert flagged == expected, (answer, verdict)
    if verdict is not None:  # it survived the one revision ask guard makes
        assert verdict["revised"] is True and verdict["refused"] is False
    assert assert_law(agent) == len(agent.snapshot().state["receipts"])
    path = save_recording(agent, tmp_path / "run.jsonl")
    with block_network(allow_loopback=False):
        replayed = replay(load_recording(path))
    assert replayed.state.get("unsupported_values") == agent.snapshot().state.get(
        "unsupported_values"
    )
