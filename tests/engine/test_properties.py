"""Property tests: the commit log round-trips, time travel equals folding, merges ignore timing."""

from __future__ import annotations

import copy
import gc
import random
from typing import Any

import anyio
import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.examples import examples
from trackway import Executor, Snapshot, flow_chart, thaw
from trackway.engine import write_value

KEYS = ["a", "b", "c", "d"]
ABSENT = object()

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=12,
)
op_strategy = st.tuples(
    st.sampled_from(["set", "append", "extend", "merge", "delete", "emit"]),
    st.sampled_from(KEYS),
    json_values,
)
program = st.lists(st.lists(op_strategy, max_size=5), min_size=1, max_size=8)


def make_stage(ops: list[tuple[str, str, Any]]):
    def stage(s):
        for kind, key, value in ops:
            current = s.get(key, ABSENT)
            if kind == "append" and (current is ABSENT or hasattr(current, "at_tip")):
                s.append(key, value)
            elif kind == "extend" and hasattr(current, "at_tip"):
                s.extend(key, [value, value])
            elif (
                kind == "merge"
                and isinstance(value, dict)
                and (current is ABSENT or hasattr(current, "keys"))
            ):
                s.merge(key, value)
            elif kind == "delete":
                if key in s:
                    del s[key]
            elif kind == "emit":
                s.emit(key, value)
            else:
                s[key] = value

    return stage


def run_program(stages: list[list[tuple[str, str, Any]]], fail_last: bool):
    builder = flow_chart("S0", make_stage(stages[0]), id="s0")
    for i, ops in enumerate(stages[1:], start=1):
        builder = builder.then(f"S{i}", make_stage(ops), id=f"s{i}")
    if fail_last:

        def boom(s):
            s["e"] = 1
            raise RuntimeError("planned")

        builder = builder.then("Boom", boom, id="boom")
    return Executor(builder.build()).run_sync({"seed": [1]}, raise_on_error=False)


def fold(state: dict[str, Any], commit) -> dict[str, Any]:
    """An independent, naive oracle: apply one commit's ops to a plain dict."""
    out = copy.deepcopy(state)
    if commit.frame != "":
        return out
    for op in commit.ops:
        value = thaw(op.value)
        if op.kind == "set":
            out[op.key] = value
        elif op.kind == "append":
            out[op.key] = [*out.get(op.key, []), *value]
        elif op.kind == "merge":
            out[op.key] = {**out.get(op.key, {}), **value}
        else:
            out.pop(op.key, None)
    return out


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program, st.booleans())
def test_snapshot_json_round_trip_and_time_travel_equal_folding(stages, fail_last):
    result = run_program(stages, fail_last)
    snap = result.snapshot
    again = Snapshot.from_json(snap.to_json())
    assert again == snap
    assert again.to_json() == snap.to_json()
    assert snap.state_at(len(snap)) == result.state
    state = {"seed": [1]}
    for k, commit in enumerate(snap.history(), start=1):
        state = fold(state, commit)
        assert thaw(snap.state_at(k)) == state
        assert thaw(again.state_at(k)) == state
    assert result.status == ("failed" if fail_last else "done")
    # the log holds no container the cycle collector must walk: writes and events are
    # plain tuples of atoms, each value read back from its JSON (a collection untracks a
    # tuple whose items it found untracked: the log's nested tuples take two)
    gc.collect()
    gc.collect()
    for commit in (*snap.history(), *again.history()):
        assert not gc.is_tracked(commit.writes) and not gc.is_tracked(commit.emitted)
        for w in commit.writes:
            assert thaw(write_value(w)) == orjson.loads(w[2])
        for e in commit.events:
            assert thaw(e.payload) == orjson.loads(e.data)


branch_ops = st.lists(
    st.tuples(st.sampled_from(["set-own", "append", "set-shared"]), json_scalars),
    min_size=1,
    max_size=4,
)


@settings(max_examples=examples(25), deadline=None)
@given(
    st.lists(branch_ops, min_size=2, max_size=5),
    st.integers(0, 2**32),
    st.sampled_from(["last", "namespace", "error_on_conflict"]),
)
def test_merge_result_and_log_do_not_depend_on_branch_timing(branches, seed, policy):
    def make_branch(i: int, ops, delays: list[float]):
        async def stage(s):
            for (kind, value), delay in zip(ops, delays, strict=False):
                await anyio.sleep(delay)
                if kind == "set-own":
                    s[f"own{i}"] = value
                elif kind == "append":
                    s.append("shared_log", value)
                elif policy != "error_on_conflict":
                    s["shared"] = value

        return stage

    def build(delay_seed: int):
        r = random.Random(seed + delay_seed)
        fork = {
            f"b{i}": make_branch(i, ops, [r.choice([0, 0.001, 0.003]) for _ in ops])
            for i, ops in enumerate(branches)
        }
        return flow_chart("Start", lambda s: None).fork("F", fork, merge=policy).build()

    def shape(result):
        return [
            (c.seq, c.stage_path, c.frame, c.kind, c.ops, c.reads, c.outcome)
            for c in result.snapshot.history()
        ], thaw(result.state)

    first = shape(Executor(build(1)).run_sync({"shared_log": []}))
    second = shape(Executor(build(2)).run_sync({"shared_log": []}))
    assert first == second
