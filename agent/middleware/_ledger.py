"""The ``middleware_decisions`` ledger: one row per link that decided (pass-throughs
included), so a reader sees which link did what and why, and a replay reads the decisions
instead of running any link."""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable, Mapping
from typing import Any, cast

from trackway.engine import Scope, thaw
from trackway.engine.run._scope import TrackedScope
from trackway.tools.define._gate import UNCHANGED, GateDecision, allow, ask, deny, scrub
from trackway.tools.define._gate import withhold as withhold_

from ..context._config import emit as _emit
from ._links import DOORS, Door, Middleware

__all__ = [
    "DECISIONS_KEY",
    "decision_row",
    "declared_links",
    "record_decisions",
    "recorded_middleware",
]

DECISIONS_KEY = "middleware_decisions"


def decision_row(
    link: str,
    door: Door,
    iteration: int,
    decision: GateDecision,
    *,
    changed: bool,
    call: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The row of one decision: the link, the door, the turn's iteration, what it decided,
    whether it changed what passed, why, and (a rewrite) the new value and where rewritten
    arguments came from. Scrubbed words are never kept: a scrub row says only that it
    rewrote."""
    row: dict[str, Any] = {
        "middleware": link,
        "door": door,
        "iteration": iteration,
        "outcome": decision.kind,
        "changed": changed,
    }
    if call is not None:
        row["id"], row["tool"] = call["id"], call["name"]
    if decision.text:
        row["why"] = decision.text
    if decision.value is not UNCHANGED and changed:
        row["value"] = thaw(decision.value)
    if decision.source:
        row["from"] = dict(decision.source)
    return row


def record_decisions(scope: Scope, rows: Iterable[dict[str, Any]], *, plain: bool = False) -> None:
    """Append ``rows`` to the ledger, each announced as ``middleware.decided`` (without the
    rewritten value: the ledger holds it). ``plain``: rows the library built of plain JSON
    only (a message door's: its text checked to be a str), handed over without a second
    check; otherwise a rewritten value is the link's and is checked."""
    rows = list(rows)
    if not rows:
        return
    native = type(scope) is TrackedScope  # the engine's scope: exact JSON, encoded once
    if plain and native:
        cast(TrackedScope, scope)._extend_built(DECISIONS_KEY, rows)
    else:
        scope.extend(DECISIONS_KEY, rows)
    for row in rows:
        # the event holds names, counts, the reason and where arguments came from (all str)
        event = {k: v for k, v in row.items() if k != "value"}
        if native:
            cast(TrackedScope, scope)._emit_built("middleware.decided", event)
        else:
            _emit(scope, "middleware.decided", event)


def declared_links(links: Iterable[Middleware]) -> list[dict[str, Any]]:
    """The links as the run's settings record them: each name and the doors it stands at
    (so a replay mounts the same doors without the code)."""
    return [{"name": m.name, "doors": [d for d in DOORS if m.at(d) is not None]} for m in links]


def recorded_middleware(
    declared: Iterable[Mapping[str, Any]], rows: Iterable[Mapping[str, Any]]
) -> tuple[Middleware, ...]:
    """Stand-in links (the ``declared`` ones, at their doors) that hand back what the
    recorded links decided, in the order they decided (by link, door and call), so a replay
    runs no middleware. A scrub's words are already scrubbed in the recorded result: its
    stand-in leaves the text as it is."""
    queues: dict[tuple[str, str, str | None], deque[Mapping[str, Any]]] = defaultdict(deque)
    names: list[str] = []
    doors: dict[str, set[str]] = defaultdict(set)
    for link in declared:
        names.append(link["name"])
        doors[link["name"]].update(link["doors"])
    for row in rows:
        name = row["middleware"]
        if name not in doors:
            names.append(name)
        doors[name].add(row["door"])
        queues[(name, row["door"], row.get("id"))].append(row)

    def stand_in(name: str, door: str) -> Any:
        def decided(*args: Any) -> GateDecision:
            first = args[0] if args else None
            key = first.get("id") if isinstance(first, Mapping) and door.endswith("tool") else None
            queue = queues.get((name, door, key))
            if not queue:  # the link passed nothing on record here: it was not reached
                return allow()
            return _decision(queue.popleft())

        decided.__name__ = name
        return decided

    return tuple(
        Middleware(name, **{door: stand_in(name, door) for door in sorted(doors[name])})
        for name in names
    )


def _decision(row: Mapping[str, Any]) -> GateDecision:
    outcome, why = row["outcome"], row.get("why")
    if outcome == "deny":
        return deny(why or "denied")
    if outcome == "ask":
        return ask(why or "approve?")
    if outcome == "withhold":
        return withhold_(why or "withheld")
    if outcome == "scrub":
        return scrub(lambda text: text, why)
    if "value" in row:
        return allow(thaw(row["value"]), why, from_=row.get("from"))
    return allow(UNCHANGED, why)
