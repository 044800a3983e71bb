"""absent / coverage / described_result: refusals, the exact wire, the statement, and the
strict recognizer read_declared."""

from __future__ import annotations

import pickle
import uuid
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from trackway.engine import TrackwayWarning
from trackway.tools.define._errors import ToolError
from trackway.tools.results._coverage_items import DeclarationRefused, record_item, served_item
from trackway.tools.results._declared import (
    ABSENCE_MARKER,
    ABSENCE_NOTE,
    COVERAGE_MARKER,
    COVERAGE_NOTE,
    IN_PROGRESS_CLAUSE,
    IN_PROGRESS_WIRE,
    SEMANTICS_NOTE,
    CoveredResult,
    DescribedResult,
    ToolAbsence,
    absent,
    coverage,
    described_result,
)
from trackway.tools.results._declared_read import Declared, read_declared

AT = "2026-08-19T10:12:00Z"
PERIOD = {
    "queried": {"from": "2026-09-26T09:00:00Z", "to": "2026-09-26T10:00:00Z"},
    "held": "unknown",
}
PROVENANCE = {"measured_at": AT, "source": "Cohesity API export (4 clusters)"}
GROUND = {
    "checked": ["every backup job in the export of 2026-08-19T10:12:00Z"],
    "cannot_cover": [{"what": "PPDM", "why": "not collected on this install"}],
}
DISKS = {
    "what": "vDisk and vm_rdm_map: every VM disk in the RVTools export dated 2026-09-19",
    "short": "every VM disk in the RVTools export of 2026-09-19",
}
ARRAY = {
    "what": "whether that name is a storage array, and which VM disks are on it",
    "why": "this tool places disks",
    "short": "whether that name is a storage array",
    "kind": "existence",
}
HOSTS = {
    "what": "hosts that are not VMware — AIX LPARs and physical servers",
    "why": "RVTools sees VMware only",
    "short": "hosts that are not VMware",
    "kind": "scope",
}


def _tool() -> str:
    return f"tool_{uuid.uuid4().hex[:8]}"


def _dumps(value: Any) -> bytes:
    return orjson.dumps(value)


# --- refusals -------------------------------------------------------------------------------

FACT = [{"entity": "vm-01"}]
OK = {"what": "x", "checked": ["the live database"]}


def _absent(**kw: Any) -> Callable[[], Any]:
    return lambda: absent(**{**OK, **kw})


def _covered(value: Any = "ok", **kw: Any) -> Callable[[], Any]:
    return lambda: coverage(value, **{"checked": ["a"], **kw})


def _described(**kw: Any) -> Callable[[], Any]:
    return lambda: described_result(**{"facts": FACT, **kw})


REFUSALS: list[tuple[str, Callable[[], Any], str, str]] = [
    # described_result
    ("facts not a list", lambda: described_result(facts="rows"), "facts", "pass a list"),
    ("facts a dict", lambda: described_result(facts={"a": 1}), "facts", "must be a list"),
    ("fact not a mapping", lambda: described_result(facts=[1]), "facts[0]", "one typed fact"),
    ("fact not JSON", _described(facts=[{"at": object()}]), "facts[0].at", "JSON cannot carry"),
    ("described unknown kw", _described(facs=FACT), "facs", "did you mean facts?"),
    ("described camel kw", _described(Grain={}), "Grain", "did you mean grain?"),
    ("empty coverage", _described(coverage={}), "coverage.checked", "all empty"),
    ("coverage not a mapping", _described(coverage=["a"]), "coverage", "must be a mapping"),
    ("coverage in_progress", _described(coverage={"checked": ["a"], "in_progress": ["b"]}),
     "coverage.in_progress", "not taken here yet"),
    ("coverage camel key", _described(coverage={"notChecked": ["a"]}), "coverage.notChecked",
     "did you mean not_checked?"),
    ("coverage cannot_cover why", _described(coverage={"cannot_cover": ["PPDM"]}),
     "coverage.cannot_cover[0].why", "needs a `why`"),
    ("coverage short", _described(coverage={"checked": [{"what": "abc", "short": "a\nb"}]}),
     "coverage.checked[0].short", "one line of plain visible text"),
    ("grain no is_counter", _described(grain={"unit": "GB"}), "grain.is_counter", "is_counter"),
    ("grain int is_counter", _described(grain={"is_counter": 1}), "grain.is_counter",
     "True or False"),
    ("grain unknown key", _described(grain={"is_counter": True, "units": "GB"}), "grain.units",
     "did you mean unit?"),
    ("grain empty unit", _described(grain={"is_counter": True, "unit": ""}), "grain.unit",
     "is empty"),
    ("grain not a mapping", _described(grain=True), "grain", "must be a mapping"),
    ("naive measured_at", _described(provenance={"measured_at": "2026-08-19T10:12:00",
     "source": "s"}), "provenance.measured_at", "an instant needs a zone"),
    ("camel provenance", _described(provenance={"measuredAt": AT, "source": "s"}),
     "provenance.measuredAt", "did you mean measured_at?"),
    ("provenance no source", _described(provenance={"measured_at": AT}), "provenance.source",
     "needs `source`"),
    ("provenance not a mapping", _described(provenance=AT), "provenance", "must be a mapping"),
    ("described bad period", _described(period={"queried": PERIOD["queried"]}), "period.held",
     "needs `held`"),
    # absent
    ("empty what", _absent(what=""), "what", "is empty"),
    ("blank what", _absent(what="  "), "what", "is empty"),
    ("what not str", _absent(what=None), "what", "not NoneType"),
    ("empty checked", _absent(checked=[]), "checked", "null with extra steps"),
    ("all lists empty", _absent(checked=(), not_checked=["a"]), "checked",
     "null with extra steps"),
    ("checked a string", _absent(checked="the live database"), "checked", "pass a list"),
    ("absent camel kw", _absent(notChecked=["b"]), "notChecked", "did you mean not_checked?"),
    ("absent tryInstead", _absent(tryInstead="x"), "tryInstead", "did you mean try_instead?"),
    ("absent misspelled kw", _absent(cannot_covr=[]), "cannot_covr",
     "did you mean cannot_cover?"),
    ("absent in_progress", _absent(in_progress=["b"]), "in_progress", "a retry returns the same"),
    ("absent in_progress empty", _absent(in_progress=[]), "in_progress", "coverage(value"),
    ("absent inProgress", _absent(inProgress=["b"]), "inProgress", "still running"),
    ("empty try_instead", _absent(try_instead=""), "try_instead", "is empty"),
    ("try_instead a list", _absent(try_instead=["a", "b"]), "try_instead", "not list"),
    ("try_instead_tool list", _absent(try_instead_tool=[{"tool": "a"}]), "try_instead_tool",
     "names one tool"),
    ("try_instead_tool str", _absent(try_instead_tool="a"), "try_instead_tool", "not str"),
    ("try_instead_tool key", _absent(try_instead_tool={"tool": "a", "reason": "b"}),
     "try_instead_tool.reason", "the keys read here are: tool, why"),
    ("try_instead_tool name", _absent(try_instead_tool={"tool": "flogi history"}),
     "try_instead_tool.tool", "letters, digits"),
    ("try_instead_tool no tool", _absent(try_instead_tool={"why": "x"}),
     "try_instead_tool.tool", "needs `tool`"),
    ("try_instead_tool why", _absent(try_instead_tool={"tool": "a", "why": ""}),
     "try_instead_tool.why", "is empty"),
    ("absent naive provenance", _absent(provenance={"measured_at": "2026-08-19", "source": "s"}),
     "provenance.measured_at", "needs a zone"),
    ("absent bad period", _absent(period={"queried": {"from": "x", "to": "y"}, "held": "unknown"}),
     "period.queried.from", "not an ISO 8601"),
    # items
    ("why not str", _absent(checked=[{"what": "a", "why": 3}]), "checked[0].why", "not int"),
    ("why None", _absent(checked=[{"what": "a", "why": None}]), "checked[0].why", "NoneType"),
    ("why empty", _absent(checked=[{"what": "a", "why": ""}]), "checked[0].why", "is empty"),
    ("blank item", _absent(checked=["a", " "]), "checked[1]", "is empty"),
    ("blank what key", _absent(checked=[{"what": "\t"}]), "checked[0].what", "is empty"),
    ("no what", _absent(checked=[{"why": "x"}]), "checked[0].what", "needs `what`"),
    ("item an int", _absent(checked=[3]), "checked[0]", "string or a mapping"),
    ("item camel key", _absent(checked=[{"what": "a", "Why": "b"}]), "checked[0].Why",
     "did you mean why?"),
    ("kind on checked", _absent(checked=[{"what": "abc", "kind": "scope"}]), "checked[0].kind",
     "only taken on not_checked and cannot_cover"),
    ("kind unknown", _absent(not_checked=[{"what": "abc", "kind": "other"}]),
     "not_checked[0].kind", "'existence' or 'scope'"),
    ("count off in_progress", _absent(not_checked=[{"what": "abc", "count": 2}]),
     "not_checked[0].count", "only taken on in_progress"),
    ("cannot_cover without why", _absent(cannot_cover=["PPDM", {"what": "b", "why": "c"}]),
     "cannot_cover[0].why", "needs a `why`"),
    ("cannot_cover 2nd without why", _absent(cannot_cover=[{"what": "b", "why": "c"},
     {"what": "d"}]), "cannot_cover[1].why", "needs a `why`"),
    ("short newline", _absent(checked=["a", {"what": "abcdef", "short": "ab\ncd"}]),
     "checked[1].short", "one line of plain visible text"),
    ("short bidi", _absent(checked=[{"what": "abcdef", "short": "ab\u202ecd"}]),
     "checked[0].short", "U+202E"),
    ("short zero width", _absent(checked=[{"what": "abcdef", "short": "ab\u200bc"}]),
     "checked[0].short", "U+200B"),
    ("short line separator", _absent(checked=[{"what": "abcdef", "short": "ab\u2028c"}]),
     "checked[0].short", "U+2028"),
    ("short paragraph separator", _absent(checked=[{"what": "abcdef", "short": "a\u2029"}]),
     "checked[0].short", "U+2029"),
    ("short control before length", _absent(checked=[{"what": "w" * 200,
     "short": "\x07" + "s" * 100}]), "checked[0].short", "U+0007"),
    ("short too long", _absent(checked=[{"what": "w" * 200, "short": "s" * 81}]),
     "checked[0].short", "keep it to 80"),
    ("short longer than what", _absent(checked=[{"what": "abc", "short": "abcd"}]),
     "checked[0].short", "longer than `what`"),
    ("short empty", _absent(checked=[{"what": "abc", "short": ""}]), "checked[0].short",
     "is empty"),
    ("short not str", _absent(checked=[{"what": "abc", "short": 5}]), "checked[0].short",
     "must be a string"),
    # coverage
    ("ledger all empty", lambda: coverage("ok"), "checked", "declares no boundary"),
    ("ledger empty lists", lambda: coverage("ok", checked=[], not_checked=(), cannot_cover=[]),
     "checked", "declares no boundary"),
    ("in_progress without checked", lambda: coverage("ok", not_checked=["a"], in_progress=[]),
     "checked", "needs `checked` beside it"),
    ("count zero", _covered(in_progress=[{"what": "x", "count": 0}]), "in_progress[0].count",
     "positive whole number"),
    ("count bool", _covered(in_progress=[{"what": "x", "count": True}]),
     "in_progress[0].count", "positive whole number"),
    ("count float", _covered(in_progress=[{"what": "x", "count": 1.5}]),
     "in_progress[0].count", "positive whole number"),
    ("kind on in_progress", _covered(in_progress=[{"what": "xyz", "kind": "scope"}]),
     "in_progress[0].kind", "only taken on not_checked"),
    ("in_progress a string", _covered(in_progress="syncing"), "in_progress", "pass a list"),
    ("coverage camel kw", _covered(inProgress=["x"]), "inProgress", "did you mean in_progress?"),
    ("coverage unknown kw", _covered(results="x"), "results", "the keys read here are"),
    ("value not JSON", _covered(value=object()), "value", "JSON cannot carry"),
    ("value nan", _covered(value=float("nan")), "value", "JSON cannot carry"),
    ("value huge int", _covered(value=[2**64]), "value[0]", "beyond 64 bits"),
    ("value int key", _covered(value={1: "a"}), "value", "JSON keys are strings"),
    ("value a set", _covered(value={"a": {1, 2}}), "value.a", "set"),
    ("value wrapped", _covered(value=absent(**OK)), "value", "never wrap one in another"),
    ("coverage bad period", _covered(period={"queried": PERIOD["queried"], "held": "?"}),
     "period.held", "'unknown'"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("make", "field", "phrase"), [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS]
)
def test_refusal(make: Callable[[], Any], field: str, phrase: str) -> None:
    with pytest.raises(DeclarationRefused) as caught:
        make()
    refused = caught.value
    assert refused.field == field
    assert phrase in refused.message
    assert str(refused) == f"{refused.message} (field: {field})"
    assert not str(refused).startswith(("absent", "coverage", "described_result"))


def test_the_empty_facts_refusal_names_the_helper_meant() -> None:
    with pytest.raises(DeclarationRefused) as caught:
        described_result(facts=[])
    assert str(caught.value) == (
        "`facts` is empty — if nothing matched, return absent(what=..., checked=[...]) "
        "instead. (field: facts)"
    )
    assert caught.value.field == "facts"


def test_a_refusal_is_a_tool_error_and_a_value_error_and_pickles() -> None:
    with pytest.raises(DeclarationRefused) as caught:
        absent(what="x", checked=[])
    refused = caught.value
    assert isinstance(refused, ToolError) and isinstance(refused, ValueError)
    again = pickle.loads(pickle.dumps(refused))
    assert (str(again), again.field) == (str(refused), refused.field)


def test_a_long_bare_string_is_not_quoted_whole() -> None:
    with pytest.raises(DeclarationRefused) as caught:
        absent(what="x", checked="w" * 500)
    assert "w" * 50 not in str(caught.value)


# --- the exact wire -------------------------------------------------------------------------


def test_absent_wire_is_exact() -> None:
    result = absent(
        what="FLOGI entries on fc1/7",
        checked=["sw-01: the live fcns database", DISKS],
        not_checked=[ARRAY, "the archived FLOGI history"],
        cannot_cover=[HOSTS],
        try_instead="Ask for a wider window, or check the archived FLOGI history.",
        try_instead_tool={"tool": "flogi_history", "why": "it keeps the archive"},
        provenance=PROVENANCE,
        period=PERIOD,
    )
    expected = {
        "af_absent": True,
        "outcome": "nothing_found",
        "looked_for": "FLOGI entries on fc1/7",
        "checked": [{"what": "sw-01: the live fcns database"}, {"what": DISKS["what"]}],
        "not_checked": [
            {"what": ARRAY["what"], "why": "this tool places disks"},
            {"what": "the archived FLOGI history"},
        ],
        "cannot_cover": [{"what": HOSTS["what"], "why": "RVTools sees VMware only"}],
        "try_instead": "Ask for a wider window, or check the archived FLOGI history.",
        "try_instead_tool": {"tool": "flogi_history", "why": "it keeps the archive"},
        "provenance": {"measured_at": AT, "source": "Cohesity API export (4 clusters)"},
        "period": PERIOD,
        "retry_returns_the_same": True,
        "note": ABSENCE_NOTE,
    }
    assert isinstance(result, ToolAbsence)
    assert _dumps(result.wire()) == _dumps(expected)  # same keys, values and key order


def test_absent_wire_leaves_out_what_was_not_given() -> None:
    result = absent(what="backup runs for vm-99", checked=["every backup job"])
    assert _dumps(result.wire()) == _dumps(
        {
            "af_absent": True,
            "outcome": "nothing_found",
            "looked_for": "backup runs for vm-99",
            "checked": [{"what": "every backup job"}],
            "retry_returns_the_same": True,
            "note": ABSENCE_NOTE,
        }
    )


def test_coverage_wire_is_exact() -> None:
    result = coverage("vm-01: 2 of 2 backup runs succeeded", **GROUND)
    assert isinstance(result, CoveredResult)
    assert _dumps(result.wire()) == _dumps(
        {
            "af_coverage": {
                "checked": [{"what": "every backup job in the export of 2026-08-19T10:12:00Z"}],
                "cannot_cover": [{"what": "PPDM", "why": "not collected on this install"}],
                "note": COVERAGE_NOTE,
            },
            "result": "vm-01: 2 of 2 backup runs succeeded",
        }
    )


def test_coverage_wire_with_in_progress_and_period_is_exact() -> None:
    result = coverage(
        {"failed": 0, "settled": 94},
        checked=[{"what": "every replication session on array-7 (live query)",
                  "short": "every session on array-7"}],
        not_checked=[{"what": "NDM migration sessions", "why": "the API timed out — ask again"}],
        in_progress=[{"what": "sessions still synchronizing", "count": 2, "short": "syncing"}],
        period=PERIOD,
    )  # fmt: skip
    assert _dumps(result.wire()) == _dumps(
        {
            "af_coverage": {
                "checked": [{"what": "every replication session on array-7 (live query)"}],
                "not_checked": [
                    {"what": "NDM migration sessions", "why": "the API timed out — ask again"}
                ],
                "in_progress": [{"what": "sessions still synchronizing", "count": 2}],
                "period": PERIOD,
                "note": COVERAGE_NOTE + " " + IN_PROGRESS_CLAUSE,
            },
            "result": {"failed": 0, "settled": 94},
        }
    )
    assert IN_PROGRESS_WIRE in result.wire()[COVERAGE_MARKER]


def test_an_empty_in_progress_is_simply_left_out() -> None:
    plain = coverage("ok", checked=["a"])
    empty = coverage("ok", checked=["a"], in_progress=[])
    assert _dumps(empty.wire()) == _dumps(plain.wire())
    assert empty.wire()[COVERAGE_MARKER]["note"] == COVERAGE_NOTE
    assert empty.statement() == plain.statement()
    assert "in_progress" not in empty.statement()


def test_coverage_takes_any_json_value_and_copies_it() -> None:
    value: dict[str, Any] = {"rows": [1, 2.5, None, True, "x", {"deep": ("a", "b")}]}
    result = coverage(value, checked=["a"])
    value["rows"].append("later")
    assert result.wire()["result"] == {"rows": [1, 2.5, None, True, "x", {"deep": ["a", "b"]}]}
    assert coverage(None, checked=["a"]).wire()["result"] is None


def test_described_wire_is_exact() -> None:
    result = described_result(
        facts=[
            {"entity": "vm-01", "day": "2026-08-18", "ok": True},
            {"entity": "vm-01", "day": "2026-08-19", "ok": True},
        ],
        provenance=PROVENANCE,
        coverage={**GROUND, "not_checked": [ARRAY, "tape copies"]},
        grain={"is_counter": False, "unit": "run", "per": "day"},
        period=PERIOD,
    )
    assert isinstance(result, DescribedResult)
    assert _dumps(result.wire()) == _dumps(
        {
            "facts": [
                {"entity": "vm-01", "day": "2026-08-18", "ok": True},
                {"entity": "vm-01", "day": "2026-08-19", "ok": True},
            ],
            "provenance": {"measured_at": AT, "source": "Cohesity API export (4 clusters)"},
            "grain": {"is_counter": False, "unit": "run", "per": "day"},
            "period": PERIOD,
            "not_covered": [
                f"{ARRAY['what']} — this tool places disks",
                "tape copies",
                "PPDM — not collected on this install",
            ],
            "note": SEMANTICS_NOTE,
        }
    )


def test_described_wire_with_facts_only() -> None:
    result = described_result(facts=({"n": 1},))
    assert _dumps(result.wire()) == _dumps({"facts": [{"n": 1}], "note": SEMANTICS_NOTE})
    assert result.statement() is None


def test_wire_is_a_fresh_copy_each_time() -> None:
    for result in (absent(**OK, period=PERIOD), coverage({"a": [1]}, checked=["a"]),
                   described_result(facts=[{"a": [1]}], grain={"is_counter": True})):  # fmt: skip
        first = result.wire()
        orjson.dumps(first)  # JSON-able
        first.clear()
        assert result.wire() != {}
        assert result.wire() == result.wire()


# --- the statement --------------------------------------------------------------------------


def test_absent_statement_keeps_short_and_kind() -> None:
    result = absent(
        what="a VM disk attributed to the array asked",
        checked=[DISKS],
        not_checked=[ARRAY, HOSTS],
        try_instead="Ask which arrays exist.",
        try_instead_tool={"tool": "array_list"},
        provenance=PROVENANCE,
        period=PERIOD,
    )
    assert _dumps(result.statement()) == _dumps(
        {
            "source": "absent",
            "checked": [DISKS],
            "not_checked": [ARRAY, HOSTS],
            "cannot_cover": [],
            "period": PERIOD,
            "try_instead": "Ask which arrays exist.",
            "try_instead_tool": {"tool": "array_list"},
        }
    )


def test_coverage_statement() -> None:
    running = {"what": "sessions still synchronizing", "count": 96, "short": "syncing"}
    result = coverage(3, checked=["a", DISKS], cannot_cover=[HOSTS], in_progress=[running])
    assert result.statement() == {
        "source": "coverage",
        "checked": [{"what": "a"}, DISKS],
        "not_checked": [],
        "cannot_cover": [HOSTS],
        "in_progress": [running],
    }
    assert list(result.statement()) == [
        "source", "checked", "not_checked", "cannot_cover", "in_progress",
    ]  # fmt: skip


def test_described_statement() -> None:
    with_coverage = described_result(facts=FACT, coverage={"not_checked": [ARRAY]})
    assert with_coverage.statement() == {
        "source": "described",
        "checked": [],
        "not_checked": [ARRAY],
        "cannot_cover": [],
    }
    period_only = described_result(facts=FACT, period=PERIOD, provenance=PROVENANCE)
    assert period_only.statement() == {
        "source": "described",
        "checked": [],
        "not_checked": [],
        "cannot_cover": [],
        "period": PERIOD,
    }
    assert described_result(facts=FACT, provenance=PROVENANCE).statement() is None


def test_items_keep_only_the_keys_given_in_a_fixed_order() -> None:
    item = {"kind": "scope", "short": "hosts", "why": "no collector", "what": "ESX hosts"}
    result = absent(what="x", checked=["a"], not_checked=[item])
    recorded = result.statement()["not_checked"][0]
    assert list(recorded) == ["what", "why", "short", "kind"]
    assert record_item(recorded) == recorded and record_item(recorded) is not recorded
    assert served_item(recorded) == {"what": "ESX hosts", "why": "no collector"}


def test_short_and_kind_reach_the_record_but_never_the_wire() -> None:
    seen = {"what": "every VM disk in the export", "short": "SHORT-A"}
    gap = {"what": "whether the array exists", "why": "w", "short": "SHORT-B", "kind": "existence"}
    blind = {"what": "hosts that are not VMware", "why": "w", "short": "SHORT-C", "kind": "scope"}
    running = {"what": "sessions still syncing", "short": "SHORT-D"}
    ledger = {"checked": [seen], "not_checked": [gap], "cannot_cover": [blind]}
    results = [
        (absent(what="x", **ledger), "ABC"),
        (coverage("v", **ledger, in_progress=[running]), "ABCD"),
        (described_result(facts=FACT, coverage=ledger), "ABC"),
    ]
    for result, letters in results:
        record = _dumps(result.statement())
        wire = _dumps(result.wire())
        for letter in letters:
            assert f"SHORT-{letter}".encode() in record
            assert f"SHORT-{letter}".encode() not in wire
        assert b'"existence"' in record and b'"scope"' in record
        assert b'"short"' not in wire and b'"kind"' not in wire
        assert b'"existence"' not in wire and b'"scope"' not in wire


_MARK = "\u00a7\u00a7"  # a prefix no generated what, why or value can hold
_WORDS = st.text(alphabet="ABCDEFGH ", min_size=1, max_size=30).filter(str.strip)
_SHORTS = st.text(alphabet="abcdefgh", max_size=20).map(lambda s: _MARK + s)
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet="0123456789-+ ", max_size=10)
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(alphabet="0123456789", max_size=4), inner, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def _items(draw: st.DrawFn, kinds: bool, needs_why: bool = False) -> dict[str, Any]:
    short = draw(_SHORTS)
    item: dict[str, Any] = {"what": "W" * 24 + draw(_WORDS), "short": short}
    if needs_why or draw(st.booleans()):
        item["why"] = draw(_WORDS)
    if kinds:
        item["kind"] = draw(st.sampled_from(["existence", "scope"]))
    return item


@given(
    checked=st.lists(_items(kinds=False), min_size=1, max_size=3),
    not_checked=st.lists(_items(kinds=True), max_size=3),
    cannot_cover=st.lists(_items(kinds=True, needs_why=True), max_size=3),
    value=_VALUES,
)
def test_property_record_only_fields_are_never_served(
    checked: list[dict[str, Any]],
    not_checked: list[dict[str, Any]],
    cannot_cover: list[dict[str, Any]],
    value: Any,
) -> None:
    ledger = {"checked": checked, "not_checked": not_checked, "cannot_cover": cannot_cover}
    results = [
        absent(what="W", **ledger),
        coverage(value, **ledger, in_progress=[{"what": "W" * 24, "short": _MARK + "run"}]),
        described_result(facts=[{"v": value}], coverage=ledger),
    ]
    for result in results:
        wire = _dumps(result.wire())
        assert _MARK.encode() not in wire
        assert b'"short"' not in wire and b'"kind"' not in wire
        assert b'"existence"' not in wire and b'"scope"' not in wire
        declared = read_declared("prop_tool", result)
        assert declared is not None and _dumps(declared.served) == wire
        assert _MARK.encode() in _dumps(result.statement())


# --- read_declared --------------------------------------------------------------------------


def test_read_declared_on_the_three_results() -> None:
    gone = absent(**OK)
    assert read_declared("t", gone) == Declared("absent", gone.wire(), gone.statement())
    ledger = coverage([1], checked=["a"])
    assert read_declared("t", ledger) == Declared("success", ledger.wire(), ledger.statement())
    facts = described_result(facts=FACT)
    assert read_declared("t", facts) == Declared("success", facts.wire(), None)


def test_a_hand_built_absence_is_read_and_stripped() -> None:
    envelope = {
        ABSENCE_MARKER: True,
        "outcome": "nothing_found",
        "looked_for": "shares named finance",
        "checked": ["the filer's share list", DISKS],
        "not_checked": [ARRAY],
        "cannot_cover": [{"what": "the DR filer", "why": "not reachable", "short": None}],
        "try_instead": "Ask for one of the known shares.",
        "try_instead_tool": {"tool": "share_list", "why": "it lists them", "extra": 1},
        "period": PERIOD,
        "known_shares": ["fin-01", "fin-02"],
        "retry_returns_the_same": True,
        "note": "anything",
    }
    declared = read_declared(_tool(), envelope)
    assert declared is not None
    assert declared.status == "absent"
    assert declared.served == {
        **envelope,
        "checked": ["the filer's share list", {"what": DISKS["what"]}],
        "not_checked": [{"what": ARRAY["what"], "why": ARRAY["why"]}],
        "cannot_cover": [{"what": "the DR filer", "why": "not reachable"}],
    }
    assert declared.statement == {
        "source": "absent",
        "checked": [{"what": "the filer's share list"}, DISKS],
        "not_checked": [ARRAY],
        "cannot_cover": [{"what": "the DR filer", "why": "not reachable"}],
        "period": PERIOD,
        "try_instead": "Ask for one of the known shares.",
        "try_instead_tool": {"tool": "share_list", "why": "it lists them"},
    }
    declared.served["checked"].clear()
    assert envelope["checked"] == ["the filer's share list", DISKS]  # not aliased


def test_a_hand_built_ledger_is_read_and_stripped() -> None:
    running = {"what": "sessions syncing", "count": 4, "short": "syncing"}
    envelope = {
        COVERAGE_MARKER: {
            "checked": [DISKS],
            "cannot_cover": [HOSTS],
            "in_progress": [running],
            "period": PERIOD,
            "note": COVERAGE_NOTE,
        },
        "result": {"failed": 0},
    }
    declared = read_declared(_tool(), envelope)
    assert declared == Declared(
        "success",
        {
            COVERAGE_MARKER: {
                "checked": [{"what": DISKS["what"]}],
                "cannot_cover": [{"what": HOSTS["what"], "why": HOSTS["why"]}],
                "in_progress": [{"what": "sessions syncing", "count": 4}],
                "period": PERIOD,
                "note": COVERAGE_NOTE,
            },
            "result": {"failed": 0},
        },
        {
            "source": "coverage",
            "checked": [DISKS],
            "not_checked": [],
            "cannot_cover": [HOSTS],
            "in_progress": [running],
            "period": PERIOD,
        },
    )


def test_a_helper_result_and_its_wire_read_the_same() -> None:
    result = coverage("v", checked=["a"], not_checked=[{"what": "b", "why": "c"}])
    declared = read_declared(_tool(), result.wire())
    assert declared is not None and declared.served == result.wire()
    assert declared.statement == result.statement()


def test_a_bad_short_or_kind_in_a_hand_built_envelope_is_dropped_with_one_warning() -> None:
    tool = _tool()
    envelope = {
        ABSENCE_MARKER: True,
        "outcome": "nothing_found",
        "checked": [{"what": "abc", "short": "far longer than what it shortens"}],
        "not_checked": [{"what": "hosts", "kind": "population"}],
        "note": ABSENCE_NOTE,
    }
    with pytest.warns(TrackwayWarning, match=tool) as caught:
        declared = read_declared(tool, envelope)
    assert len(caught) == 1
    assert "checked[0].short" in str(caught[0].message)
    assert "not_checked[0].kind" in str(caught[0].message)
    assert declared is not None
    assert declared.statement is not None
    assert declared.statement["checked"] == [{"what": "abc"}]
    assert declared.statement["not_checked"] == [{"what": "hosts"}]
    assert declared.served["checked"] == [{"what": "abc"}]
    assert declared.served["not_checked"] == [{"what": "hosts"}]
    # the same tool again: no second warning (filterwarnings = error would raise)
    again = read_declared(tool, envelope)
    assert again == declared
    # another tool warns once for itself
    ledger = {COVERAGE_MARKER: {"checked": [{"what": "abc", "kind": "scope"}]}, "result": 1}
    other = _tool()
    with pytest.warns(TrackwayWarning, match="checked\\[0\\].kind"):
        read = read_declared(other, ledger)
    assert read is not None and read.statement is not None
    assert read.statement["checked"] == [{"what": "abc"}]
    assert read.served == {COVERAGE_MARKER: {"checked": [{"what": "abc"}]}, "result": 1}


def test_a_bad_period_in_a_hand_built_envelope_is_served_but_not_recorded() -> None:
    bad = {
        "queried": {"from": "2026-09-26T09:00:00", "to": "2026-09-26T10:00:00"},
        "held": "unknown",
    }
    envelope = {COVERAGE_MARKER: {"checked": ["a"], "period": bad}, "result": 1}
    with pytest.warns(TrackwayWarning, match="period"):
        declared = read_declared(_tool(), envelope)
    assert declared is not None and declared.statement is not None
    assert "period" not in declared.statement
    assert declared.served[COVERAGE_MARKER]["period"] == bad


def test_a_none_short_or_kind_is_not_declared_and_not_warned() -> None:
    envelope = {COVERAGE_MARKER: {"not_checked": [{"what": "b", "short": None, "kind": None}]},
                "result": 1}  # fmt: skip
    declared = read_declared(_tool(), envelope)
    assert declared is not None and declared.statement is not None
    assert declared.statement["not_checked"] == [{"what": "b"}]
    assert declared.served[COVERAGE_MARKER]["not_checked"] == [{"what": "b"}]


_ABSENT = {ABSENCE_MARKER: True, "outcome": "nothing_found", "checked": ["a"], "note": "n"}


@pytest.mark.parametrize(
    "value",
    [
        None,
        "nothing found",
        ["a"],
        orjson.dumps(_ABSENT).decode(),  # JSON text is not a recognized envelope
        {**_ABSENT, ABSENCE_MARKER: 1},
        {**_ABSENT, ABSENCE_MARKER: "true"},
        {**_ABSENT, "outcome": "empty"},
        {k: v for k, v in _ABSENT.items() if k != "outcome"},
        {**_ABSENT, "checked": []},  # an absence with no ground is plain data
        {k: v for k, v in _ABSENT.items() if k != "checked"},
        {**_ABSENT, "checked": "a"},
        {**_ABSENT, "checked": [3]},
        {**_ABSENT, "checked": [{"why": "x"}]},
        {**_ABSENT, "checked": [{"what": ""}]},
        {**_ABSENT, "checked": [{"what": "a", "why": 3}]},
        {**_ABSENT, "not_checked": "b"},
        {"data": _ABSENT},  # buried in a domain object
        {COVERAGE_MARKER: {"checked": ["a"]}, "result": 1, "extra": 2},
        {COVERAGE_MARKER: {"checked": ["a"]}},
        {COVERAGE_MARKER: ["a"], "result": 1},
        {COVERAGE_MARKER: {"checked": "a"}, "result": 1},
        {COVERAGE_MARKER: {"in_progress": [5]}, "result": 1},
        {"coverage": {"checked": ["a"]}, "result": 1},
    ],
)
def test_near_misses_are_plain_data(value: Any) -> None:
    assert read_declared(_tool(), value) is None
