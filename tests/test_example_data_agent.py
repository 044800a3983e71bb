"""examples/data_agent.py runs offline: a ~5 MB CSV result is placed in the SQLite store's
artifact table, the model reads a ticket, the code runner gets the bytes staged as a file
and sums them in a real subprocess, and the recording replays with the artifact embedded."""

from __future__ import annotations

import csv
import io
import sqlite3
from contextlib import closing

from .example_script import EXAMPLES, run_script

EXAMPLE = EXAMPLES / "data_agent.py"


def test_a_5_mb_csv_is_a_ticket_for_the_model_and_a_file_for_the_code(tmp_path, monkeypatch):
    db = tmp_path / "data.db"
    proc = run_script(EXAMPLE, "--db", str(db))
    assert proc.stderr == ""
    lines = proc.stdout.splitlines()
    # the totals the code printed are the CSV's own, computed here independently
    monkeypatch.syspath_prepend(str(EXAMPLES))
    from data_agent import sales_csv

    totals: dict[str, int] = {}
    text = sales_csv(2026)
    for row in csv.DictReader(io.StringIO(text)):
        totals[row["region"]] = totals.get(row["region"], 0) + int(row["amount"])
    ranked = sorted(totals.items(), key=lambda kv: -kv[1])
    assert len(text.encode()) > 5_000_000
    assert f"placed: dataset/csv {len(text.encode())} bytes as art_…" in lines
    (read,) = [x for x in lines if x.startswith("the model read ")]
    assert int(read.split()[3]) < 400  # a ticket line, not 5 MB
    assert "redeemed for run_code: dataset=True" in lines
    assert "the code printed: " + " ".join(f"{r}={t}" for r, t in ranked) in lines
    assert f"answer: 180000 orders; {ranked[0][0]} sold the most ({ranked[0][1]})." in lines
    assert "served_at matches every receipt (3 calls): True" in lines
    assert any(x.startswith("recording: ") and x.endswith(", 1 artifact embedded") for x in lines)
    assert lines[-1] == "replayed: done"
    # the bytes are kept once in the store's artifact table, under Ana's scope
    with closing(sqlite3.connect(db)) as conn:
        rows = conn.execute(
            "SELECT kind, size, tenant, principal, conversation FROM trackway_artifacts"
        ).fetchall()
    assert rows == [("dataset/csv", len(text.encode()), "acme", "ana", "sales-review")]
