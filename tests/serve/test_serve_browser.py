"""The chat page of ``serve_agent`` in a real headless Chromium (Playwright), against a
real uvicorn server: a message is sent, a check-in approval is shown and approved, the
tool's progress shows while the tool still runs (it waits on a gate the test opens only
after seeing the progress on the page), then the answer."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.serve.serving_kit import SECRET, auth, served, store_at, weather_agent
from trackway.serve import serve_agent

CHROMIUM = os.environ.get("TRACKWAY_TEST_CHROMIUM") or shutil.which("chromium")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (.ci/run installs it)"),
]


def test_the_page_chats_shows_progress_live_and_answers_an_approval(tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    store = store_at(tmp_path)
    gate, reached = threading.Event(), threading.Event()
    app = serve_agent(weather_agent(store, check_in=True, gate=gate, reached=reached), auth=auth)
    errors: list[str] = []
    with served(app) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        try:
            context = browser.new_context()
            context.add_cookies([{"name": "test_user", "value": "t1/ann", "url": base}])
            page: Any = context.new_page()
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(base + "/")
            page.fill("#message", "Weather in Oslo?")
            page.click("button[type=submit]")
            page.wait_for_selector("#question:not([hidden])", timeout=15_000)
            assert "May I call weather" in (page.text_content("#question-text") or "")
            page.click("#approve")
            page.wait_for_selector("#status:has-text('looking up Oslo')", timeout=15_000)
            assert reached.is_set() and not gate.is_set()  # shown while the tool waits
            gate.set()
            page.wait_for_selector(".bubble.agent[data-final=true]", timeout=15_000)
            assert page.text_content(".bubble.agent[data-final=true]") == "It is sunny in Oslo."
            assert page.text_content(".bubble.user") == "Weather in Oslo?"
            assert SECRET not in page.content()
        finally:
            browser.close()
    assert errors == []
