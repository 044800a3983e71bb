"""examples/memory_assistant.py runs offline, in three processes on one SQLite file: a turn
that is remembered, a later process that recalls it, another tenant that recalls nothing."""

from __future__ import annotations

import sqlite3
from contextlib import closing

from trackway import SqliteStore

from .example_script import EXAMPLES, run_script

EXAMPLE = EXAMPLES / "memory_assistant.py"


def test_a_preference_is_recalled_in_another_process_and_not_for_another_tenant(tmp_path):
    db = tmp_path / "assistant.db"
    proc = run_script(EXAMPLE, "--db", str(db))
    assert proc.stderr == ""
    lines = proc.stdout.splitlines()
    assert "[first] recalled: {'recent': 0, 'facts': 0}" in lines
    assert "[second] recalled: {'recent': 1, 'facts': 2}" in lines
    assert "[second] answer: Black with one sugar, Ana." in lines
    assert "[elsewhere] recalled: {'recent': 0, 'facts': 0}" in lines
    assert (
        "[elsewhere] answer: I don't know how you take your coffee yet: tell me and I "
        "will remember." in lines
    )
    assert sum("served_at matches every receipt: True; replayed: done" in x for x in lines) == 3
    # three runs in the file, and the memory of one scope only (Ana at Acme)
    store = SqliteStore(db)
    assert len(store.list_runs()) == 3
    store.close()
    with closing(sqlite3.connect(db)) as conn:
        scopes = conn.execute("SELECT count(DISTINCT scope) FROM trackway_memory_facts").fetchone()[
            0
        ]
        turns = conn.execute("SELECT count(*) FROM trackway_memory").fetchone()[0]
    assert scopes == 1  # the other tenant's turn stated no fact
    assert turns == 3  # each turn was kept under its own identity's scope
