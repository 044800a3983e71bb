"""Shared fixtures: small charts and a recorder that keeps every event."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


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
