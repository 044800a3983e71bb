"""What the ``trackway`` command prints, and how it fails.

Every value that comes from a store or a recording passes through :func:`safe` before it
reaches the terminal: control characters and bidirectional overrides are escaped (``\\x1b``
shows as ``\\\\x1b``), so a stored value can never drive the terminal. Rich renders tables and
colour, off by itself when the output is not a terminal (or under ``NO_COLOR``); stored text
is never read as Rich markup.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any, TextIO, TypeVar

import orjson
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table
from rich.text import Text

__all__ = [
    "EXIT_MISMATCH",
    "EXIT_OK",
    "EXIT_UNREADABLE",
    "EXIT_USAGE",
    "CommandFailed",
    "Out",
    "safe",
    "when",
]

EXIT_OK = 0
EXIT_UNREADABLE = 1
EXIT_USAGE = 2
EXIT_MISMATCH = 3

# C0 and C1 controls (ESC, BEL, CR, ...) and the bidirectional overrides that reorder text
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

T = TypeVar("T")


class CommandFailed(Exception):
    """A command that cannot go on: the message names the file or run and what to do."""

    def __init__(self, message: str, code: int = EXIT_UNREADABLE) -> None:
        super().__init__(message)
        self.code = code


def _escape(match: re.Match[str]) -> str:
    return match.group().encode("unicode_escape").decode("ascii")


def safe(value: object, *, one_line: bool = True) -> str:
    """A value from a store or a recording, safe to print (on one line by default)."""
    text = _CONTROL.sub(_escape, str(value))
    return text.replace("\n", "\\n").replace("\t", "\\t") if one_line else text


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


def _console(stream: TextIO, color: bool | None) -> Console:
    """Colour on a terminal (unless ``NO_COLOR``), or as ``color`` forces; on a pipe or a
    file no colour and no width limit, so tables are never cut and lines never wrapped."""
    console = Console(
        file=stream,
        force_terminal=color,
        no_color=True if color is False else None,
        highlight=False,
        soft_wrap=True,
    )
    if not console.is_terminal:
        console.width = 1_000
    return console


class Out:
    """The command's two streams: results on stdout, messages and progress on stderr."""

    def __init__(self, color: bool | None = None) -> None:
        self.console = _console(sys.stdout, color)
        self.errors = _console(sys.stderr, color)

    def line(self, text: str = "", style: str | None = None) -> None:
        """One line of text (control characters escaped, newlines kept)."""
        self.console.print(Text(safe(text, one_line=False), style=style or ""))

    def error(self, text: str) -> None:
        self.errors.print(Text(safe(text, one_line=False), style="red"))

    def json(self, value: Any) -> None:
        """``value`` as indented JSON; controls inside strings are written as ``\\uXXXX``."""
        text = orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
        self.console.print(Text(_CONTROL.sub(_json_escape, text)))

    def table(self, columns: Iterable[tuple[str, str]], rows: Iterable[Iterable[object]]) -> None:
        """A table; ``columns`` are ``(header, justify)``; every cell is escaped."""
        table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
        for header, justify in columns:
            table.add_column(header, justify=justify, no_wrap=True)  # type: ignore[arg-type]
        for row in rows:
            table.add_row(*(Text(safe(cell)) for cell in row))
        self.console.print(table)

    def progress(self, items: list[T], what: str) -> Iterator[T]:
        """Iterate ``items`` with a progress bar on stderr (shown on a terminal only)."""
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            console=self.errors,
            transient=True,
            disable=not self.errors.is_terminal,
        ) as bar:
            task = bar.add_task(what, total=len(items))
            for item in items:
                yield item
                bar.advance(task)
