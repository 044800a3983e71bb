"""Shared fixtures: small charts and a recorder that keeps every event."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from hypothesis import settings

from tests.examples import FULL_EXAMPLES
from tests.services import Services, others, start_postgres

# property tests that name no count of their own draw hypothesis's default (100) in full
settings.register_profile("quick", max_examples=25)
settings.load_profile("default" if FULL_EXAMPLES else "quick")


class EventLog:
    """A recorder that appends (hook, event) for every hook (a test double)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("on_"):
            raise AttributeError(name)
        return lambda event: self.events.append((name, event))

    def hooks(self) -> list[str]:
        return [h for h, _ in self.events]


@pytest.fixture
def event_log() -> EventLog:
    return EventLog()


@pytest.fixture
def schema_host() -> Iterator[tuple[str, list[str]]]:
    """A real HTTP server on 127.0.0.1 that serves a valid schema and records every request,
    so a test can tell whether a remote ``$ref`` was fetched."""
    requested: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            requested.append(self.path)
            body = b'{"type": "integer"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/schema+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/schemas/x.json", requested
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


# -- the session's services and what it reports ---------------------------------------------

_SERVICES = Services()

NEEDS_POSTGRES = (
    "*/engine/stores/_postgres.py",
    "*/engine/stores/queue/*.py",
    "*/engine/scale/_worker*.py",
    "*/agent/runtime/_worker_target.py",
    "*/trackway/_cli_worker.py",
)
"""Modules only PostgreSQL exercises: without it, the coverage floor is measured without
them, and the summary says so."""


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: the controller started them
        return
    _SERVICES.found.append(start_postgres())
    _SERVICES.found.extend(others())


def pytest_unconfigure(config: pytest.Config) -> None:
    _SERVICES.stop_all()


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Without PostgreSQL, leave the modules only it exercises out of the coverage report
    (and so out of the floor), saying so in the summary: the floor holds for what ran."""
    if not _SERVICES.missing("PostgreSQL"):
        return
    plugin = session.config.pluginmanager.getplugin("_cov")
    controller = getattr(plugin, "cov_controller", None)
    # (under xdist, the report is made by the coverage object that combines the workers')
    for name in ("cov", "combining_cov"):
        cov = getattr(controller, name, None)
        if cov is not None:
            omit = list(cov.get_option("report:omit") or [])
            cov.set_option("report:omit", [*omit, *NEEDS_POSTGRES])


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _SERVICES.found:
        return
    write = terminalreporter.write_line
    terminalreporter.section("services")
    for service in _SERVICES.found:
        write(f"{service.name}: {service.how}")
    if _SERVICES.missing("PostgreSQL"):
        write(
            "coverage: the floor is measured without "
            + ", ".join(p.removeprefix("*/") for p in NEEDS_POSTGRES)
            + " (only PostgreSQL exercises them)"
        )
    write(
        "property tests: "
        + (
            "full example counts"
            if FULL_EXAMPLES
            else "a quarter of their example counts (make test-full, and CI, run them in full)"
        )
    )
