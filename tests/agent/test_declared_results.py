"""Results that say what they covered, through an agent: what the model reads for each helper,
the ``absent`` status, ``coverage_declared`` rows and events, refusals as ``refused:`` results,
periods and their verdicts, limits that travel with the answer, and exact replay."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from tests.examples import examples
from trackway.agent import (
    Agent,
    load_recording,
    mock,
    receipts,
    replay,
    save_recording,
    served_at,
)
from trackway.engine import TrackwayWarning, thaw
from trackway.tools import (
    COVERAGE_BLOCK_HEADING,
    absent,
    coverage,
    define_tool,
    described_result,
)

EXPORT = {
    "exported_at": "2026-08-19T10:12:00Z",
    "source": "Cohesity API export (4 clusters)",
    "runs": [
        {"vm": "vm-01", "day": "2026-08-18", "ok": 1},
        {"vm": "vm-01", "day": "2026-08-19", "ok": 1},
    ],
}
GROUND = {
    "checked": [
        {
            "what": "every backup job in the export of 2026-08-19T10:12:00Z",
            "short": "every backup job in the export",
        }
    ],
    "cannot_cover": [
        {"what": "PPDM", "why": "not collected on this install", "kind": "scope", "short": "PPDM"}
    ],
}


def vm_backups(args: dict[str, Any], ctx: Any) -> Any:
    """One execute, three branches: rows, a verdict, nothing."""
    runs = [r for r in EXPORT["runs"] if r["vm"] == args["vm"]]  # type: ignore[index]
    if not runs:
        return absent(what=f"backup runs for {args['vm']}", **GROUND)
    if args.get("summary"):
        ok = sum(r["ok"] for r in runs)
        return coverage(f"{args['vm']}: {ok} of {len(runs)} backup runs succeeded", **GROUND)
    return described_result(
        facts=[{"entity": args["vm"], "day": r["day"], "ok": r["ok"] == 1} for r in runs],
        provenance={"measured_at": EXPORT["exported_at"], "source": EXPORT["source"]},
        coverage=GROUND,
    )


TOOL = define_tool(
    name="vm_backups",
    description="Backup runs for one VM, or a one-line verdict with summary: true.",
    input_schema={
        "type": "object",
        "properties": {"vm": {"type": "string"}, "summary": {"type": "boolean"}},
        "required": ["vm"],
    },
    execute=vm_backups,
)


def call(args: dict[str, Any], call_id: str = "c1", name: str = "vm_backups") -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": name, "args": args}]}


def agent_for(replies: list[Any], *tools: Any, travel: bool = False, **kw: Any) -> Agent:
    b = Agent.create(provider=mock(replies=replies), model="m", **kw).tools(tools or [TOOL])
    return (b.limits_travel_with_the_answer() if travel else b).build()


def read_by_model(agent: Agent, index: int = 2) -> Any:
    return orjson.loads(agent.snapshot().state["history"][index]["content"])


@pytest.mark.parametrize(
    ("args", "expected", "status"),
    [
        ({"vm": "vm-99"}, absent(what="backup runs for vm-99", **GROUND), "absent"),
        (
            {"vm": "vm-01", "summary": True},
            coverage("vm-01: 2 of 2 backup runs succeeded", **GROUND),
            "success",
        ),
        ({"vm": "vm-01"}, None, "success"),
    ],
)
def test_each_helper_reads_as_its_wire_object(
    args: dict[str, Any], expected: Any, status: str
) -> None:
    agent = agent_for([call(args), "done"])
    events: list[Any] = []
    agent.on("tools.*", lambda e: events.append((e.name, e.payload)))
    agent.run_sync("backups?")
    if expected is None:
        expected = vm_backups(args, None)
    assert read_by_model(agent) == expected.wire()
    state = agent.snapshot().state
    assert state["tool_results"][0]["status"] == status
    rows = state["coverage_declared"]
    assert rows == [{"tool": "vm_backups", "id": "c1", "iteration": 1, **expected.statement()}]
    name = "tools.absent" if status == "absent" else "tools.coverage_declared"
    assert events == [(name, rows[0])]
    # short and kind are kept in the record and never served
    assert rows[0]["cannot_cover"][0]["kind"] == "scope"
    history = orjson.dumps(thaw(state["history"]))
    assert b'every backup job in the export"' not in history and b'"kind"' not in history
    assert b'"short"' not in served_at(agent.snapshot(), 2).canonical_json()


def test_the_exact_absence_the_model_reads() -> None:
    agent = agent_for([call({"vm": "vm-99"}), "none"])
    agent.run_sync("backups?")
    assert read_by_model(agent) == {
        "af_absent": True,
        "outcome": "nothing_found",
        "looked_for": "backup runs for vm-99",
        "checked": [{"what": "every backup job in the export of 2026-08-19T10:12:00Z"}],
        "cannot_cover": [{"what": "PPDM", "why": "not collected on this install"}],
        "retry_returns_the_same": True,
        "note": (
            "The lookup ran to completion and found no match. Treat this as a real answer "
            "rather than a failure: no error happened and no substitute was returned, and "
            "repeating the call with the same arguments will give this same result. The ground "
            "searched is listed under `checked`; anything under `not_checked` or `cannot_cover` "
            "was not searched, and only a different question can reach it."
        ),
    }


def test_a_refusal_inside_execute_is_the_result_and_the_run_goes_on() -> None:
    empty = define_tool(
        name="rows",
        description="Rows.",
        input_schema={"type": "object"},
        execute=lambda args, ctx: described_result(facts=[]),
    )
    agent = agent_for([call({}, name="rows"), "I will look elsewhere."], empty)
    assert agent.run_sync("rows?") == "I will look elsewhere."
    content = agent.snapshot().state["history"][2]["content"]
    assert content == (
        "refused: `facts` is empty — if nothing matched, return absent(what=..., checked=[...]) "
        "instead. (field: facts)"
    )
    assert agent.snapshot().state["tool_results"][0]["status"] == "failure"
    assert "coverage_declared" not in agent.snapshot().state


def test_limits_travel_with_a_prose_answer_composed_from_the_record() -> None:
    agent = agent_for(
        [call({"vm": "vm-99"}), call({"vm": "vm-01", "summary": True}, "c2"), "All fine."],
        travel=True,
    )
    answer = agent.run_sync("backups?")
    block = (
        f"---\n\n{COVERAGE_BLOCK_HEADING}\n\n"
        "Checked:\n- every backup job in the export of 2026-08-19T10:12:00Z\n\n"
        "Cannot cover:\n- PPDM — not collected on this install"
    )
    assert answer == "All fine.\n\n" + block  # two tools said the same ground: said once
    state = agent.snapshot().state
    assert state["response"]["content"] == "All fine."  # what the model said, unedited
    assert state["answer_coverage"]["checked"] == [
        {
            "what": "every backup job in the export of 2026-08-19T10:12:00Z",
            "short": "every backup job in the export",
        }
    ]
    assert state["settings"]["limits_travel"] is True
    assert agent.answer_coverage() == state["answer_coverage"]


def test_without_limits_travel_the_answer_is_untouched_and_the_record_kept() -> None:
    agent = agent_for([call({"vm": "vm-99"}), "none"])
    assert agent.run_sync("x") == "none"
    assert agent.answer_coverage() is None
    assert len(agent.snapshot().state["coverage_declared"]) == 1
    assert "limits_travel" not in agent.snapshot().state["settings"]


def test_a_typed_answer_stays_json_and_the_limits_come_back_as_data() -> None:
    class Verdict(BaseModel):
        healthy: bool

    agent = (
        Agent.create(provider=mock(replies=[call({"vm": "vm-99"}), '{"healthy": true}']), model="m")
        .tool(TOOL)
        .output_schema(Verdict)
        .limits_travel_with_the_answer()
        .build()
    )
    assert agent.run_sync("ok?") == '{"healthy": true}'  # pure JSON: nothing appended
    assert Verdict.model_validate_json(agent.snapshot().state["final_answer"]).healthy
    limits = agent.answer_coverage()
    assert limits is not None
    assert limits["cannot_cover"] == [
        {"what": "PPDM", "why": "not collected on this install", "kind": "scope", "short": "PPDM"}
    ]


def test_nothing_declared_means_no_block_even_with_limits_travel() -> None:
    plain = define_tool(
        name="vm_backups", description="d", input_schema={"type": "object"}, execute=lambda a, c: 1
    )
    agent = agent_for([call({}), "fine"], plain, travel=True)
    assert agent.run_sync("x") == "fine"
    assert agent.answer_coverage() is None
    assert "coverage_declared" not in agent.snapshot().state


QUERIED = {"from": "2026-09-26T09:00:00Z", "to": "2026-09-26T10:00:00Z"}


def failures_tool(held: Any) -> Any:
    def execute(args: dict[str, Any], ctx: Any) -> Any:
        return absent(
            what=f"failed backup jobs for {args['host']}",
            checked=["every backup job in the nightly export"],
            provenance={"measured_at": "2026-09-26T02:00:00Z", "source": "nightly export"},
            period={"queried": QUERIED, "held": held},
        )

    return define_tool(
        name="backup_failures",
        description="Failed backups for one host.",
        input_schema={"type": "object", "properties": {"host": {"type": "string"}}},
        execute=execute,
    )


@pytest.mark.parametrize(
    ("held", "verdict"),
    [
        ({"from": "2026-08-27T02:00:00Z", "to": "2026-09-26T02:00:00Z"}, "not-held"),
        ({"from": "2026-08-27T02:00:00Z", "to": "2026-09-26T11:00:00+01:00"}, "covered"),
        ({"from": "2026-08-27T02:00:00Z", "to": "2026-09-26T09:30:00Z"}, "partly-held"),
        ("unknown", "unknown"),
    ],
)
def test_periods_are_recorded_with_their_verdict_and_travel(held: Any, verdict: str) -> None:
    agent = agent_for(
        [call({"host": "h-103"}, name="backup_failures"), "No failures."],
        failures_tool(held),
        travel=True,
    )
    answer = agent.run_sync("any failed backups in the last hour?")
    row = agent.snapshot().state["coverage_declared"][0]
    assert row["verdict"] == verdict and row["period"] == {"queried": QUERIED, "held": held}
    tail = (
        "what the store holds is unknown"
        if held == "unknown"
        else f"the store holds {held['from']} to {held['to']}"
    )
    assert answer.endswith(
        "Period:\n- backup_failures queried 2026-09-26T09:00:00Z to 2026-09-26T10:00:00Z; " + tail
    )
    assert agent.answer_coverage()["periods"][0]["verdict"] == verdict  # type: ignore[index]


def test_a_tool_that_owes_a_period_and_declares_none_is_recorded_as_silent() -> None:
    logs = define_tool(
        name="search_logs",
        description="Logs.",
        input_schema={
            "type": "object",
            "properties": {"service": {"type": "string"}, "window": {"type": "string"}},
        },
        execute=lambda args, ctx: {"errors": 0},
        ask_or_assume={"window": {"assume": "2h"}},
        period={"argument": "window"},
    )
    agent = agent_for([call({"service": "a"}, name="search_logs"), "No errors."], logs, travel=True)
    answer = agent.run_sync("errors?")
    row = agent.snapshot().state["tool_results"][0]
    assert row["period"] == "undeclared"
    assert answer.endswith(
        'Assumed (a tool\'s rule, not your words):\n- search_logs: window = "2h"'
    )
    assert agent.answer_coverage()["assumed"] == [  # type: ignore[index]
        {
            "tool": "search_logs",
            "id": "c1",
            "argument": "window",
            "value": "2h",
            "source": "default",
        }
    ]


def test_a_ceiling_refusal_records_no_statement() -> None:
    big = define_tool(
        name="vm_backups",
        description="d",
        input_schema={"type": "object", "properties": {"vm": {"type": "string"}}},
        execute=vm_backups,
        result_ceiling={"max_chars": 50},
    )
    agent = agent_for([call({"vm": "vm-99"}), "x"], big)
    agent.run_sync("x")
    state = agent.snapshot().state
    assert state["tool_results"][0]["status"] == "invalid"
    assert "coverage_declared" not in state


def test_a_hand_built_envelope_is_recognized_and_a_bad_short_warned_once() -> None:
    def execute(args: dict[str, Any], ctx: Any) -> Any:
        return {
            "af_coverage": {"checked": [{"what": "all arrays", "short": "bad\nshort"}]},
            "result": "fine",
        }

    name = f"sidecar_{uuid.uuid4().hex[:8]}"  # warned once per tool per process
    sidecar = define_tool(
        name=name, description="d", input_schema={"type": "object"}, execute=execute
    )
    agent = agent_for([call({}, name=name), call({}, "c2", name), "x"], sidecar)
    with pytest.warns(TrackwayWarning, match=name) as caught:
        agent.run_sync("x")
    assert len([w for w in caught if name in str(w.message)]) == 1
    assert read_by_model(agent) == {
        "af_coverage": {"checked": [{"what": "all arrays"}]},
        "result": "fine",
    }
    assert agent.snapshot().state["coverage_declared"][0]["checked"] == [{"what": "all arrays"}]


@pytest.mark.parametrize("with_agent", [False, True])
def test_replay_serves_recorded_statements_exactly(tmp_path: Path, with_agent: bool) -> None:
    calls_made: list[Any] = []

    def counting(args: dict[str, Any], ctx: Any) -> Any:
        calls_made.append(args)
        return vm_backups(args, ctx)

    tool = define_tool(
        name="vm_backups", description="d", input_schema=TOOL.input_schema, execute=counting
    )
    agent = agent_for(
        [call({"vm": "vm-99"}), call({"vm": "vm-01", "summary": True}, "c2"), "All fine."],
        tool,
        travel=True,
    )
    agent.run_sync("backups?")
    loaded = load_recording(save_recording(agent, tmp_path / "r.json"))
    replayed = replay(loaded, agent if with_agent else None)
    assert len(calls_made) == 2
    for key in ("coverage_declared", "answer_coverage", "final_answer", "tool_results"):
        assert replayed.state[key] == agent.snapshot().state[key]
    for k, receipt in enumerate(receipts(loaded), start=1):
        assert served_at(loaded, k).hash == receipt["request_hash"]


_MARK = "zq"  # short/kind text nothing else in a run contains
_short = st.text(alphabet="abcdefgh", min_size=1, max_size=10).map(lambda s: f"{_MARK}{s}")
_item = st.fixed_dictionaries(
    {"what": st.just(f"ground {_MARK * 5} long enough to hold any short form here")},
    optional={"short": _short, "why": st.sampled_from(["a reason", "another"])},
)
_kinded = _item.flatmap(
    lambda i: st.sampled_from(["existence", "scope"]).map(lambda k: {**i, "kind": k, "why": "w"})
)
_value = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(alphabet="xyz ", max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abc"), inner),
    max_leaves=6,
)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    which=st.sampled_from(["absent", "coverage", "described"]),
    checked=st.lists(_item, min_size=1, max_size=2),
    not_checked=st.lists(_kinded, max_size=2),
    value=_value,
)
def test_short_and_kind_never_reach_the_request_or_history(
    which: str, checked: list[Any], not_checked: list[Any], value: Any
) -> None:
    def execute(args: dict[str, Any], ctx: Any) -> Any:
        if which == "absent":
            return absent(what="x", checked=checked, not_checked=not_checked)
        if which == "coverage":
            return coverage(value, checked=checked, not_checked=not_checked)
        return described_result(
            facts=[{"v": value}], coverage={"checked": checked, "not_checked": not_checked}
        )

    t = define_tool(name="t", description="d", input_schema={"type": "object"}, execute=execute)
    agent = agent_for([call({}, name="t"), "done"], t, travel=True)
    agent.run_sync("go")
    snap = agent.snapshot()
    for k in range(1, len(receipts(snap)) + 1):
        request = served_at(snap, k).canonical_json()
        for item in [*checked, *not_checked]:
            if "short" in item:
                assert item["short"].encode() not in request
        assert b'"kind"' not in request
    history = orjson.dumps(thaw(snap.state["history"]))
    assert b'"short"' not in history and b'"kind"' not in history
    rows = snap.state["coverage_declared"]
    recorded = orjson.dumps(thaw(rows))
    for item in [*checked, *not_checked]:
        if "short" in item:
            assert item["short"].encode() in recorded  # kept where it belongs


_payload_word = st.text(alphabet="klmnop", min_size=4, max_size=8).map(lambda w: f"PX{w}")


@settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    word=_payload_word,
    repeat=st.integers(30, 200),
    shape=st.sampled_from(["text", "rows", "coverage", "described", "envelope"]),
    limit=st.integers(10, 100),
)
def test_a_ceiling_refused_payload_enters_no_channel(
    tmp_path_factory: Any, word: str, repeat: int, shape: str, limit: int
) -> None:
    from trackway.engine import SqliteStore

    payload = word * repeat

    def execute(args: dict[str, Any], ctx: Any) -> Any:
        if shape == "rows":
            return [{"row": payload}]
        if shape == "coverage":
            return coverage(payload, checked=["the whole export"])
        if shape == "described":
            return described_result(facts=[{"v": payload}], coverage={"checked": ["all"]})
        if shape == "envelope":
            return {"content": payload, "effects": [], "status": "partial"}
        return payload

    big = define_tool(
        name="big",
        description="d",
        input_schema={"type": "object"},
        execute=execute,
        result_ceiling={"max_chars": limit},
    )
    where = tmp_path_factory.mktemp("ceiling")
    store = SqliteStore(where / "r.db")
    agent = agent_for([call({}, name="big"), "ok"], big, travel=True, store=store)
    heard: list[Any] = []
    agent.on("*", lambda e: heard.append((e.name, e.payload)))
    agent.run_sync("go")
    assert agent.snapshot().state["tool_results"][0]["status"] == "invalid"
    channels = {
        "snapshot": agent.snapshot().to_json(),
        "recording": save_recording(agent, where / "rec.json").read_bytes(),
        "events": repr(heard).encode(),
        "store": b"".join(p.read_bytes() for p in where.glob("r.db*")),
        "requests": b"".join(served_at(agent.snapshot(), k).canonical_json() for k in (1, 2)),
    }
    for name, data in channels.items():
        assert (word * 3).encode() not in data, name
