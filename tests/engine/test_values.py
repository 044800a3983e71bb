from __future__ import annotations

import enum
import math
from datetime import datetime

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from trackway import thaw
from trackway.engine import FrozenDict, FrozenList, ReadOnlyStateError, StateValueError
from trackway.engine.core._values import encode_value, to_plain


class Color(enum.IntEnum):
    RED = 1


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (2**64, "does not fit in 64 bits"),
        (-(2**63) - 1, "does not fit in 64 bits"),
        (math.nan, "not a finite number"),
        (math.inf, "not a finite number"),
        ((1, 2), "tuple"),
        ({"a": [1, (2, 3)]}, "value['a'][1] is a tuple"),
        ({"a": math.nan}, "value['a'] is nan"),
        ({1: "x"}, "non-str key 1"),
        (object(), "builtins.object"),
        (datetime(2026, 1, 1), "datetime"),
        ({"big": [2**70]}, "beyond 64 bits"),
    ],
)
def test_unfaithful_values_are_refused_naming_key_stage_and_part(value: object, fragment: str):
    with pytest.raises(StateValueError) as info:
        encode_value(value, "k", "stage#3")
    message = str(info.value)
    assert "'k'" in message and "'stage#3'" in message and fragment in message
    assert info.value.key == "k" and info.value.stage_path == "stage#3"


@pytest.mark.parametrize(
    "value",
    [0, -(2**63), 2**64 - 1, 1.5, -0.0, "é", True, None, [], {}, {"a": [1, {"b": None}]}],
)
def test_json_values_round_trip_exactly(value: object):
    _, owned = encode_value(value, "k", "s#0")
    assert owned == value
    assert type(owned) is type(value)


def test_int_and_str_enums_are_stored_as_their_plain_value():
    # Equal under ==, and JSON has no enums: the documented exception to "refused".
    _, owned = encode_value([Color.RED], "k", "s#0")
    assert owned == [1] and type(owned[0]) is int


def test_encoded_copy_is_independent_of_the_callers_object():
    mine = {"items": [1, 2]}
    _, owned = encode_value(mine, "k", "s#0")
    mine["items"].append(3)
    assert owned == {"items": [1, 2]}


def test_frozen_views_refuse_every_mutation_with_a_teaching_message():
    lst = FrozenList([1, {"a": [2]}])
    for attempt in (
        lambda: lst.append(3),
        lambda: lst.extend([3]),
        lambda: lst.__setitem__(0, 9),
        lambda: lst.pop(),
        lambda: lst.sort(),
        lambda: lst[1].__setitem__("a", 1),
        lambda: lst[1]["a"].append(1),
    ):
        with pytest.raises(ReadOnlyStateError, match="scope.append"):
            attempt()
    d = FrozenDict({"x": 1})
    with pytest.raises(ReadOnlyStateError):
        d["x"] = 2
    with pytest.raises(ReadOnlyStateError):
        d.update(x=2)


def test_frozen_list_view_is_bounded_by_its_length():
    backing = [1, 2, 3]
    view = FrozenList(backing, 2)
    backing.append(4)
    assert list(view) == [1, 2] and len(view) == 2 and view[-1] == 2
    with pytest.raises(IndexError):
        view[2]
    assert view == [1, 2] and view == [1, 2] and view != [1, 2, 3]
    assert view[0:1] == [1]


def test_thaw_gives_a_deep_mutable_copy():
    view = FrozenDict({"a": [1, {"b": 2}]})
    plain = thaw(view)
    plain["a"][1]["b"] = 3
    assert view["a"][1]["b"] == 2
    assert type(plain) is dict and type(plain["a"]) is list


def test_frozen_values_can_be_written_back_and_are_shared_not_copied():
    view = FrozenList([1, 2])
    data, owned = encode_value(view, "k", "s#0")
    assert owned is view and data == b"[1,2]"
    data, owned = encode_value({"inner": view}, "k", "s#0")
    assert owned == {"inner": [1, 2]} and data == b'{"inner":[1,2]}'


_FLAT_VALUES = st.one_of(
    st.text(),  # control characters and lone surrogates included: the round trip judges
    st.integers(min_value=-(2**65), max_value=2**65),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=2),
)


@given(st.dictionaries(st.one_of(st.text(), st.integers()), _FLAT_VALUES, max_size=5))
def test_thaw_of_a_plain_dict_is_the_json_round_trip(value: dict[object, object]):
    # thaw copies a flat dict of exact JSON scalars one level; it must equal the round trip
    # it skips, and raise where the round trip raises (a lone surrogate, a huge int, a key)
    try:
        expected = orjson.loads(orjson.dumps(value, default=to_plain))
    except (TypeError, orjson.JSONEncodeError):
        with pytest.raises((TypeError, orjson.JSONEncodeError)):
            thaw(value)
        return
    got = thaw(value)
    assert got == expected  # NaN became null on both sides
    assert list(got) == list(expected) and got is not value
    assert [type(v) for v in got.values()] == [type(v) for v in expected.values()]


def test_state_prints_as_plain_lists_and_dicts(capsys):
    from trackway import Executor, flow_chart

    def stage(scope):
        scope["items"] = [1, 2, {"x": [3]}]
        scope["config"] = {"k": [1]}
        scope.append("log", "one")

    result = Executor(flow_chart("Write", stage).build()).run_sync()
    print(result.state)
    print(result.state["items"], result.snapshot.state_at(1)["log"])
    printed = capsys.readouterr().out.splitlines()
    assert printed == [
        "{'items': [1, 2, {'x': [3]}], 'config': {'k': [1]}, 'log': ['one']}",
        "[1, 2, {'x': [3]}] ['one']",
    ]
    assert repr(FrozenList([1, 2], 1)) == "[1]"  # the view's length, not its backing's
    assert f"{FrozenDict({'a': FrozenList([1])})!r}" == "{'a': [1]}"
    # still read-only views, whatever they print as
    assert isinstance(result.state["items"], FrozenList)
