"""The conformance law as a check: every model call a record holds, rebuilt from the log
alone (``served_at``), hashes to its receipt."""

from __future__ import annotations

from typing import Any

from trackway.agent import receipts, served_at

__all__ = ["assert_law"]


def assert_law(record: Any) -> int:
    """Check the law on ``record`` (an agent, a snapshot or a loaded recording) at every call
    and every depth; returns how many calls were checked."""
    rs = receipts(record)
    for k, receipt in enumerate(rs, start=1):
        assert served_at(record, k).hash == receipt["request_hash"], k
    return len(rs)
