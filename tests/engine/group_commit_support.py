"""Shared by the group-commit tests: spied real stores (SQLite file, PostgreSQL schema), an
injected store fault, the charts, and running many runs at once on one executor."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from tests.pg import pg_schema
from trackway import Commit, Executor, FlowChart, PostgresStore, RunResult, SqliteStore, flow_chart
from trackway.engine import RunStore
from trackway.engine.stores._group_commit import GroupWrite

MARKER = "BOOM-MARKER"  # a commit holding this value trips the injected store fault


# -- stores ---------------------------------------------------------------------------------


class Spy:
    """Mixed into a real store: keeps the runs of every group transaction and its outcome
    (the runs it reported failed, or the exception that rolled it back), what each group
    held (``parts``: the runs it opened and ended, with how), and the runs opened and ended
    on their own (``alone``)."""

    groups: list[tuple[list[str], Any]]
    parts: list[tuple[list[str], list[tuple[str, str]]]]
    alone: list[tuple[str, str]]

    def append_group(self, items: Sequence[tuple[str, Sequence[Commit]]]) -> dict[str, Exception]:
        return self._spied([run_id for run_id, _ in items], super().append_group, items)  # type: ignore[misc]

    def write_group(self, items: Sequence[GroupWrite]) -> dict[str, Exception]:
        if all(i.opening is None and i.closing is None for i in items):
            return super().write_group(items)  # type: ignore[misc,no-any-return] # its append_group is spied
        self.parts.append(
            (
                [i.run_id for i in items if i.opening is not None],
                [(i.run_id, i.closing.status) for i in items if i.closing is not None],
            )
        )
        return self._spied([i.run_id for i in items], super().write_group, items)  # type: ignore[misc]

    def begin_run(self, run_id: str, *args: Any, **kwargs: Any) -> None:
        self.alone.append((run_id, "open"))
        super().begin_run(run_id, *args, **kwargs)  # type: ignore[misc]

    def finish_run(self, run_id: str, status: str, outcome: Any = None) -> None:
        self.alone.append((run_id, status))
        super().finish_run(run_id, status, outcome)  # type: ignore[misc]

    def _spied(self, ids: list[str], write: Any, items: Any) -> dict[str, Exception]:
        try:
            failed: dict[str, Exception] = write(items)
        except Exception as exc:
            self.groups.append((ids, exc))
            raise
        self.groups.append((ids, failed))
        return failed


class SpySqlite(Spy, SqliteStore):
    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.groups, self.parts, self.alone = [], [], []


class SpyPostgres(Spy, PostgresStore):
    def __init__(self, dsn: str) -> None:
        super().__init__(dsn)
        self.groups, self.parts, self.alone = [], [], []


@pytest.fixture(name="kind", params=["sqlite", "postgres"])
def kind_fixture(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(name="spy")
def spy_fixture(kind: str, tmp_path: Path) -> Iterator[Any]:
    """A spied SQLite file or PostgreSQL schema."""
    if kind == "sqlite":
        store: Any = SpySqlite(tmp_path / "runs.db")
        yield store
        store.close()
        return
    with pg_schema("gc") as dsn:
        store = SpyPostgres(dsn)
        store.dsn = dsn
        yield store
        store.close()


def inject_fault(store: Any) -> None:
    """A real store fault: inserting a commit that holds MARKER aborts the statement (and so
    the whole group transaction), in SQLite and PostgreSQL alike."""
    if isinstance(store, SqliteStore):
        with closing(sqlite3.connect(store.path)) as db:
            db.execute(
                "CREATE TRIGGER boom BEFORE INSERT ON trackway_commits "
                f"WHEN instr(NEW.doc, '{MARKER}') > 0 "
                "BEGIN SELECT RAISE(ABORT, 'injected fault'); END"
            )
            db.commit()
        return
    import psycopg

    with psycopg.connect(store.dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE FUNCTION boom() RETURNS trigger AS $$ BEGIN "
            f"IF position('{MARKER}'::bytea in NEW.doc) > 0 THEN "
            "RAISE EXCEPTION 'injected fault'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql"
        )
        conn.execute(
            "CREATE TRIGGER boom BEFORE INSERT ON trackway_commits "
            "FOR EACH ROW EXECUTE FUNCTION boom()"
        )


def seqs(store: RunStore, run_id: str) -> list[int]:
    return [m.seq for m in store.history(run_id)]


def shape(commits: Sequence[Commit]) -> list[tuple[Any, ...]]:
    """A log without its run id and clock times: what must not depend on concurrency."""
    fields = ("seq", "stage_path", "stage_id", "kind", "frame", "writes", "reads", "outcome")
    fields += ("error", "detail", "events", "attempts")
    return [tuple(getattr(c, f) for f in fields) for c in commits]


# -- charts ---------------------------------------------------------------------------------


def rich_chart() -> FlowChart:
    """Every kind of commit: stages, a fork's merge, a decision, a for-each merge, an
    isolated subflow's input and output, then a pause, a failure or a counting loop."""

    async def start(s: Any) -> None:
        await anyio.lowlevel.checkpoint()
        s["n"] = s["k"] * 10
        s["items"] = [s["k"], s["k"] + 1, s["k"] + 2]

    def branch(key: str) -> Any:
        async def run(s: Any) -> None:
            await anyio.lowlevel.checkpoint()
            s[key] = s["n"] + 1

        return run

    def route(s: Any) -> str:
        return "even" if s["k"] % 2 == 0 else "odd"

    def double(s: Any) -> None:
        s["result"] = s["item"] * 2

    def inner(s: Any) -> None:
        s["total"] = s["base"] + 1

    def ask(s: Any) -> None:
        mode = s["k"] % 4
        if mode == 1:
            s.pause({"question": s["k"]})
        if mode == 2:
            raise ValueError(f"run {s['k']} refuses")
        s["asked"] = True

    def answer(s: Any, value: Any) -> None:
        s["answer"] = value

    def count(s: Any) -> None:
        s["c"] = s.get("c", 0) + 1
        if s["c"] == 4:
            s.break_("counted")

    sub = flow_chart("Inner", inner, id="inner").build()
    body = flow_chart("Double", double, id="double").build()
    return (
        flow_chart("Start", start, id="start")
        .fork("Fan", {"x": branch("x"), "y": branch("y")}, id="fan")
        .decider("Route", route, id="route")
        .branch("even", "Even", lambda s: s.__setitem__("parity", 0), id="even")
        .branch("odd", "Odd", lambda s: s.__setitem__("parity", 1), id="odd")
        .end()
        .parallel_for_each(
            "Each", items="items", branch=body, into="out", max_branches=3, id="each"
        )
        .subflow("Sub", sub, id="sub", input={"base": "n"}, output={"total": "total"})
        .then("Ask", ask, id="ask", on_resume=answer)
        .then("Count", count, id="count")
        .loop_to("count")
        .build()
    )


def counting_chart(
    stages: int,
    acked: dict[int, int],
    victim: int = -1,
    at: int = -1,
    late: int = 1 << 30,
    until: Any = None,
) -> FlowChart:
    """A loop of ``stages`` stages; each records, as it starts, that the commit before it
    was acknowledged. Run ``victim``'s stage ``at`` writes MARKER; runs from ``late`` on
    hold their first stage until ``until()`` is true (polled; at most 30 s)."""

    async def hold() -> None:
        deadline = time.monotonic() + 30
        while not until() and time.monotonic() < deadline:  # noqa: ASYNC110 (set by the writer thread)
            await anyio.sleep(0.002)

    async def step(s: Any) -> None:
        i = s["i"]
        if i:
            acked[s["k"]] = i
        if i == 0 and s["k"] >= late:
            await hold()
        else:
            await anyio.lowlevel.checkpoint()
        if s["k"] == victim and i + 1 == at:
            s["mark"] = MARKER
        s["i"] = i + 1
        if i + 1 == stages:
            s.break_("counted")

    return flow_chart("Step", step, id="step").loop_to("step").build()


async def run_all(executor: Executor, inputs: Sequence[dict[str, Any]]) -> list[RunResult]:
    results: list[RunResult | None] = [None] * len(inputs)

    async def one(i: int) -> None:
        results[i] = await executor.run(inputs[i], raise_on_error=False)

    async with anyio.create_task_group() as tasks:
        for i in range(len(inputs)):
            tasks.start_soon(one, i)
    return [r for r in results if r is not None]


def inputs_of(n: int) -> list[dict[str, Any]]:
    return [{"k": k, "i": 0} for k in range(n)]
