"""The clock of a run and the zone it is read in: IANA zone names checked through
``zoneinfo``, ISO 8601 instants that must carry an offset, and an instant shown in a zone
with the zone named. The server's own zone is never consulted: every function takes the
zone it works in."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from trackway.engine import ConfigurationError

__all__ = [
    "Clock",
    "InstantError",
    "UnknownZoneError",
    "instant_in_zone",
    "instant_text",
    "offset_label",
    "parse_instant",
    "span_in_zone",
    "zone_of",
]


class UnknownZoneError(ConfigurationError):
    """A zone name that is not an IANA zone ``zoneinfo`` knows (e.g. ``"PST"``)."""


class InstantError(ConfigurationError):
    """A time that is not an ISO 8601 instant with an offset (a zone-less one is refused,
    never guessed)."""


@lru_cache(maxsize=512)
def _zone(name: str) -> ZoneInfo:
    return ZoneInfo(name)


def zone_of(name: object) -> ZoneInfo:
    """The IANA zone ``name`` (``"Europe/London"``); anything else raises
    :class:`UnknownZoneError` naming it and the fix."""
    if not isinstance(name, str) or not name.strip():
        raise UnknownZoneError(
            f"zone={name!r}: name the person's zone with an IANA name, e.g. 'Europe/London' "
            "or 'America/New_York'"
        )
    try:
        if name != name.strip() or name.startswith("/") or ".." in name:
            raise ValueError(name)
        return _zone(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise UnknownZoneError(
            f"zone={name!r} is not an IANA zone name zoneinfo knows; use one such as "
            "'Europe/London', 'America/Los_Angeles' or 'UTC' (abbreviations like 'PST' are "
            "not zones)"
        ) from None


def parse_instant(value: object, what: str = "instant") -> datetime:
    """An aware ``datetime`` from an ISO 8601 string with an offset (``Z`` or ``+02:00``)
    or an aware ``datetime``; a naive one, or anything else, raises :class:`InstantError`."""
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip())
        except ValueError:
            raise InstantError(
                f"{what}={value!r} is not an ISO 8601 instant; write one such as "
                "'2026-10-09T08:00:00-07:00' or '2026-10-09T15:00:00Z'"
            ) from None
    else:
        raise InstantError(
            f"{what}={value!r}: give an ISO 8601 instant with an offset (a str) or an aware "
            "datetime"
        )
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise InstantError(
            f"{what}={value!r} has no offset, so it names no instant; add one "
            "('...T08:00:00-07:00' or '...Z'): a zone-less time is refused, never guessed"
        )
    return parsed


def offset_label(offset: timedelta | None) -> str:
    """``UTC+02:00``, ``UTC-07:00``, ``UTC+10:30`` (``UTC`` for a zero offset is still
    written ``UTC+00:00``: one shape)."""
    seconds = int((offset or timedelta(0)).total_seconds())
    sign = "-" if seconds < 0 else "+"
    seconds = abs(seconds)
    return f"UTC{sign}{seconds // 3600:02d}:{seconds % 3600 // 60:02d}"


def instant_text(moment: datetime) -> str:
    """The instant as ISO 8601 with its offset, to the second (microseconds when set)."""
    spec = "microseconds" if moment.microsecond else "seconds"
    return moment.isoformat(timespec=spec)


@dataclass(frozen=True)
class Clock:
    """A run's clock: ``now`` (an aware datetime or ISO 8601 instant with an offset; ``None``
    takes the real clock when the run starts) and ``zone``, the person's IANA zone (``None``
    falls back to the builder's). Checked when made."""

    now: datetime | str | None = None
    zone: str | None = None

    def __post_init__(self) -> None:
        if self.now is not None:
            parse_instant(self.now, "Clock(now)")
        if self.zone is not None:
            zone_of(self.zone)

    def instant(self) -> datetime | None:
        """``now`` as an aware datetime (``None`` when not given)."""
        return None if self.now is None else parse_instant(self.now, "Clock(now)")


def utc_now() -> datetime:
    """The real clock, in UTC (never the server's zone)."""
    return datetime.now(UTC)


def _wall(moment: datetime) -> str:
    return moment.strftime("%H:%M:%S" if moment.second else "%H:%M")


def span_in_zone(start: str, end: str, zone: str) -> str:
    """Two instants as the person's clocks show them, the zone named once:
    ``2026-10-09 08:00–08:40 America/Los_Angeles (UTC-07:00)``; another day is written out
    (``2026-10-09 23:00 – 2026-10-10 01:00 ...``) and a span across a clock change gives
    each end its own offset."""
    place = zone_of(zone)
    a = parse_instant(start).astimezone(place)
    b = parse_instant(end).astimezone(place)
    oa, ob = offset_label(a.utcoffset()), offset_label(b.utcoffset())
    if oa != ob:
        return f"{a.date()} {_wall(a)} ({oa}) – {b.date()} {_wall(b)} ({ob}) {zone}"
    if a.date() == b.date():
        return f"{a.date()} {_wall(a)}–{_wall(b)} {zone} ({oa})"
    return f"{a.date()} {_wall(a)} – {b.date()} {_wall(b)} {zone} ({oa})"


def instant_in_zone(moment: str, zone: str) -> str:
    """One instant as the person's clocks show it: ``2026-10-09 08:40 America/Los_Angeles
    (UTC-07:00)``."""
    local = parse_instant(moment).astimezone(zone_of(zone))
    return f"{local.date()} {_wall(local)} {zone} ({offset_label(local.utcoffset())})"
