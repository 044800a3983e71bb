"""A data agent: a 5 MB CSV result is stored as an artifact and summarised by the code runner.

Run it: ``python examples/data_agent.py``. Offline: a scripted stand-in for the model (the
``mock`` provider) reads what it is served, as a model would:

1. the model asks ``export_sales`` for a year of sales. The tool returns a ~5 MB CSV
   (``result_kind="dataset/csv"``); the agent puts it in the artifact table of the run's
   SQLite store (``.artifacts(store, max_inline_chars=2000)``) and the model reads a short
   ``art_…`` ticket line instead of 5 MB;
2. the model reads the ticket off that line and calls ``run_code`` with it as ``dataset``
   (``wants={"dataset": "dataset/csv"}``). The agent redeems the ticket under the run's
   tenant, principal and conversation; the code runner stages the bytes as a file listed in
   ``TRACKWAY_STAGED_INPUTS``, and the model's Python (a real subprocess with time, memory
   and output limits) sums it per region;
3. the model answers from what the code printed.

The script then shows what the record holds: the ticket on the first tool result, the
redemption on the second, the request the model was served at each call rebuilt from the
record (``served_at``), and a recording saved with the artifacts embedded and replayed with
no store, no subprocess and no model.
"""

from __future__ import annotations

import argparse
import re
import tempfile
from pathlib import Path

from trackway import LLMRequest, SqliteStore, mock, receipts, replay, served_at
from trackway.agent import Agent, load_recording, recorded_artifacts, save_recording
from trackway.tools import code_runner_tool, local_code_runner, tool

REGIONS = ("north", "south", "east", "west")
ROWS = 180_000  # ~5.1 MB of CSV
ANA = {"tenant": "acme", "principal": "ana", "conversation_id": "sales-review"}

SUMMARY_CODE = """\
import csv, json, os
path = json.loads(os.environ["TRACKWAY_STAGED_INPUTS"])["dataset"]
totals, rows = {}, 0
with open(path, newline="") as f:
    for row in csv.DictReader(f):
        rows += 1
        totals[row["region"]] = totals.get(row["region"], 0) + int(row["amount"])
print(f"rows={rows} bytes={os.path.getsize(path)}")
for region, total in sorted(totals.items(), key=lambda kv: -kv[1]):
    print(f"{region}={total}")
"""


def sales_csv(year: int) -> str:
    """A deterministic year of sales: one line per order (the same bytes every run)."""
    lines = ["order_id,day,region,amount"]
    for i in range(ROWS):
        day = f"{year}-{1 + i % 12:02d}-{1 + i % 28:02d}"
        lines.append(f"{i:07d},{day},{REGIONS[(i * 7) % 4]},{(i * 37) % 1000 + 1}")
    return "\n".join(lines) + "\n"


@tool(result_kind="dataset/csv")
def export_sales(year: int) -> str:
    """Export every order of a year as CSV (order_id, day, region, amount)."""
    return sales_csv(year)


def model(request: LLMRequest) -> dict[str, object] | str:
    """The stand-in model: export, then run code on the ticket it was shown, then answer."""
    last = request.messages[-1]
    if last.role == "user":
        return {"tool_calls": [{"id": "c1", "name": "export_sales", "args": {"year": 2026}}]}
    text = last.content or ""
    ticket = re.match(r"\[artifact (art_[A-Za-z0-9_-]+)\]", text)
    if ticket:  # the export came back as a ticket: summarise it in code
        args = {"code": SUMMARY_CODE, "dataset": ticket.group(1)}
        return {"tool_calls": [{"id": "c2", "name": "run_code", "args": args}]}
    totals = dict(re.findall(r"^(north|south|east|west)=(\d+)$", text, flags=re.M))
    best = max(totals, key=lambda region: int(totals[region]))
    rows = re.search(r"rows=(\d+)", text)
    return f"{rows.group(1) if rows else '?'} orders; {best} sold the most ({totals[best]})."


def data_agent(store: SqliteStore) -> Agent:
    """Runs and artifacts in one SQLite file: the store's ``trackway_artifacts`` table."""
    return (
        Agent.create(provider=mock(respond=model), model="mock", store=store)
        .system("You analyse sales. Large results arrive as artifacts: summarise them in code.")
        .tool(export_sales)
        .tool(
            code_runner_tool(
                runner=local_code_runner(time_limit=30, memory_limit=512 * 2**20),
                wants={"dataset": "dataset/csv"},
            )
        )
        .artifacts(store, max_inline_chars=2000)
        .build()
    )


def main(db: Path, out: Path) -> None:
    store = SqliteStore(db)
    agent = data_agent(store)
    answer = agent.run_sync("Which region sold the most in 2026?", identity=ANA)
    state = agent.snapshot().state
    exported, summarised = state["tool_results"]
    placed = exported["artifacts"]["placed"]
    print(f"placed: {placed['kind']} {placed['size']} bytes as {placed['ref'][:4]}…")
    served = [m.content or "" for m in served_at(agent.snapshot(), 2).messages if m.role == "tool"]
    print(f"the model read {len(served[0])} characters for the export")
    (redeemed,) = summarised["artifacts"]["redeemed"]
    print(f"redeemed for run_code: {redeemed['arg']}={redeemed['ref'] == placed['ref']}")
    printed = served_at(agent.snapshot(), 3).messages[-1].content or ""
    print("the code printed:", " ".join(re.findall(r"^\w+=\d+$", printed, flags=re.M)))
    print(f"answer: {answer}")

    snap = agent.snapshot()
    calls = receipts(snap)
    law = all(served_at(snap, k).hash == r["request_hash"] for k, r in enumerate(calls, 1))
    print(f"served_at matches every receipt ({len(calls)} calls): {law}")

    save_recording(agent, out, artifacts="embed")
    embedded = recorded_artifacts(out)
    print(f"recording: {out.stat().st_size // 1024} KB, {len(embedded)} artifact embedded")
    print(f"replayed: {replay(load_recording(out)).status}")
    store.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, help="the SQLite file (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or Path(tmp) / "data-agent.db"
        main(db, Path(tmp) / "data-agent.jsonl")
