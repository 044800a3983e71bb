"""A real HTTP server on 127.0.0.1 for a test: the handler base and the serving loop the
provider and gateway tests share (each test says only what its server answers)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Handler", "base_url", "serving"]


class Handler(BaseHTTPRequestHandler):
    """A quiet handler with one way to answer."""

    def answer(self, status: int, data: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:  # quiet
        return


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[ThreadingHTTPServer]:
    """``handler`` served on 127.0.0.1 and a free port until the block ends."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def base_url(httpd: ThreadingHTTPServer, path: str = "/v1") -> str:
    return f"http://127.0.0.1:{httpd.server_address[1]}{path}"
