"""The heap a serving command built at startup, kept out of the cyclic garbage collector."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["frozen_startup_heap"]


@contextlib.contextmanager
def frozen_startup_heap(enabled: bool = True) -> Iterator[None]:
    """While a command serves, keep what its startup built (imports, charts, the agent) out
    of the collector's full collections with ``gc.freeze()``: each full collection walks
    every tracked object, and with many runs in flight they come often. Handed back
    (``gc.unfreeze()``) when the command returns; a heap someone else froze is left as is."""
    if not enabled or gc.get_freeze_count() > 0:
        yield
        return
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
