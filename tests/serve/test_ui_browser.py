"""The live viewer in a real headless Chromium under Playwright: the runs list filters, a
run's page shows its commits arriving while the run runs (its stages wait on gates the test
opens), and a paused run's question is answered from the page, after which the run resumes
(in the ui's process: its chart is given) and the page shows it done. On SQLite, and on
PostgreSQL when ``TRACKWAY_TEST_PG_DSN`` is set."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.pg import pg_schema
from trackway import Executor, PostgresStore, SqliteStore
from trackway._demo import demo_chart
from trackway.serve.ui import ui_app

from .ui_support import gate, gated_chart, running, serving, wait_for

CHROMIUM = os.environ.get("TRACKWAY_TEST_CHROMIUM") or shutil.which("chromium")
DEMO_INPUT = {"application": {"name": "Ada", "amount": 18_000, "income": 64_000}}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (.ci/run installs it)"),
]


@contextmanager
def _page() -> Iterator[tuple[Any, list[str]]]:
    """A Chromium page (and the errors it logs) under Playwright."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"],
        )  # fmt: skip
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        try:
            yield page, errors
        finally:
            browser.close()


def test_the_runs_list_filters(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    store = SqliteStore(db)
    Executor(demo_chart(), store=store).run_sync(DEMO_INPUT, run_id="loan-1")
    Executor(demo_chart(), store=store).run_sync(DEMO_INPUT, run_id="loan-2")
    Executor(gated_chart(0), store=store).run_sync({"tag": "p"}, run_id="order-7")
    store.close()
    with serving(ui_app(db)) as base, _page() as (page, errors):
        page.goto(f"{base}/")
        page.wait_for_selector("body[data-ready=true]")
        rows = page.locator("#runs tbody tr")
        assert rows.count() == 3

        def only(run_id: str) -> None:  # the table shows that run alone
            page.wait_for_selector(f"body[data-runs='{run_id}']")
            assert rows.count() == 1 and rows.first.get_attribute("data-run") == run_id

        page.select_option("#f-status", "paused")
        only("order-7")
        page.select_option("#f-status", "")
        page.fill("#f-q", "loan-2")
        only("loan-2")
        assert "q=loan-2" in page.url  # the filters are in the address, to share or reload
        page.fill("#f-q", "")
        page.select_option("#f-chart", "gated")
        only("order-7")
        rows.first.locator("a").click()
        page.wait_for_selector("body[data-status=paused]")
        assert page.locator("#question-text").text_content() == "Ship order p?"
        assert errors == []


def _live_run(store: Any, where: Any, tag: str) -> None:
    chart = gated_chart(2)
    with running(chart, store, tag) as box:
        run_id = box["run_id"]
        wait_for(lambda: any(r.run_id == run_id for r in store.list_runs()), what="the run")
        wait_for(lambda: len(store.history(run_id)) == 1, what="its first commit")
        with serving(ui_app(where, charts=[chart], poll=0.05)) as base, _page() as (page, errors):
            page.goto(f"{base}/runs/{run_id}")
            page.wait_for_selector("body[data-ready=true][data-status=running]")
            assert page.get_attribute("body", "data-commits") == "1"
            gate(f"{tag}-1").set()  # the run moves on while the page is open
            page.wait_for_selector("body[data-commits='2']")
            assert page.locator("#commit-title").text_content() == "Commit 2: Step 1"
            assert page.locator("#timeline-rows .row").count() == 2
            assert "ran" in (page.get_attribute("g[data-node=n_step_1]", "class") or "")
            gate(f"{tag}-2").set()
            page.wait_for_selector("body[data-status=paused]")
            assert page.get_attribute("body", "data-commits") == "4"
            assert page.locator("#question-text").text_content() == f"Ship order {tag}?"
            page.fill("#answer-value", '"ship it"')
            page.click("#answer-send")
            page.wait_for_selector("body[data-answered=true]")
            page.wait_for_selector("body[data-status=done]", timeout=20_000)
            assert page.locator("#question").is_hidden()
            assert page.get_attribute("body", "data-commits") == "6"
            state = page.locator("#state .kv[data-key=answer] .value").first.text_content()
            assert state == '"ship it"'
            assert errors == []
    assert store.load(run_id).state["answer"] == "ship it"


def test_a_run_s_commits_arrive_and_its_question_is_answered_from_the_page(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.db"
    store = SqliteStore(db)
    _live_run(store, db, "sq")
    store.close()


def test_the_same_on_postgresql() -> None:
    with pg_schema("ui") as dsn:
        store = PostgresStore(dsn)
        try:
            _live_run(store, dsn, "pg")
        finally:
            store.close()
