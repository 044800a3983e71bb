"""``frozen_startup_heap``: what ``trackway serve`` and ``trackway worker`` keep out of the
cyclic collector while they serve, handed back when they return."""

from __future__ import annotations

import gc

import pytest

from trackway._cli_gc import frozen_startup_heap


def test_the_heap_is_frozen_while_serving_and_handed_back_after() -> None:
    assert gc.get_freeze_count() == 0
    kept = object.__new__(type("Kept", (), {}))  # a tracked object built at "startup"
    with frozen_startup_heap():
        assert gc.get_freeze_count() > 0
        assert not any(o is kept for o in gc.get_objects())  # out of every generation
    assert gc.get_freeze_count() == 0
    assert gc.is_tracked(kept)


def test_disabled_it_freezes_nothing() -> None:
    with frozen_startup_heap(False):
        assert gc.get_freeze_count() == 0


def test_a_heap_someone_else_froze_is_left_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    gc.freeze()
    try:
        calls: list[str] = []
        monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
        monkeypatch.setattr(gc, "unfreeze", lambda: calls.append("unfreeze"))
        with frozen_startup_heap():
            pass
        assert calls == []  # neither frozen again nor unfrozen under its owner
    finally:
        monkeypatch.undo()
        gc.unfreeze()
    assert gc.get_freeze_count() == 0
