"""The law of the skill cursor, instruction leases and served pieces: a pure function from
the skills record, the cursor, the last batch of tool results and the code's decisions to
what the next model call is served and what the record gains.

Precedence among proposals to move the cursor, stated once: a declared route fired by the
batch, then a tool's ``propose-transition`` effect, then the model's own pick (``read_skill``,
``skip_step``); within one source, call (or declaration) order. The first accepted wins; the
others are recorded ``suppressed`` (same source) or ``superseded`` (a lower one). A proposal
the graph cannot take is ``refused`` with a sentence the model reads on its next call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from ._declare import LEASES, conditional
from ._doors import reachable_in

__all__ = ["Evaluation", "evaluate", "last_batch"]

_RANK = {"route": 0, "tool-proposal": 1, "read_skill": 2, "skip_step": 2, "entry": 0}
_KINDS = ("propose-transition", "require-instruction")


class Evaluation(NamedTuple):
    cursor: dict[str, Any]
    proposals: list[dict[str, Any]]
    leases: list[dict[str, Any]]
    pieces: list[dict[str, Any]]
    events: list[tuple[str, dict[str, Any]]]


def last_batch(rows: Sequence[Mapping[str, Any]], iteration: int) -> list[Mapping[str, Any]]:
    """The rows of the batch that ran at ``iteration`` (read from the end: O(batch))."""
    i = len(rows)
    while i and rows[i - 1].get("iteration") == iteration:
        i -= 1
    return [rows[j] for j in range(i, len(rows))]


def _cond_matches(route: Mapping[str, Any], batch: Sequence[Mapping[str, Any]]) -> bool:
    tool, status = route.get("on_tool_return"), route.get("on_tool_status")
    if tool is None and status is None:
        return True
    return any(
        (tool is None or row["name"] == tool) and (status is None or row.get("status") == status)
        for row in batch
    )


def evaluate(
    record: Mapping[str, Any],
    cursor: Mapping[str, Any],
    batch: Sequence[Mapping[str, Any]],
    leases: Sequence[Mapping[str, Any]],
    k: int,
    *,
    when: Callable[[int], bool],
    active: Sequence[str],
    entry: Mapping[str, Any] | None,
    doors: frozenset[str],
) -> Evaluation:
    """What call ``k`` is served and what the record gains. ``batch``: the tool results since
    the last call (empty at the first); ``when(i)``: whether route ``i``'s predicate holds;
    ``active``: the instructions whose ``active_when`` holds; ``entry``: the entry pick of a
    turn's first call (``{"chosen", ...}``), if one was made."""
    catalog = {s["id"]: s for s in record["catalog"]}
    hidden = frozenset(i for i, s in catalog.items() if s["hidden"])
    instructions: Mapping[str, str] = record["instructions"]
    graph = record.get("graph")
    skill, tenure = cursor.get("skill"), int(cursor.get("tenure", 0))
    events: list[tuple[str, dict[str, Any]]] = []
    notes: list[str] = []
    candidates: list[dict[str, Any]] = []
    if entry is not None and entry.get("chosen") is not None:
        candidates.append({"source": "entry", "target": entry["chosen"]})
    if graph is not None and batch:
        for i, r in enumerate(graph["routes"]):
            if r["from"] != skill or not conditional(r) or not _cond_matches(r, batch):
                continue
            if "when" in r and not when(i):
                continue
            candidates.append({"source": "route", "target": r["to"], "route": i})
    granted: list[dict[str, Any]] = []
    for row in batch:
        if row["name"] in doors:
            if "pick" in row:
                source = "skip_step" if row["name"] == "skip_step" else "read_skill"
                candidates.append({"source": source, "target": row["pick"], "call_id": row["id"]})
            continue
        for effect in row.get("effects", ()):
            if not _typed(effect):  # a domain effect (a refund made): data for the record
                continue
            verdict = _effect(effect, row, catalog, instructions, tenure, k)
            if verdict[0] == "proposal":
                candidates.append(verdict[1])
            elif verdict[0] == "lease":
                granted.append(verdict[1])
                events.append(
                    (
                        "tools.effect",
                        {
                            "id": row["id"],
                            "name": row["name"],
                            "kind": "require-instruction",
                            "outcome": "accepted",
                            "instruction": verdict[1]["instruction"],
                            "lease": verdict[1]["lease"],
                        },
                    )
                )
            else:
                why = verdict[1]["why"]
                notes.append(f"[tool effect refused: {row['name']}: {why}]")
                events.append(
                    (
                        "tools.effect",
                        {
                            "id": row["id"],
                            "name": row["name"],
                            "kind": str(effect.get("kind")) if isinstance(effect, Mapping) else "?",
                            "outcome": "refused",
                            "why": why,
                        },
                    )
                )
    candidates.sort(key=lambda c: _RANK[c["source"]])  # stable: call order within a source
    proposals: list[dict[str, Any]] = []
    winner: dict[str, Any] | None = None
    reachable = reachable_in(record, skill)
    for c in candidates:
        row = {"k": k, **c}
        target = c["target"]
        if winner is None:
            if c["source"] == "tool-proposal" and target == skill:
                row.update(verdict="accepted", stay=True)
                winner = row
            elif c["source"] == "tool-proposal" and graph is not None and target not in reachable:
                shown = f"skill {target!r}" if target not in hidden else "a skill"
                why = f"{shown} is not reachable from the active skill"
                row.update(verdict="refused", why=why)
                notes.append(f"[tool effect refused: {c['name']}: {why}]")
            else:
                row["verdict"] = "accepted"
                winner = row
        else:
            row["verdict"] = "suppressed" if c["source"] == winner["source"] else "superseded"
            row["by"] = winner["source"]
            if c["source"] in ("read_skill", "skip_step"):
                notes.append(
                    f"[your {c['source']} call was not taken: a "
                    f"{'declared route' if winner['source'] == 'route' else 'tool'} moved the "
                    "skill first]"
                )
        if c["source"] == "tool-proposal":
            event = {
                "id": c["call_id"],
                "name": c["name"],
                "kind": "propose-transition",
                "outcome": row["verdict"] if row["verdict"] != "suppressed" else "superseded",
            }
            if row.get("stay"):
                event["stay"] = True
            if "why" in row:
                event["why"] = row["why"]
            events.append(("tools.effect", event))
        proposals.append(row)
    new_skill, new_tenure = skill, tenure
    if winner is not None and not winner.get("stay") and winner["target"] != skill:
        new_skill, new_tenure = winner["target"], tenure + 1
        events.append(
            (
                "skill.moved",
                {
                    "k": k,
                    "from": None if skill in hidden else skill,
                    "to": None if new_skill in hidden else new_skill,
                    "by": winner["source"],
                    "tenure": new_tenure,
                    # a hidden skill is said as such, never by its id
                    **({"from_hidden": True} if skill in hidden else {}),
                    **({"to_hidden": True} if new_skill in hidden else {}),
                },
            )
        )
    kept = [
        dict(lease)
        for lease in leases
        if lease["lease"] == "until-skill-exit" and lease["tenure"] == new_tenure
    ]
    kept += [
        lease for lease in granted if lease["lease"] == "next-call" or lease["tenure"] == new_tenure
    ]
    pieces = _pieces(catalog, instructions, new_skill, active, kept, notes, k)
    cursor_out = {"skill": new_skill, "tenure": new_tenure}
    return Evaluation(cursor_out, proposals, kept, pieces, events)


def _typed(effect: Any) -> bool:
    """Whether ``effect`` speaks the typed vocabulary the law judges. Any other effect is
    what the tool says it did, filed on its row and judged by nobody."""
    return isinstance(effect, Mapping) and effect.get("kind") in _KINDS


def _effect(
    effect: Any,
    row: Mapping[str, Any],
    catalog: Mapping[str, Any],
    instructions: Mapping[str, str],
    tenure: int,
    k: int,
) -> tuple[str, dict[str, Any]]:
    """One typed effect judged: ``("proposal", candidate)``, ``("lease", lease)`` or
    ``("refused", {"why": ...})`` (the sentence never names a hidden skill)."""
    if effect["kind"] == "propose-transition":
        target = effect.get("target_skill_id")
        if target not in catalog:
            return "refused", {"why": f"there is no skill named {target!r}"}
        return "proposal", {
            "source": "tool-proposal",
            "target": target,
            "call_id": row["id"],
            "name": row["name"],
            "reason": str(effect.get("reason", "")),
        }
    wanted = effect.get("instruction_id")
    lease = effect.get("delivery_lease", "next-call")
    if lease not in LEASES:
        return "refused", {"why": f"delivery_lease {lease!r} is not one of {', '.join(LEASES)}"}
    known = isinstance(wanted, str) and (
        wanted in instructions or (wanted in catalog and not catalog[wanted]["hidden"])
    )
    if not known:
        return "refused", {
            "why": f"instruction {wanted!r} is not registered; push only an instruction "
            "declared with .instruction() or a skill's id"
        }
    return "lease", {
        "instruction": wanted,
        "lease": lease,
        "tenure": tenure,
        "call_id": row["id"],
        "k": k,
    }


def _pieces(
    catalog: Mapping[str, Any],
    instructions: Mapping[str, str],
    skill: str | None,
    active: Sequence[str],
    leases: Sequence[Mapping[str, Any]],
    notes: Sequence[str],
    k: int,
) -> list[dict[str, Any]]:
    """The system pieces of call ``k``, in a fixed order: the active skill's body, the
    active instructions, the leased ones, then this call's notes."""
    pieces: list[dict[str, Any]] = []
    if skill is not None:
        s = catalog[skill]
        text = s["body"] if s["hidden"] else f"## Skill: {s['title']}\n\n{s['body']}"
        pieces.append({"source": "skill", "id": skill, "text": text})
    served = set()
    for iid in active:
        pieces.append({"source": "instruction", "id": iid, "text": instructions[iid]})
        served.add(iid)
    for lease in leases:
        iid = lease["instruction"]
        if iid in served or (lease["lease"] == "next-call" and lease["k"] != k):
            continue
        served.add(iid)
        text = instructions[iid] if iid in instructions else catalog[iid]["body"]
        pieces.append({"source": "lease", "id": iid, "text": text})
    if notes:
        pieces.append({"source": "note", "text": "\n".join(notes)})
    return pieces
