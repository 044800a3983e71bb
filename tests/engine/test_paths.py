"""Stage paths: one grammar, parsed and formatted in one place."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trackway import Executor, flow_chart
from trackway.engine import StagePath
from trackway.engine.core._paths import Segment, is_name

names = st.text(
    alphabet=st.characters(blacklist_characters="/#:", blacklist_categories=("Zs", "Cc", "Cs")),
    min_size=1,
    max_size=8,
).filter(is_name)
segments = st.builds(
    Segment,
    names,
    st.none() | st.integers(min_value=0, max_value=10**6),
    st.integers(min_value=0, max_value=50),
)


@given(st.lists(segments, min_size=1, max_size=6))
def test_format_and_parse_round_trip(parts):
    path = StagePath(tuple(parts))
    text = str(path)
    assert StagePath.parse(text) == path
    assert StagePath.depth_of(text) == path.depth == len(parts) - 1
    assert StagePath.parent_of(text) == ("" if path.parent is None else str(path.parent))
    assert StagePath.prefix_of(text) == ("" if path.parent is None else f"{path.parent}/")


def test_the_parts_of_a_path():
    path = StagePath.parse("review#4/fan#1/a/approve#2:resume3")
    assert [str(s) for s in path.segments] == ["review#4", "fan#1", "a", "approve#2:resume3"]
    assert (path.name, path.index, path.resume, path.depth) == ("approve", 2, 3, 3)
    assert path.top == Segment("review", 4)
    assert str(path.base()) == "review#4/fan#1/a/approve#2"
    assert str(path.parent) == "review#4/fan#1/a"
    assert str(path.child("x", 7)) == "review#4/fan#1/a/approve#2:resume3/x#7"
    assert StagePath.parse("route").index is None
    assert StagePath.join("a#1/", "b", 2) == "a#1/b#2" and StagePath.join("", "merge") == "merge"


@pytest.mark.parametrize("bad", ["", "a//b", "a#x", "a#1:resume", "#3", "a/:resume1", "a:b"])
def test_malformed_paths_are_refused_naming_the_segment(bad):
    with pytest.raises(ValueError, match="stage path"):
        StagePath.parse(bad)


def test_every_path_the_engine_writes_parses_back():
    sub = flow_chart("In", lambda s: s.__setitem__("x", 1), id="in").build()

    def pick(scope):
        return ["a"]

    chart = (
        flow_chart("Start", lambda s: s.__setitem__("items", [1, 2]), id="start")
        .subflow("Shared", sub, id="shared")
        .subflow("Alone", sub, id="alone", input={}, output={"y": "x"})
        .fork("Fan", {"a": lambda s: None, "b": sub}, id="fan")
        .selector("Pick", pick, id="pick")
        .branch("a", "A", lambda s: None)
        .end()
        .parallel_for_each("Each", items="items", branch=sub, into="r", max_branches=3, id="each")
        .build()
    )
    for commit in Executor(chart).run_sync().snapshot.history():
        assert str(StagePath.parse(commit.stage_path)) == commit.stage_path
        if commit.frame:
            assert str(StagePath.parse(commit.frame)) == commit.frame
