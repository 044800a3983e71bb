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
    "instant_text",
    "offset_label",
    "parse_instant",
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
