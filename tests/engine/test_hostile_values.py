"""Values, keys, event names and break reasons that JSON or a store cannot hold are refused at
the write, with a StateValueError that names the part and the fix: never a hang, never a raw
TypeError or UnicodeEncodeError later on."""

from __future__ import annotations

import enum
from typing import Any

import orjson
import pytest

from trackway import Executor, MemoryStore, StageError, flow_chart
from trackway.engine import FrozenDict, FrozenList, StateValueError
from trackway.engine.core import _values
from trackway.engine.core._values import MAX_DEPTH, encode_value


def self_list() -> list[Any]:
    a: list[Any] = []
    a.append(a)
    return a


def self_dict() -> dict[str, Any]:
    d: dict[str, Any] = {}
    d["x"] = d
    return d


def nested_cycle() -> dict[str, Any]:
    outer: dict[str, Any] = {"b": [1, {"c": []}]}
    outer["b"][1]["c"].append(outer["b"])
    return outer


def nest(levels: int, wrap: Any = lambda v: [v]) -> Any:
    """``levels`` lists (or whatever ``wrap`` makes) inside one another."""
    value: Any = []
    for _ in range(levels - 1):
        value = wrap(value)
    return value


def write(key: str, value: Any):
    def stage(scope):
        scope[key] = value

    return stage


def run_stage(fn, input=None, **kwargs):
    return Executor(flow_chart("S", fn).build(), **kwargs).run_sync(input)


def cause_of(fn, input=None) -> StateValueError:
    with pytest.raises(StageError) as info:
        run_stage(fn, input)
    cause = info.value.__cause__
    assert isinstance(cause, StateValueError), repr(cause)
    assert cause.stage_path == "s#0"
    return cause


# -- 1. cycles and depth ---------------------------------------------------------------------


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (self_list, "value[0] refers back to itself (it is value, which contains it)"),
        (self_dict, "value['x'] refers back to itself (it is value, which contains it)"),
        (nested_cycle, "value['b'][1]['c'][0] refers back to itself (it is value['b']"),
        (lambda: [1, {"k": self_list()}], "value[1]['k'][0] refers back to itself"),
    ],
)
def test_a_cyclic_value_is_refused_naming_the_back_reference(make, fragment):
    # Regression: the search for the offending part went round the cycle for ever.
    with pytest.raises(StateValueError) as info:
        encode_value(make(), "k", "s#0")
    message = str(info.value)
    assert fragment in message and "JSON cannot hold a cycle" in message
    assert info.value.key == "k" and info.value.stage_path == "s#0"


@pytest.mark.timeout(10)
def test_a_cycle_through_a_list_subclass_or_a_hand_made_frozen_view_is_refused():
    class Items(list):
        pass

    items = Items()
    items.append(items)
    with pytest.raises(StateValueError, match=r"value\[0\] refers back to itself"):
        encode_value(items, "k", "s#0")
    backing: list[Any] = [1]
    view = FrozenList(backing)
    backing[0] = view
    with pytest.raises(StateValueError, match=r"value\[0\] refers back to itself"):
        encode_value(view, "k", "s#0")


def test_shared_parts_are_not_cycles():
    shared = [1, {"a": 2}]
    _, owned = encode_value([shared, shared, {"again": shared}], "k", "s#0")
    assert owned == [shared, shared, {"again": shared}]


@pytest.mark.timeout(10)
def test_the_search_walks_a_shared_part_once():
    # 2**60 paths through 61 lists: the search must not walk each path.
    shared: Any = [1]
    for _ in range(60):
        shared = [shared, shared]
    assert _values._find_problem([shared, object()], "value") == (
        "value[1] is a builtins.object, not a JSON value"
    )


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda s: s.__setitem__("k", self_list()), "state key 'k'"),
        (lambda s: s.append("k", self_dict()), "state key 'k'"),
        (lambda s: s.emit("evt", nested_cycle()), "the payload of event 'evt'"),
        (lambda s: s.pause(self_list()), "the pause payload"),
    ],
)
def test_a_cyclic_write_emit_or_pause_fails_the_stage_at_once(make, fragment):
    cause = cause_of(make)
    assert fragment in str(cause) and "refers back to itself" in str(cause)


@pytest.mark.timeout(10)
def test_a_cyclic_run_input_and_resume_value_are_refused_at_once():
    with pytest.raises(StateValueError, match=r"in the run input: value\[0\] refers back"):
        run_stage(lambda s: None, {"k": self_list()})

    chart = flow_chart("Ask", lambda s: s.pause("ok?"), on_resume=lambda s, v: None).build()
    executor = Executor(chart)
    checkpoint = executor.run_sync().checkpoint
    assert checkpoint is not None
    with pytest.raises(StateValueError, match=r"value\['x'\] refers back to itself"):
        executor.resume_sync(checkpoint, self_dict())
    # nothing was claimed: the checkpoint still resumes with a good value
    assert executor.resume_sync(checkpoint, "yes").status == "done"


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    "wrap",
    [
        lambda v: [v],
        lambda v: {"a": v},
        lambda v: FrozenList([v]),
        lambda v: FrozenDict({"a": v}),
    ],
    ids=["list", "dict", "frozen-list", "frozen-dict"],
)
def test_depth_up_to_orjsons_limit_is_kept_and_beyond_it_is_refused_clearly(wrap):
    data, _ = encode_value(nest(MAX_DEPTH, wrap), "k", "s#0")
    assert data.count(b"[") + data.count(b"{") == MAX_DEPTH
    with pytest.raises(StateValueError) as info:
        encode_value(nest(MAX_DEPTH + 1, wrap), "k", "s#0")
    message = str(info.value)
    assert f"is nested deeper than {MAX_DEPTH} levels" in message
    assert "Recursion limit" not in message and len(message) < 600  # the path is shortened


def test_max_depth_is_orjsons_own_limit():
    orjson.dumps(nest(MAX_DEPTH))
    with pytest.raises(orjson.JSONEncodeError):
        orjson.dumps(nest(MAX_DEPTH + 1))


@pytest.mark.timeout(10)
def test_an_over_deep_write_fails_the_stage_naming_the_key():
    cause = cause_of(write("deep", nest(MAX_DEPTH + 5)))
    assert cause.key == "deep" and f"nested deeper than {MAX_DEPTH} levels" in str(cause)


def test_good_values_never_reach_the_search(monkeypatch):
    # The fast paths and orjson do all the checking; the walk runs only on refusal.
    def fail(value: Any, path: str) -> str | None:
        raise AssertionError("_find_problem ran on a good value")

    class Level(enum.IntEnum):
        HIGH = 3

    monkeypatch.setattr(_values, "_find_problem", fail)
    for value in (
        0,
        2**64 - 1,
        1.5,
        "text\x00\x1b[31m\n",
        True,
        None,
        [1, [2, {"a": "b"}]],
        {"shared": [[1]] * 3},
        FrozenList([1, 2]),
        FrozenDict({"a": [1]}),
        [Level.HIGH],
        nest(MAX_DEPTH),
    ):
        encode_value(value, "k", "s#0")
    result = run_stage(lambda s: s.__setitem__("k", {"a": [1, "x"]}), {"start": [1]})
    assert result.state["k"] == {"a": [1, "x"]}


# -- 3. surrogates, break reasons, event names ---------------------------------------------


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("\ud800", "value is a str with a lone surrogate ('\\ud800' at index 0)"),
        ({"a": [1, "x\udfff"]}, "value['a'][1] is a str with a lone surrogate"),
        ({"\ud800": 1}, "value has the key '\\ud800', a str with a lone surrogate"),
        (FrozenList(["ok", "\ud800"]), "value[1] is a str with a lone surrogate"),
        ([enum.Enum("Bad", {"X": "\ud800"}, type=str).X], "value[0] is a str with a lone"),
    ],
)
def test_lone_surrogates_are_refused_naming_the_part(value, fragment):
    # Regression: orjson's "str is not valid UTF-8" escaped as a raw TypeError.
    with pytest.raises(StateValueError) as info:
        encode_value(value, "k", "s#0")
    assert fragment in str(info.value) and "encode('utf-8', 'replace')" in str(info.value)


@pytest.mark.parametrize(
    ("stage", "fragment"),
    [
        (lambda s: s.__setitem__("k", "\ud800"), "state key 'k'"),
        (lambda s: s.emit("evt", {"a": "\ud800"}), "the payload of event 'evt'"),
        (lambda s: s.pause(["\udc00"]), "the pause payload"),
        (lambda s: s.break_("why\ud800"), "the break reason"),
    ],
)
def test_lone_surrogates_in_writes_events_pauses_and_break_reasons_fail_the_stage(stage, fragment):
    cause = cause_of(stage)
    assert fragment in str(cause) and "lone surrogate" in str(cause)


def test_a_lone_surrogate_resume_value_and_run_input_are_refused():
    with pytest.raises(StateValueError, match="in the run input: value is a str with a lone"):
        run_stage(lambda s: None, {"k": "\ud800"})
    chart = flow_chart("Ask", lambda s: s.pause(None), on_resume=lambda s, v: None).build()
    executor = Executor(chart)
    checkpoint = executor.run_sync().checkpoint
    assert checkpoint is not None
    with pytest.raises(StateValueError, match="lone surrogate"):
        executor.resume_sync(checkpoint, {"answer": "\ud800"})


@pytest.mark.parametrize("reason", [5, {"why": "x"}, ["a"], b"bytes", 1.5])
def test_a_break_reason_that_is_not_a_str_is_refused(reason):
    # Regression: it passed the write and failed later, or came back as break_reason=5.
    cause = cause_of(lambda s: s.break_(reason))
    message = str(cause)
    assert "scope.break_(reason) in stage 's#0' takes a str or None" in message
    assert type(reason).__name__ in message and "str(reason)" in message


def test_good_break_reasons_still_end_the_run():
    class Why(enum.StrEnum):
        DONE = "done"

    for reason, expected in (("enough", "enough"), (None, ""), (Why.DONE, "done")):
        result = run_stage(lambda s, r=reason: s.break_(r))
        assert (result.status, result.break_reason) == ("broken", expected)


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        (3, "event names are str; cannot use 3 (int) in stage 's#0'"),
        (None, "event names are str; cannot use None (NoneType)"),
        ("bad\ud800", "cannot use event name 'bad\\ud800' in stage 's#0': it holds a lone"),
        ("bad\x00", "cannot use event name 'bad\\x00' in stage 's#0': it holds the control"),
    ],
)
def test_event_names_must_be_text_a_store_can_hold(name, fragment):
    cause = cause_of(lambda s: s.emit(name, 1))
    assert fragment in str(cause)


def test_event_names_may_be_str_enums_and_hold_tabs():
    class Evt(enum.StrEnum):
        DONE = "done"

    def stage(scope):
        scope.emit(Evt.DONE, 1)
        scope.emit("a\tb", 2)

    events = run_stage(stage).snapshot.history()[0].events
    assert [(e.name, e.payload) for e in events] == [("done", 1), ("a\tb", 2)]


# -- 4. control characters in state keys ---------------------------------------------------


@pytest.mark.parametrize(
    ("key", "fragment"),
    [
        ("a\x00b", "it holds the control character '\\x00' at index 1"),
        ("\x1b[31mred", "it holds the control character '\\x1b' at index 0"),
        ("line\r", "it holds the control character '\\r' at index 4"),
        ("\x7f", "it holds the control character '\\x7f' at index 0"),
        ("k\ud800", "it holds a lone surrogate '\\ud800' at index 1"),
    ],
)
@pytest.mark.parametrize(
    "op",
    [
        lambda s, k: s.__setitem__(k, 1),
        lambda s, k: s.__delitem__(k),
        lambda s, k: s.append(k, 1),
        lambda s, k: s.extend(k, [1]),
        lambda s, k: s.merge(k, {"a": 1}),
    ],
    ids=["set", "delete", "append", "extend", "merge"],
)
def test_state_keys_with_control_characters_or_surrogates_are_refused_at_the_write(
    key, fragment, op
):
    # Regression: such keys passed the write; a lone surrogate then failed later, when the
    # commit was serialized, and a NUL or an escape reached stores, logs and narratives.
    cause = cause_of(lambda s: op(s, key))
    assert cause.key == key
    assert f"cannot use state key {key!r} in stage 's#0': {fragment}" in str(cause)


def test_run_input_keys_are_checked_like_written_keys():
    with pytest.raises(StateValueError, match=r"state key 'a\\x00' in the run input"):
        run_stage(lambda s: None, {"a\x00": 1})


def test_tabs_newlines_and_other_text_are_fine_in_keys_and_control_characters_in_values():
    def stage(scope):
        scope["tab\tkey"] = 1
        scope["new\nline"] = 2
        scope["zero\u200bwidth é"] = 3
        scope["data"] = {"raw": "NUL\x00 ESC\x1b[0m CR\r", "nested\x00key": ["\x07"]}

    result = run_stage(stage, store=MemoryStore())
    assert result.state["data"] == {"raw": "NUL\x00 ESC\x1b[0m CR\r", "nested\x00key": ["\x07"]}
    assert result.state["tab\tkey"] == 1 and result.state["new\nline"] == 2
