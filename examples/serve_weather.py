"""The weather agent (``examples/weather_agent.py``) behind ``serve_agent``: a chat page
and its JSON and SSE routes, on this machine only.

Run it: ``python examples/serve_weather.py [DIR]``. It keeps the runs in ``DIR/runs.db``
(a temporary directory without ``DIR``), serves on 127.0.0.1 on a free port, prints the URL
and opens it in your browser; Ctrl-C stops it. Every request from this machine is one local
user (``loopback_auth()``); a server others reach needs your own auth hook.
``--once`` starts it, has one conversation over HTTP as a browser would, prints it and stops.
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
import webbrowser
from pathlib import Path

import httpx2
import uvicorn

sys.path.insert(0, str(Path(__file__).resolve().parent))

from weather_agent import CONVERT, QUESTION, SYSTEM, WEATHER, offline_model

from trackway import Agent, mock
from trackway.engine import SqliteStore
from trackway.serve import loopback_auth, serve_agent


def build_app(db: Path) -> object:
    store = SqliteStore(db)
    agent = (
        Agent.create(
            provider=mock(respond=offline_model), model="offline", max_iterations=5, store=store
        )
        .system(SYSTEM)
        .tools([WEATHER, CONVERT])
        .build()
    )
    return serve_agent(agent, auth=loopback_auth())


def main(argv: list[str]) -> int:
    once = "--once" in argv
    rest = [a for a in argv if a != "--once"]
    if not rest:
        with tempfile.TemporaryDirectory() as tmp:
            return main([*argv, tmp])
    app = build_app(Path(rest[0]) / "runs.db")
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    url = f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}/"
    print(f"Open {url}")
    try:
        if once:
            return _one_conversation(url)
        webbrowser.open(url)
        while thread.is_alive():
            thread.join(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        server.should_exit = True
        thread.join(10)
    return 0


def _one_conversation(url: str) -> int:
    """What the page does: post the question, read the events, read the answer."""
    with httpx2.Client(base_url=url, timeout=20) as http:
        started = http.post("api/conversations", json={"message": QUESTION}).json()
        names = []
        with http.stream("GET", f"api/runs/{started['run_id']}/events") as response:
            for line in response.iter_lines():
                if line.startswith("event: "):
                    names.append(line[len("event: ") :])
        run = http.get(f"api/runs/{started['run_id']}").json()
    print(f"Question: {QUESTION}")
    print(f"Tools run: {names.count('stream.tool_end')}; stream ended: {names[-1]}")
    print(f"Answer: {run['answer']}")
    return 0 if run["status"] == "done" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
