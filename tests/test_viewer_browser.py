"""The trace viewer in a real headless Chromium (Debian's ``chromium``, installed by
``.ci/run``), driven by Playwright: open the file, select a commit, read the state shown,
select a model call, read its hash. Screenshots go to ``test-artifacts/`` (or
``$TRACKWAY_TEST_ARTIFACTS``)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from trackway import Executor, flow_chart
from trackway._demo import demo_agent, demo_chart
from trackway.agent import save_recording, served_at
from trackway.cli import main
from trackway.recorders import jsonl

CHROMIUM = os.environ.get("TRACKWAY_TEST_CHROMIUM") or shutil.which("chromium")
ARTIFACTS = Path(
    os.environ.get("TRACKWAY_TEST_ARTIFACTS")
    or Path(__file__).resolve().parents[1] / "test-artifacts"
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (.ci/run installs it)"),
]


@contextmanager
def _chromium() -> Iterator[Any]:
    """Chromium under Playwright. Playwright's sync API runs an event loop in this thread
    while it is open, so each test makes its files first, then opens the browser."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        launched = pw.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        yield launched
        launched.close()


def _open(browser: Any, page_file: Path) -> tuple[Any, list[str], list[str]]:
    """A page with the file loaded; the errors it logs and any request beyond the file."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    errors: list[str] = []
    fetched: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("dialog", lambda dialog: (errors.append(f"dialog: {dialog.message}"), dialog.dismiss()))
    page.on(
        "request", lambda req: fetched.append(req.url) if req.url != page_file.as_uri() else None
    )
    page.goto(page_file.as_uri())
    page.wait_for_selector("body[data-ready=true]", timeout=20_000)
    return page, errors, fetched


def _shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name))
    assert (ARTIFACTS / name).stat().st_size > 10_000


def test_select_a_commit_and_read_the_state_it_left(tmp_path: Path) -> None:
    chart = demo_chart()
    rec = tmp_path / "loan.jsonl"
    result = Executor(chart, recorders=[jsonl(rec, chart=chart)]).run_sync(
        {"application": {"name": "Ada Lovelace", "amount": 18_000, "income": 64_000}}
    )
    assert main(["view", str(rec), "-o", str(tmp_path / "loan.html")]) == 0
    with _chromium() as browser:
        page, errors, fetched = _open(browser, tmp_path / "loan.html")
        decided = next(c for c in result.snapshot.history() if c.keys_written == ("decision",))
        page.click(f'#timeline-rows .row[data-seq="{decided.seq}"]')
        assert page.text_content("#commit-title") == f"Commit {decided.seq}: Approve"
        row = page.locator('#state .kv[data-key="decision"]')
        assert row.get_attribute("data-change") == "added"
        assert row.locator(".value").first.text_content() == '"approved"'
        assert page.locator('#state .kv[data-key="amount"]').get_attribute("data-change") == "same"
        # the chart: the commit's node is marked; a click on a node selects its commit
        assert "current" in (page.get_attribute('g[data-node="n_approve"]', "class") or "")
        page.click('g[data-node="n_route"]')
        assert page.text_content("#commit-title") == "Commit 6: Route"
        # the narrative is there, and a line selects its commit
        page.click('#tabs button[data-tab="narrative"]')
        page.click("#narrative li >> nth=0")
        assert page.text_content("#commit-title") == "Commit 1: Intake"
        _shot(page, "viewer-loan.png")
        assert errors == [] and fetched == []


def test_select_a_model_call_and_read_its_hash(tmp_path: Path) -> None:
    agent = demo_agent()
    agent.run_sync("Weather in Paris?")
    rec = save_recording(agent, tmp_path / "agent.jsonl")
    assert main(["view", str(rec), "-o", str(tmp_path / "agent.html")]) == 0
    with _chromium() as browser:
        page, errors, fetched = _open(browser, tmp_path / "agent.html")
        page.click("#calls-tab")
        page.click('#call-list .call[data-k="2"]')
        facts = page.text_content("#call-facts") or ""
        assert served_at(rec, 2).hash in facts
        assert page.locator("#call-facts .badge.match").count() == 1
        roles = page.locator("#call-messages .msg .role").all_text_contents()
        assert roles[0] == "user" and roles[-1].startswith("tool")
        _shot(page, "viewer-agent-call.png")
        assert errors == [] and fetched == []


def test_a_hostile_value_is_shown_as_text(tmp_path: Path) -> None:
    hostile = '</script><img src=x onerror="alert(1)"><script>alert(2)</script>'
    chart = flow_chart("Write", lambda s: s.__setitem__("note", hostile), id="w").build()
    rec = tmp_path / "h.jsonl"
    Executor(chart, recorders=[jsonl(rec, chart=chart)]).run_sync()
    assert main(["view", str(rec), "-o", str(tmp_path / "h.html")]) == 0
    with _chromium() as browser:
        page, errors, fetched = _open(browser, tmp_path / "h.html")
        assert page.locator("img").count() == 0
        shown = page.locator('#state .kv[data-key="note"] .value').first.text_content()
        assert shown == '"' + hostile.replace('"', '\\"') + '"'
        assert errors == [] and fetched == []


def test_ten_thousand_commits_open_and_any_commit_can_be_read(tmp_path: Path) -> None:
    n = 10_000

    def step(scope: Any) -> None:
        scope["i"] = scope.get("i", 0) + 1
        scope.append("log", "x" * 100)
        if scope["i"] >= n:
            scope.break_()

    chart = flow_chart("Step", step, id="step").loop_to("step").build()
    rec = tmp_path / "long.jsonl"
    Executor(chart, recorders=[jsonl(rec, chart=chart)], max_iterations=n + 10).run_sync()
    assert main(["view", str(rec), "-o", str(tmp_path / "long.html")]) == 0
    with _chromium() as browser:
        page, errors, fetched = _open(browser, tmp_path / "long.html")
        assert page.text_content("#commit-count") == f"({n})"
        # the list is virtual: only the rows in view are in the page
        assert page.locator("#timeline-rows .row").count() < 200
        page.fill("#filter", "")
        page.evaluate("document.getElementById('timeline').scrollTop = 4999 * 22")
        page.wait_for_selector('#timeline-rows .row[data-seq="5000"]')
        page.click('#timeline-rows .row[data-seq="5000"]')
        assert page.text_content('#state .kv[data-key="i"] .value') == "5000"
        log = page.locator('#state .kv[data-key="log"] .value').first.text_content() or ""
        assert "more characters (show all)" in log  # cut, and saying so
        page.keyboard.press("ArrowDown")
        assert page.text_content('#state .kv[data-key="i"] .value') == "5001"
        _shot(page, "viewer-10000-commits.png")
        assert errors == [] and fetched == []
