"""A stream of the code's output read with a cap: its start and its end kept, the middle
counted and dropped, never buffered whole; a cut never splits a UTF-8 character."""

from __future__ import annotations

import os
import selectors
import time
from dataclasses import dataclass, field

__all__ = ["CHUNK", "Capture", "drain"]

CHUNK = 65536
"""Bytes read from a pipe at a time."""


@dataclass
class Capture:
    """One stream read with a cap: the first half of ``limit`` bytes and a rolling last
    half are kept (a traceback's last line, a summary printed at the end), the middle is
    counted and dropped."""

    limit: int
    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    total: int = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.limit // 2 - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            keep = self.limit - self.limit // 2
            self.tail += chunk[-keep:]
            del self.tail[:-keep]

    @property
    def cut(self) -> int:
        return self.total - len(self.head) - len(self.tail)

    def text(self) -> str:
        if not self.cut:
            return (self.head + self.tail).decode("utf-8", "replace")
        head, tail = _whole_end(bytes(self.head)), _whole_start(bytes(self.tail))
        cut = self.total - len(head) - len(tail)  # a character split by the cut is cut
        return (
            f"{head.decode('utf-8', 'replace')}\n[… {cut} of {self.total} bytes cut …]\n"
            f"{tail.decode('utf-8', 'replace')}"
        )


def _whole_start(data: bytes) -> bytes:
    """``data`` without the UTF-8 continuation bytes a cut left at its start."""
    skip = 0
    while skip < min(3, len(data)) and data[skip] & 0xC0 == 0x80:
        skip += 1
    return data[skip:]


def _whole_end(data: bytes) -> bytes:
    """``data`` without a UTF-8 character a cut left incomplete at its end."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # the lead (or ASCII) byte of the last character
            need = 1 if byte < 0x80 else 2 if byte >> 5 == 0b110 else 3 if byte >> 4 == 14 else 4
            return data if need <= back else data[:-back]
    return data


def drain(
    sel: selectors.BaseSelector,
    streams: dict[int, Capture],
    control: int,
    ceiling: int,
    wait: float = 0.0,
) -> None:
    """Read what is already written to the streams (up to ``ceiling`` bytes in all)."""
    if control >= 0:
        sel.unregister(control)
    end = time.monotonic() + wait
    while sel.get_map():
        ready = sel.select(max(0.0, end - time.monotonic()) if wait else 0)
        if not ready:
            return
        for key, _ in ready:
            fd = int(key.fd)
            chunk = os.read(fd, CHUNK)
            if not chunk:
                sel.unregister(fd)
            else:
                streams[fd].add(chunk)
        if sum(c.total for c in streams.values()) > ceiling:
            return
