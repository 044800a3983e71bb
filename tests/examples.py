"""How many examples a property test draws: all of them in CI and under ``make test-full``
(``TRACKWAY_TEST_FULL=1``), a quarter on a developer's ``make test`` (the session's summary
says which)."""

from __future__ import annotations

import os

__all__ = ["FULL_EXAMPLES", "examples"]

FULL_EXAMPLES = bool(os.environ.get("TRACKWAY_TEST_FULL") or os.environ.get("CI"))


def examples(n: int) -> int:
    """``max_examples`` for a property test written for ``n``."""
    return n if FULL_EXAMPLES else max(10, n // 4)
