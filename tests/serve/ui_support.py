"""What the live viewer's tests share: a real uvicorn server on a free port of 127.0.0.1 in a
thread, and a chart whose stages wait on gates the test opens (so a run is seen while it
runs) and which pauses on a question."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from trackway import Executor, flow_chart
from trackway.engine import FlowChart, RunResult, RunStore

GATES: dict[str, threading.Event] = {}
"""Gates by name: a ``gated`` run's stage ``step-N`` waits until ``GATES[f"{tag}-N"]`` is set."""


def gate(name: str) -> threading.Event:
    return GATES.setdefault(name, threading.Event())


def _step(n: int) -> Any:
    def stage(s: Any) -> None:
        tag = s["tag"]
        if not gate(f"{tag}-{n}").wait(30):
            raise TimeoutError(f"gate {tag}-{n} was never opened")
        s[f"step_{n}"] = f"done {n}"

    return stage


def _ask(s: Any) -> None:
    s.pause({"question": f"Ship order {s['tag']}?", "kind": "approval"})


def _take(s: Any, value: Any) -> None:
    s["answer"] = value


def gated_chart(steps: int = 3) -> FlowChart:
    """start → step-1 … step-N (each waits on its gate) → ask (pauses) → finish."""
    b = flow_chart("Start", lambda s: None, id="start")
    for n in range(1, steps + 1):
        b = b.then(f"Step {n}", _step(n), id=f"step-{n}")
    b = b.then("Ask", _ask, id="ask", on_resume=_take)
    return b.then("Finish", lambda s: None, id="finish").build(chart_id="gated")


@contextmanager
def running(chart: FlowChart, store: RunStore, tag: str) -> Iterator[dict[str, Any]]:
    """``chart`` run in a thread on ``store`` (input ``{"tag": tag}``); yields a dict that
    gets ``run_id`` once the run has begun, and ``result`` once it returns."""
    box: dict[str, Any] = {}
    executor = Executor(chart, store=store)

    def go() -> None:
        result: RunResult = executor.run_sync({"tag": tag}, run_id=f"run-{tag}")
        box["result"] = result

    box["run_id"] = f"run-{tag}"
    thread = threading.Thread(target=go, name=f"gated-{tag}", daemon=True)
    thread.start()
    try:
        yield box
    finally:
        for name in [g for g in GATES if g.startswith(f"{tag}-")]:
            GATES[name].set()  # never leave the run waiting
        thread.join(30)


def wait_for(check: Any, timeout: float = 15.0, what: str = "a condition") -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        found = check()
        if found:
            return found
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """``app`` under uvicorn on 127.0.0.1, a free port; yields its base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        wait_for(lambda: server.started, what="the server to start")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(15)
        sock.close()
