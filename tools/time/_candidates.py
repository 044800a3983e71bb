"""Every instant a person's words could mean. A :class:`TimeReader` returns zone-less parts
(``10/09/26`` is three numbers, the order undecided; ``8`` may be morning or evening); this
module expands them against the person's zone into every candidate: each date order (DMY,
MDY, YMD), both centuries of a two-digit year, am and pm when unstated, and both instants of
a wall time the clocks pass twice (a fold). A wall time the clocks skip (a gap) is refused:
it yields no candidate and is listed in ``dropped`` with its reason, never shifted."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, date, datetime, time
from itertools import product
from typing import Any, Literal, Protocol, runtime_checkable
from zoneinfo import ZoneInfo

from ._clock import instant_text

__all__ = [
    "DATE_ORDERS",
    "TimeReader",
    "candidates_of",
    "wall_instants",
]

DATE_ORDERS = ("DMY", "MDY", "YMD")
"""The orders a numeric date's three fields are read in."""

WallKind = Literal["one", "fold", "gap"]


@runtime_checkable
class TimeReader(Protocol):
    """Reads the person's words into zone-less parts: ``read(text)`` returns
    ``{"mentions": [{"quote": <verbatim text>, "parses": [parse, ...]}, ...]}``.

    A parse has a ``date`` — ``{"kind": "numeric", "fields": [10, 9, 26]}`` (the order is
    not the reader's to decide) or ``{"kind": "calendar", "y": 2026, "m": 10, "d": 9}``
    (``y`` optional: the clock's year), or none (the clock's day) — and either ``at``:
    ``{"wall": {"h": 8, "m": 0, "meridiem": "am"}}`` or ``range_of``: two such ends
    (``meridiem`` ``"am"``, ``"pm"`` or left out: both are read). ``id``, ``version``,
    ``locale`` and ``kind`` (``"rule"``, ``"model"``, ...) go on every time-reading row."""

    id: str
    version: str
    locale: str
    kind: str

    def read(self, text: str) -> Mapping[str, Any]: ...


def wall_instants(day: date, wall: time, zone: ZoneInfo) -> tuple[list[datetime], WallKind]:
    """The instants at which the clocks in ``zone`` read ``wall`` on ``day``: one; two in
    a fold (earlier first); none in a gap (the clocks skip it)."""
    found: list[datetime] = []
    for fold in (0, 1):
        local = datetime.combine(day, wall, tzinfo=zone).replace(fold=fold)
        utc = local.astimezone(UTC)
        back = utc.astimezone(zone)
        if back.replace(tzinfo=None) == local.replace(tzinfo=None, fold=0) and all(
            utc != f.astimezone(UTC) for f in found
        ):
            found.append(back)
    found.sort(key=lambda d: d.astimezone(UTC))
    if not found:
        return [], "gap"
    return found, "fold" if len(found) == 2 else "one"


def _days(spec: Mapping[str, Any] | None, today: date) -> Iterator[tuple[date, dict[str, Any]]]:
    """Each calendar day a date part may mean, with how it was read."""
    if spec is None:
        yield today, {"date_order": None, "year_from": "clock"}
        return
    kind = spec.get("kind")
    if kind == "calendar":
        year = spec.get("y")
        how: dict[str, Any] = {"date_order": None, "year_from": "written"}
        if year is None:
            year, how = today.year, {"date_order": None, "year_from": "clock"}
        for y, from_ in _years(int(year), today):
            try:
                yield date(y, int(spec["m"]), int(spec["d"])), {**how, **from_}
            except ValueError:
                continue
        return
    if kind != "numeric":
        raise ValueError(f"a date part's kind is 'numeric' or 'calendar', not {kind!r}")
    fields = [int(f) for f in spec["fields"]]
    if len(fields) != 3:
        raise ValueError(f"a numeric date has three fields, not {fields!r}")
    a, b, c = fields
    orders = {"DMY": (c, b, a), "MDY": (c, a, b), "YMD": (a, b, c)}
    for order in DATE_ORDERS:
        y, m, d = orders[order]
        for year, from_ in _years(y, today):
            try:
                yield date(year, m, d), {"date_order": order, **from_}
            except ValueError:
                continue


def _years(written: int, today: date) -> list[tuple[int, dict[str, Any]]]:
    """A two-digit year as the year within fifty years of the clock's (``nearest``) and
    the one a century further off; any other year as written."""
    if 0 <= written < 100:
        low = today.year - 50
        nearest = low + (written - low) % 100
        other = nearest - 100 if nearest >= today.year else nearest + 100
        return [
            (nearest, {"year_from": "two-digit", "nearest": True}),
            (other, {"year_from": "two-digit", "nearest": False}),
        ]
    return [(written, {"year_from": "written"})]


def _walls(spec: Mapping[str, Any]) -> list[tuple[time, str]]:
    """The wall times an end may mean: am and pm when unstated (hours 1-12)."""
    wall = spec["wall"]
    h, m, s = int(wall["h"]), int(wall.get("m", 0)), int(wall.get("s", 0))
    meridiem = wall.get("meridiem")
    if meridiem not in (None, "am", "pm"):
        raise ValueError(f"meridiem is 'am', 'pm' or left out, not {meridiem!r}")
    if meridiem is not None:
        if not 1 <= h <= 12:
            raise ValueError(f"{h} {meridiem} is not a time: with am/pm the hour is 1-12")
        hour = h % 12 + (12 if meridiem == "pm" else 0)
        return [(time(hour, m, s), meridiem)]
    if 1 <= h <= 12:
        return [(time(h % 12, m, s), "am"), (time(h % 12 + 12, m, s), "pm")]
    return [(time(h, m, s), "24h")]


def candidates_of(parse: Mapping[str, Any], zone: ZoneInfo, now: datetime) -> dict[str, Any]:
    """Every candidate of one parse in ``zone`` (the clock ``now`` gives the day when no
    date is written, the year when none is, and the nearest century of a two-digit year):
    ``{"candidates": [...], "dropped": [...]}``. A candidate has ``from`` (and ``to`` for a
    range) as ISO instants with the zone's offset, ``date``, ``date_order``, ``year_from``,
    ``meridiem`` per end and ``fold`` per end (0 or 1; ``None`` off a fold)."""
    today = now.astimezone(zone).date()
    ends = parse.get("range_of")
    single = ends is None
    if single:
        ends = [parse["at"]]
    if not isinstance(ends, Sequence) or len(ends) not in (1, 2):
        raise ValueError("a parse has 'at' (one end) or 'range_of' (two ends)")
    options = [_walls(end) for end in ends]
    out: list[dict[str, Any]] = []
    dropped: list[dict[str, Any]] = []
    for day, how in _days(parse.get("date"), today):
        for walls in product(*options):
            instants: list[list[tuple[datetime, int | None]]] = []
            for wall, _ in walls:
                found, kind = wall_instants(day, wall, zone)
                if kind == "gap":
                    dropped.append(
                        {"date": day.isoformat(), "wall": wall.isoformat(), "reason": "gap"}
                    )
                    break
                instants.append([(f, i if kind == "fold" else None) for i, f in enumerate(found)])
            else:
                for chosen in product(*instants):
                    moments = [c[0] for c in chosen]
                    if len(moments) == 2 and moments[1].astimezone(UTC) <= moments[0].astimezone(
                        UTC
                    ):
                        dropped.append(
                            {
                                "date": day.isoformat(),
                                "from": instant_text(moments[0]),
                                "to": instant_text(moments[1]),
                                "reason": "ends-before-start",
                            }
                        )
                        continue
                    row: dict[str, Any] = {"from": instant_text(moments[0])}
                    if len(moments) == 2:
                        row["to"] = instant_text(moments[1])
                    row.update(
                        date=day.isoformat(),
                        **how,
                        meridiem=[w[1] for w in walls],
                        fold=[c[1] for c in chosen],
                    )
                    out.append(row)
    return {"candidates": out, "dropped": dropped}
