"""A finance agent whose answers quote figures, checked by the evidence gate, offline.

Run it: ``python examples/finance_grounded.py [DIR]`` (without ``DIR``, a temporary
directory). The agent reads a company's quarter from a tool; a scripted stand-in for the
model (``mock``) answers the way an LLM might, quoting the tool's figures and inventing one
(a year-on-year growth it never looked up). The same turn runs under each posture of
``.names_and_numbers_from_evidence``:

- ``assist`` ships the answer and records the invented figure;
- ``guard`` asks the model once to revise; here the revised answer drops the figure, so it
  ships grounded and nothing is recorded against it;
- ``rails`` asks once too; here the model repeats the figure, so the answer is withheld and
  ``run`` raises ``UnsupportedValuesError``.

Each run is saved as a recording and replayed without the agent, its model or its tool.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from trackway.agent import (
    Agent,
    UnsupportedValuesError,
    load_recording,
    mock,
    replay,
    save_recording,
)
from trackway.tools import tool


@tool
def quarter_figures(company: str, quarter: str) -> dict[str, Any]:
    """Revenue, operating margin and cash of one company's quarter, in USD."""
    return {
        "company": "Northwind Traders",
        "ticker": "NWT",
        "quarter": quarter,
        "revenue_usd": 18_450_000,
        "operating_margin_pct": 14.2,
        "cash_usd": 3_120_000,
    }


ASK = {"tool_calls": [{"id": "q1", "name": "quarter_figures",
                       "args": {"company": "NWT", "quarter": "Q2 2025"}}]}  # fmt: skip
INVENTED = (
    "Northwind Traders (NWT) booked $18,450,000 of revenue in Q2 2025 at a 14.2% operating "
    "margin, 23% above last year, with $3,120,000 in cash."
)
REVISED = (
    "Northwind Traders (NWT) booked $18,450,000 of revenue in Q2 2025 at a 14.2% operating "
    "margin, with $3,120,000 in cash. I have no figure for last year, so no growth rate."
)
REPEATED = (
    "Northwind Traders (NWT) booked $18,450,000 in Q2 2025, up 23% on last year, at a 14.2% margin."
)
SCRIPTS = {
    "assist": [ASK, INVENTED],
    "guard": [ASK, INVENTED, REVISED],
    "rails": [ASK, INVENTED, REPEATED],
}


def build(posture: str) -> Agent:
    """The finance agent, its model scripted for ``posture``'s turn."""
    return (
        Agent.create(provider=mock(replies=SCRIPTS[posture]), model="finance-desk")
        .system("You answer questions about a company's quarter from the figures tool.")
        .tool(quarter_figures)
        .names_and_numbers_from_evidence(posture=posture)
        .build()
    )


def main(folder: Path) -> None:
    for posture in ("assist", "guard", "rails"):
        agent = build(posture)
        print(f"== posture {posture!r}")
        try:
            answer = agent.run_sync("How did Northwind do in Q2 2025?")
            print(f"Answer: {answer}")
        except UnsupportedValuesError as error:
            print(f"Withheld: {len(error.verdict['values'])} value(s) in no tool result")
        asked = [c for c in agent.snapshot().history() if c.stage_id == "evidence-recheck"]
        if asked:
            ask = agent.snapshot().state["history"][-1]["content"]
            print(f"Revision asked: {ask.split(':', 1)[1].split('.', 1)[0].strip()}")
        verdict = agent.unsupported_values()
        if verdict is None:
            print("Verdict: every name and number grounded")
        else:
            flagged = ", ".join(v["value"] for v in verdict["values"])
            print(
                f"Verdict: {flagged} (of {verdict['candidates']} values); "
                f"revised={verdict['revised']} refused={verdict['refused']}"
            )
        path = save_recording(agent, folder / f"finance-{posture}.jsonl")
        loaded = load_recording(path)
        replayed = replay(loaded)  # no agent, no model, no tool
        same = [c.stage_path for c in replayed.history()] == [
            c.stage_path for c in loaded.history()
        ]
        print(f"Replayed from {path.name} alone: {same}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp))
