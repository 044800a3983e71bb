"""``serving_gc``: the collector as a serving process tunes it (``trackway serve`` and
``trackway worker`` use it), handed back as it was when serving ends."""

from __future__ import annotations

import gc

import pytest

from trackway.engine import SERVING_YOUNG_THRESHOLD, serving_gc


@pytest.fixture(autouse=True)
def _collector_as_found() -> object:
    thresholds = gc.get_threshold()
    yield
    gc.set_threshold(*thresholds)
    assert gc.get_freeze_count() == 0


def test_the_heap_is_frozen_and_young_collections_spaced_while_serving_then_handed_back() -> None:
    before = gc.get_threshold()
    kept = object.__new__(type("Kept", (), {}))  # a tracked object built at "startup"
    with serving_gc():
        assert gc.get_freeze_count() > 0
        assert not any(o is kept for o in gc.get_objects())  # out of every generation
        assert gc.get_threshold() == (SERVING_YOUNG_THRESHOLD, *before[1:])
    assert gc.get_freeze_count() == 0
    assert gc.is_tracked(kept)
    assert gc.get_threshold() == before


def test_each_half_can_be_left_out() -> None:
    before = gc.get_threshold()
    with serving_gc(freeze=False, young=None):
        assert gc.get_freeze_count() == 0 and gc.get_threshold() == before
    with serving_gc(freeze=False, young=5_000):
        assert gc.get_freeze_count() == 0 and gc.get_threshold()[0] == 5_000
    assert gc.get_threshold() == before


def test_the_thresholds_come_back_when_serving_fails() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError, match="server down"), serving_gc():
        raise RuntimeError("server down")
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


@pytest.mark.parametrize("young", [0, -1, True, 1.5, "700"])
def test_a_threshold_that_is_not_a_positive_int_is_refused_before_anything_changes(
    young: object,
) -> None:
    before = gc.get_threshold()
    with pytest.raises(ValueError, match="positive int"), serving_gc(young=young):  # type: ignore[arg-type]
        pass
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_a_heap_someone_else_froze_is_left_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    gc.freeze()
    try:
        calls: list[str] = []
        monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
        monkeypatch.setattr(gc, "unfreeze", lambda: calls.append("unfreeze"))
        with serving_gc(young=None):
            pass
        assert calls == []  # neither frozen again nor unfrozen under its owner
    finally:
        monkeypatch.undo()
        gc.unfreeze()
