"""The chat page of ``serve_agent`` in a real headless Chromium (Playwright), against a
real uvicorn server: a message is sent, a check-in approval is shown and approved, the
tool's progress shows while the tool still runs (it waits on a gate the test opens only
after seeing the progress on the page), then the answer."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def chat_page(base: str, errors: list[str]) -> Iterator[Any]:
    """A headless Chromium page on ``base`` as the user "t1/ann" (the kit's auth cookie);
    page errors and console errors go to ``errors``."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
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
            yield page
        finally:
            browser.close()


def test_the_page_chats_shows_progress_live_and_answers_an_approval(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    gate, reached = threading.Event(), threading.Event()
    app = serve_agent(weather_agent(store, check_in=True, gate=gate, reached=reached), auth=auth)
    errors: list[str] = []
    with served(app) as base, chat_page(base, errors) as page:
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
    assert errors == []


LLAMA = os.environ.get("TRACKWAY_TEST_LLAMA_URL")


@pytest.mark.real_llm
@pytest.mark.skipif(not LLAMA, reason="set TRACKWAY_TEST_LLAMA_URL (.ci/llama.sh start)")
def test_the_page_chats_with_the_real_model(tmp_path: Path) -> None:
    """The same page with llama.cpp's model behind the agent: the forced tool call's
    progress shows while the tool waits, then the answer the run stored."""
    import asyncio

    from trackway.agent import Agent, openai
    from trackway.tools import define_tool

    gate, reached = threading.Event(), threading.Event()

    async def weather(args: dict[str, Any], ctx: Any) -> str:
        ctx.progress({"message": "looking up the sky"})
        reached.set()
        for _ in range(1000):  # waits without blocking the server's loop
            if gate.is_set():
                return f"{args.get('city', 'Paris')}: sunny, 22 C"
            await asyncio.sleep(0.02)
        raise TimeoutError("the test never opened the gate")

    tool = define_tool(
        name="weather",
        description="The weather in a city.",
        input_schema={
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
        execute=weather,
    )
    store = store_at(tmp_path)
    agent = (
        Agent.create(
            provider=openai("smollm2", base_url=LLAMA, timeout=60.0),
            store=store,
            max_iterations=2,  # the tool runs at 1; asked again at 2, a wrap-up answers
            max_tokens=40,
            temperature=0.0,
            tool_choice="weather",
        )
        .system("You answer weather questions with the weather tool.")
        .tool(tool)
        .build()
    )
    errors: list[str] = []
    with served(serve_agent(agent, auth=auth)) as base, chat_page(base, errors) as page:
        page.goto(base + "/")
        page.fill("#message", "What is the weather in Paris?")
        page.click("button[type=submit]")
        page.wait_for_selector("#status:has-text('looking up the sky')", timeout=60_000)
        assert reached.is_set() and not gate.is_set()  # shown while the tool waits
        gate.set()
        page.wait_for_selector(".bubble.agent[data-final=true]", timeout=90_000)
        shown = page.text_content(".bubble.agent[data-final=true]")
    (run,) = store.list_runs()
    assert store.load(run.run_id).state["final_answer"] == shown
    assert errors == []
