"""The limits of an answer: folding recorded statements and the appended block's exact text."""

from __future__ import annotations

from typing import Any

from trackway.tools.results._declared import absent, coverage, described_result
from trackway.tools.results._limits import (
    ASSUMED_LABEL,
    CANNOT_COVER_LABEL,
    CHECKED_LABEL,
    COVERAGE_BLOCK_HEADING,
    IN_PROGRESS_SECTION_LABEL,
    NOT_CHECKED_LABEL,
    PERIOD_LABEL,
    answer_coverage,
    limits_block,
)

QUERIED = {"from": "2026-09-26T09:00:00Z", "to": "2026-09-26T10:00:00Z"}
HELD = {"from": "2026-08-27T02:00:00Z", "to": "2026-09-26T02:00:00Z"}
NDM = {"what": "NDM migration sessions", "why": "the API timed out — ask again"}
MULTIPATH = {"what": "host-side multipathing", "why": "no collector runs on the ESX hosts"}


def _row(statement: dict[str, Any] | None, tool: str, call: str) -> dict[str, Any]:
    assert statement is not None
    return {**statement, "tool": tool, "id": call}


def test_labels_are_pinned() -> None:
    assert COVERAGE_BLOCK_HEADING.endswith(":") and "\n" not in COVERAGE_BLOCK_HEADING
    assert (CHECKED_LABEL, NOT_CHECKED_LABEL, CANNOT_COVER_LABEL, PERIOD_LABEL) == (
        "Checked:",
        "Not checked:",
        "Cannot cover:",
        "Period:",
    )
    assert IN_PROGRESS_SECTION_LABEL == "In progress (outcome not known yet):"
    assert ASSUMED_LABEL == "Assumed (a tool's rule, not your words):"


def test_nothing_declared_is_none() -> None:
    assert answer_coverage([]) is None
    empty = {"source": "absent", "checked": [], "not_checked": [], "cannot_cover": []}
    assert answer_coverage([{**empty, "tool": "t", "id": "c1"}]) is None
    assert answer_coverage([{**empty, "in_progress": [], "tool": "t", "id": "c1"}], ()) is None


def test_duplicates_fold_first_seen_first_and_keep_short_and_kind() -> None:
    first = coverage(
        "ok",
        checked=["SRDF pair state on all 4 arrays (live query)"],
        not_checked=[{**NDM, "short": "NDM sessions", "kind": "scope"}],
        cannot_cover=[MULTIPATH],
    )
    second = absent(
        what="NDM sessions for array-7",
        checked=["SRDF pair state on all 4 arrays (live query)", "the array list"],
        not_checked=[NDM, {"what": "NDM migration sessions", "why": "another reason"}],
        cannot_cover=[MULTIPATH],
    )
    third = described_result(facts=[{"a": 1}], coverage={"cannot_cover": [MULTIPATH]})
    rows = [
        _row(first.statement(), "replication_health", "c1"),
        _row(second.statement(), "ndm_sessions", "c2"),
        _row(third.statement(), "hosts", "c3"),
    ]
    assert answer_coverage(rows) == {
        "checked": [
            {"what": "SRDF pair state on all 4 arrays (live query)"},
            {"what": "the array list"},
        ],
        "not_checked": [
            {**NDM, "short": "NDM sessions", "kind": "scope"},
            {"what": "NDM migration sessions", "why": "another reason"},
        ],
        "cannot_cover": [MULTIPATH],
    }


def test_in_progress_periods_and_assumed_come_back_as_data() -> None:
    ledger = coverage(
        {"failed": 0},
        checked=["every replication session on array-7"],
        in_progress=[{"what": "sessions still synchronizing", "count": 2, "short": "syncing"}],
        period={"queried": QUERIED, "held": "unknown", "read_at": "2026-09-26T10:01:00Z"},
    )
    gone = absent(
        what="failed backups for host-103",
        checked=["every backup job in the nightly export"],
        period={"queried": QUERIED, "held": HELD},
    )
    assumed = [{"tool": "backup_failures", "argument": "window", "value": "2h"}]
    rows = [_row(ledger.statement(), "sessions", "c1"), _row(gone.statement(), "backups", "c2")]
    assert answer_coverage(rows, assumed) == {
        "checked": [
            {"what": "every replication session on array-7"},
            {"what": "every backup job in the nightly export"},
        ],
        "not_checked": [],
        "cannot_cover": [],
        "in_progress": [{"what": "sessions still synchronizing", "count": 2, "short": "syncing"}],
        "periods": [
            {
                "tool": "sessions",
                "id": "c1",
                "queried": QUERIED,
                "held": "unknown",
                "read_at": "2026-09-26T10:01:00Z",
                "verdict": "unknown",
            },
            {"tool": "backups", "id": "c2", "queried": QUERIED, "held": HELD,
             "verdict": "not-held"},
        ],
        "assumed": assumed,
    }  # fmt: skip


def test_a_period_alone_or_an_assumption_alone_is_something_to_say() -> None:
    period_only = described_result(facts=[{"a": 1}], period={"queried": QUERIED, "held": HELD})
    out = answer_coverage([_row(period_only.statement(), "t", "c1")])
    assert out is not None and [p["verdict"] for p in out["periods"]] == ["not-held"]
    assumed = [{"tool": "t", "argument": "window", "value": 2}]
    assert answer_coverage([], assumed) == {
        "checked": [],
        "not_checked": [],
        "cannot_cover": [],
        "assumed": assumed,
    }


def test_limits_block_exact_text() -> None:
    coverage_value = {
        "checked": [{"what": "SRDF pair state on all 4 arrays (live query)", "short": "SRDF"}],
        "not_checked": [NDM, {"what": "tape copies"}],
        "cannot_cover": [MULTIPATH],
        "in_progress": [
            {"what": "sessions still synchronizing", "count": 2},
            {"what": "a resync", "why": "started 09:55"},
        ],
        "periods": [
            {"tool": "backup_failures", "id": "c1", "queried": QUERIED, "held": HELD,
             "verdict": "not-held"},
            {"tool": "sessions", "id": "c2", "queried": QUERIED, "held": "unknown",
             "read_at": "2026-09-26T10:01:00Z", "verdict": "unknown"},
        ],
        "assumed": [
            {"tool": "backup_failures", "argument": "window", "value": "2h"},
            {"tool": "sessions", "argument": "arrays", "value": [7, 8]},
        ],
    }  # fmt: skip
    assert limits_block(coverage_value) == (
        "---\n"
        "\n"
        f"{COVERAGE_BLOCK_HEADING}\n"
        "\n"
        "Checked:\n"
        "- SRDF pair state on all 4 arrays (live query)\n"
        "\n"
        "Not checked:\n"
        "- NDM migration sessions — the API timed out — ask again\n"
        "- tape copies\n"
        "\n"
        "Cannot cover:\n"
        "- host-side multipathing — no collector runs on the ESX hosts\n"
        "\n"
        "In progress (outcome not known yet):\n"
        "- sessions still synchronizing (2)\n"
        "- a resync — started 09:55\n"
        "\n"
        "Period:\n"
        "- backup_failures queried 2026-09-26T09:00:00Z to 2026-09-26T10:00:00Z; the store "
        "holds 2026-08-27T02:00:00Z to 2026-09-26T02:00:00Z\n"
        "- sessions queried 2026-09-26T09:00:00Z to 2026-09-26T10:00:00Z; what the store "
        "holds is unknown (read at 2026-09-26T10:01:00Z)\n"
        "\n"
        "Assumed (a tool's rule, not your words):\n"
        '- backup_failures: window = "2h"\n'
        "- sessions: arrays = [7,8]"
    )


def test_limits_block_leaves_out_empty_sections() -> None:
    ledger = coverage("fine", checked=["SRDF pair state"], cannot_cover=[MULTIPATH])
    data = answer_coverage([_row(ledger.statement(), "replication_health", "c1")])
    assert data is not None
    assert limits_block(data) == (
        f"---\n\n{COVERAGE_BLOCK_HEADING}\n\nChecked:\n- SRDF pair state\n\n"
        "Cannot cover:\n- host-side multipathing — no collector runs on the ESX hosts"
    )
