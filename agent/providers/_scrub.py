"""Scrubbing an API key out of text a message quotes: the key, its common encodings, and
the pieces of it a cut or a split left behind."""

from __future__ import annotations

import base64
import json
import re
import urllib.parse

import orjson

__all__ = ["KEY_PIECE", "MIN_SCRUBBED_KEY", "Scrubber"]

MIN_SCRUBBED_KEY = 6
"""A key shorter than this is not scrubbed (it would match ordinary words)."""
KEY_PIECE = 8
"""A run of this many characters of the key (or of one of its encoded forms) is scrubbed
even when the rest of the key is missing."""


_GAP = r"(?:\s|(?:\\[rnt]|%0[ad]|%09|%20|\+){1,4})?"
"""What may sit between two characters of an echoed key: a line break, raw (the text is on one
line by then, so any white space is one space), JSON-escaped or percent-encoded."""
_GAP_WIDTH = 12
_JSON_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "/": "\\/",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


def _alternatives(options: list[tuple[int, str]]) -> tuple[str, int]:
    """One regex of ``(width, pattern)`` options, the widest tried first, and its width."""
    options = sorted(options, key=lambda option: -option[0])
    return "(?:" + "|".join(pattern for _, pattern in options) + ")", options[0][0]


def _key_char(char: str) -> tuple[str, int]:
    """One character of the key as a server may echo it: as is, percent-encoded (either hex
    case; ``+`` for a space), or JSON-escaped (``\\uXXXX`` or the short escapes)."""
    utf8 = char.encode("utf-8", "surrogatepass")
    code = ord(char)
    units = (
        [code]
        if code < 0x10000
        else [0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)]
    )
    options = [
        (1, re.escape(char)),
        (3 * len(utf8), "".join(f"%{byte:02x}" for byte in utf8)),
        (6 * len(units), "".join(rf"\\u{unit:04x}" for unit in units)),
    ]
    if char in _JSON_ESCAPES:
        options.append((2, re.escape(_JSON_ESCAPES[char])))
    if char == " ":
        options.append((1, r"\+"))
    return _alternatives(options)


def _base64_char(char: str) -> tuple[str, int]:
    """One character of a base64 text: ``+`` and ``/`` also in their URL-safe and
    percent-encoded forms."""
    if char == "+":
        return _alternatives([(3, "%2b"), (1, r"\+"), (1, "-")])
    if char == "/":
        return _alternatives([(3, "%2f"), (2, r"\\/"), (1, "/"), (1, "_")])
    return re.escape(char), 1


def _base64_cores(secret: bytes) -> list[str]:
    """The base64 characters that depend on ``secret`` alone, at each of the three byte
    alignments it may have inside a longer encoded text (``Basic`` credentials, a token)."""
    cores: list[str] = []
    for pad in range(3):
        encoded = base64.b64encode(bytes(pad) + secret + bytes(3)).decode("ascii")
        core = encoded[-(-8 * pad // 6) : 8 * (pad + len(secret)) // 6]
        if len(core) >= MIN_SCRUBBED_KEY and core not in cores:
            cores.append(core)
    return cores


def _encoded_forms(key: str) -> set[str]:
    """The key as servers commonly write it back, each form a plain string."""
    quoted = [
        urllib.parse.quote(key),
        urllib.parse.quote(key, safe=""),
        urllib.parse.quote_plus(key),
    ]
    json_forms = [orjson.dumps(key).decode()[1:-1], json.dumps(key)[1:-1]]
    json_forms.append(json_forms[-1].replace("/", "\\/"))
    cores = _base64_cores(key.encode())
    url_safe = [core.replace("+", "-").replace("/", "_") for core in cores]
    return {key, *quoted, *json_forms, *cores, *url_safe}


class Scrubber:
    """Finds every echo of one API key in a text (see the module docstring for the forms).

    Two kinds of span are replaced: a whole echo of the key (in any of the forms, broken
    across line breaks or not), and any run of ``KEY_PIECE`` characters or more of one of
    the forms, which is what is left of a key that something else cut in two.
    """

    def __init__(self, key: str) -> None:
        forms = [[_key_char(char) for char in key]]
        forms += [[_base64_char(char) for char in core] for core in _base64_cores(key.encode())]
        self.pattern = re.compile(
            "|".join(_GAP.join(p for p, _ in form) for form in forms), re.IGNORECASE
        )
        self.pieces = {
            form[i : i + KEY_PIECE].lower()
            for form in _encoded_forms(key)
            for i in range(len(form) - KEY_PIECE + 1)
        }
        self.reach = KEY_PIECE + max(
            sum(width for _, width in form) + _GAP_WIDTH * (len(form) - 1) for form in forms
        )
        """The most characters read from where a span starts to decide it."""

    def _spans(self, text: str) -> list[tuple[int, int]]:
        """Where the key is in ``text``: sorted ``(start, end)`` runs, overlaps merged."""
        found = [match.span() for match in self.pattern.finditer(text)]
        lowered = text.lower()
        found += [
            (i, i + KEY_PIECE)
            for i in range(len(lowered) - KEY_PIECE + 1)
            if lowered[i : i + KEY_PIECE] in self.pieces
        ]
        found.sort()
        merged: list[tuple[int, int]] = []
        for start, end in found:
            if merged and start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], end))
            else:
                merged.append((start, end))
        return merged

    def scrub(self, text: str) -> str:
        return self.scrub_before(text, len(text))

    def scrub_before(self, text: str, end: int) -> str:
        """The scrubbed text up to ``end``: a span starting before ``end`` is replaced
        whole, nothing after ``end`` is kept otherwise."""
        out: list[str] = []
        position = 0
        for start, stop in self._spans(text):
            if start >= end:
                break
            out.append(text[position:start])
            out.append("***")
            position = stop
        if position < end:
            out.append(text[position:end])
        return "".join(out)
