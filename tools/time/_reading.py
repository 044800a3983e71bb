"""One time-reading row per mention: what a :class:`TimeReader` found in the person's
message, expanded into every candidate in their zone, and how the policy settled it."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ._candidates import TimeReader, candidates_of
from ._clock import zone_of
from ._policy import settle

__all__ = ["reader_info", "time_readings"]


def reader_info(reader: TimeReader) -> dict[str, str]:
    """Who read: ``id``, ``version``, ``locale``, ``kind`` (each a str)."""
    out = {}
    for field in ("id", "version", "locale", "kind"):
        value = getattr(reader, field, None)
        if not isinstance(value, str) or not value:
            raise TypeError(
                f"time reader {reader!r} has no {field} (a non-empty str): a TimeReader has "
                "id, version, locale, kind and read(text)"
            )
        out[field] = value
    return out


def time_readings(
    reader: TimeReader,
    text: str,
    *,
    zone: str,
    now: datetime,
    policy: Mapping[str, str],
) -> list[dict[str, Any]]:
    """The reader's mentions in ``text``, one row each: ``quote``, ``candidates``,
    ``dropped`` (gaps and windows that end before they start), ``how`` it settled,
    ``settled`` (or ``None``), ``open`` (the choices left for the person) and ``reader``."""
    info = reader_info(reader)
    place = zone_of(zone)
    found = reader.read(text)
    rows = []
    for mention in found.get("mentions") or ():
        quote = str(mention["quote"])
        candidates: list[dict[str, Any]] = []
        dropped: list[dict[str, Any]] = []
        for parse in mention.get("parses") or ():
            expanded = candidates_of(parse, place, now)
            candidates.extend(c for c in expanded["candidates"] if c not in candidates)
            dropped.extend(expanded["dropped"])
        settled = settle(candidates, policy)
        rows.append(
            {
                "quote": quote,
                "zone": zone,
                "candidates": candidates,
                "dropped": dropped,
                **settled,
                "reader": info,
            }
        )
    return rows
