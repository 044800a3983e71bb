"""The served ledger piece: once the model has declared at least one standing, every later
call is served one system piece (source ``"findings"``), composed from the record alone —
the ledger (``findings``) and the rows of the calls (``tool_results``) — so ``served_at``
rebuilds it byte for byte.

The buckets quote the model's own declarations, each marked as such: ``facts`` (results it
declared fact), ``limitations`` (ruled-out), ``evidence_refs`` (open, on a call whose basis
was not exploratory) and ``next_steps`` (open, on an exploratory call: a lead to settle).
An open or ruled-out line quotes the judged call's proposition after the model's words
(``tested:``); a fact line does not. Then noise as a count, and the results nobody named,
listed as undeclared (never as open). What the library joined (not declared) follows under
its own headings: ``conflicts``, ``contingent`` and ``unsettled by absence``. Under
``answer_ask="quote-facts"`` a short ask closes the piece. The piece is served last in the
system text (:func:`~._request.served_system`).

Composition is incremental (:class:`LedgerPiece`): each call reads only the rows added since
the last one and re-renders only the results whose standing moved.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trackway.engine import thaw

__all__ = [
    "ANSWER_ASK_TEXT",
    "PIECE_HEADER",
    "LedgerPiece",
    "findings_piece",
    "fold",
    "ledger_index",
]

PIECE_HEADER = (
    "Findings ledger (composed from the record; each line under facts, limitations, "
    "evidence_refs and next_steps quotes what you declared about a tool result):"
)
ANSWER_ASK_TEXT = (
    "Answer from the facts lines and copy each value as written. Name an evidence_refs or "
    "next_steps result as unsettled. Do not draw on a collapsed ticket. Never invent a value."
)
_BUCKETS = ("facts", "limitations", "evidence_refs", "next_steps")


def fold(value: Any) -> str:
    """How an assertion's ``about`` and ``value`` are compared: case and spacing folded."""
    return " ".join(str(value).split()).casefold()


def _label(tool: str | None, rid: str) -> str:
    return f"({tool}, tool:{rid})" if tool else f"(tool:{rid})"


def _assertion_text(item: Any) -> str:
    if isinstance(item, Mapping):
        return f"{item.get('about')} = {item.get('value')}"
    return str(item)


class LedgerPiece:
    """The piece of one run, kept up to date call by call: O(new rows) to take in, and a
    join of the kept lines to render."""

    __slots__ = (
        "_about",
        "_absences",
        "_basis",
        "_conflicts",
        "_contingent",
        "_judged",
        "_lines",
        "_names",
        "_pairs",
        "_results",
        "_rows",
        "_seen_results",
        "_standing",
        "_text",
    )

    def __init__(self) -> None:
        self._rows = 0
        self._seen_results = 0
        self._basis: dict[str, dict[str, Any]] = {}
        self._standing: dict[str, dict[str, Any]] = {}
        self._names: dict[str, str] = {}
        self._results: list[str] = []
        self._lines: dict[str, tuple[str, str]] = {}
        self._conflicts: list[str] = []
        self._judged: dict[str, str] = {}
        self._contingent: list[str] = []
        self._absences: list[dict[str, Any]] = []
        self._about: dict[str, dict[str, list[tuple[int, str]]]] = {}
        """Each current fact's assertions by folded ``about``: result id to (index, value)."""
        self._pairs: set[tuple[tuple[str, int], ...]] = set()
        """The witness pairs a conflict row already names."""
        self._text: tuple[Any, str | None] | None = None

    def update(self, ledger: Sequence[Any], results: Sequence[Any]) -> None:
        """Take in the ledger rows and call rows added since the last update."""
        if len(ledger) < self._rows:  # another ledger (the memo is per run and mount)
            self.__init__()  # type: ignore[misc]
        if len(results) < self._seen_results:
            self._seen_results = 0
            self._results = []
        for i in range(self._seen_results, len(results)):
            row = results[i]
            rid = str(row["id"])
            if rid not in self._names:
                self._results.append(rid)
            self._names[rid] = str(row["name"])
        self._seen_results = len(results)
        for i in range(self._rows, len(ledger)):
            self._take(thaw(ledger[i]))
        self._rows = len(ledger)

    def _take(self, row: Mapping[str, Any]) -> None:
        kind = row.get("kind")
        if kind == "basis":
            self._basis[str(row["id"])] = dict(row)
        elif kind == "standing" and not row.get("unknown_id"):
            rid = str(row["id"])
            old = self._standing.get(rid)
            for item in (old or {}).get("assertions") or ():  # its old facts leave the index
                self._about.get(fold(item["about"]), {}).pop(rid, None)
            self._standing[rid] = dict(row)
            self._lines.pop(rid, None)
            if row["standing"] == "fact":
                for i, item in enumerate(row.get("assertions") or ()):
                    kept = self._about.setdefault(fold(item["about"]), {})
                    kept.setdefault(rid, []).append((i, fold(item["value"])))
        elif kind == "conflict":
            a, b = row["witnesses"][0], row["witnesses"][1]
            self._pairs.add(tuple(sorted(((a["id"], a["assertion"]), (b["id"], b["assertion"])))))
            self._conflicts.append(
                f"- tool:{a['id']} and tool:{b['id']} stand on different values of one "
                f"assertion (assertions {a['assertion']} and {b['assertion']})"
            )
        elif kind == "judgment":
            self._judged[str(row["id"])] = str(row["standing"])
        elif kind == "contingent":
            used = "answer" if row["declared_on"] == "answer" else f"tool:{row['declared_on']}"
            carriers = ", ".join(f"tool:{c['id']} ({c['standing']})" for c in row["carriers"])
            self._contingent.append(f"- {used} used {row['value']} from {carriers}")
        elif kind == "unsettled-by-absence":
            self._absences.append(dict(row))

    def standing_of(self, rid: str) -> str | None:
        """The current standing of result ``rid`` (``None``: undeclared)."""
        row = self._standing.get(rid)
        return None if row is None else str(row["standing"])

    def judged(self, rid: str) -> str | None:
        """The standing a judge gave result ``rid`` (``None``: no judgment of it)."""
        return self._judged.get(rid)

    def proposition_of(self, rid: str) -> str | None:
        """The proposition call ``rid`` declared (``None``: none)."""
        value = self._basis.get(rid, {}).get("proposition")
        return None if value is None else str(value)

    def facts_about(self, about: str) -> dict[str, list[tuple[int, str]]]:
        """The current facts' assertions about ``about`` (folded): id to (index, value)."""
        return self._about.get(about, {})

    def conflict_filed(self, pair: tuple[tuple[str, int], ...]) -> bool:
        return pair in self._pairs

    def _line(self, rid: str) -> tuple[str, str]:
        known = self._lines.get(rid)
        if known is not None:
            return known
        row = self._standing[rid]
        standing = row["standing"]
        basis = self._basis.get(rid, {})
        tool = self._names.get(rid) or basis.get("name")
        said = row.get("note") or ""
        assertions = row.get("assertions") or ()
        if assertions:
            stood = "; ".join(_assertion_text(a) for a in assertions)
            said = f"{said} [{stood}]" if said else f"[{stood}]"
        head = {"fact": "fact", "open": "open", "ruled-out": "ruled out"}.get(standing, standing)
        line = f"- {head} {_label(tool, rid)}"
        if said:
            line += f": {said}"
        proposition = basis.get("proposition")
        if standing != "fact" and proposition:
            line += f" — tested: {proposition}"
        if standing == "fact":
            bucket = "facts"
        elif standing == "ruled-out":
            bucket = "limitations"
        elif standing == "open":
            exploratory = basis.get("basis") == "exploratory"
            bucket = "next_steps" if exploratory else "evidence_refs"
        else:
            bucket = "noise"
        self._lines[rid] = (bucket, line)
        return bucket, line

    def text(self, answer_ask: str | None = None) -> str | None:
        """The piece, or ``None`` while no standing was declared."""
        key = (self._rows, self._seen_results, answer_ask)
        if self._text is not None and self._text[0] == key:
            return self._text[1]
        text = self._render(answer_ask) if self._standing else None
        self._text = (key, text)
        return text

    def _render(self, answer_ask: str | None) -> str:
        buckets: dict[str, list[str]] = {b: [] for b in (*_BUCKETS, "noise")}
        for rid in self._standing:
            bucket, line = self._line(rid)
            buckets[bucket].append(line)
        out = [PIECE_HEADER]
        for bucket in _BUCKETS:
            if buckets[bucket]:
                out.append(f"{bucket} (declared by you):")
                out.extend(buckets[bucket])
        noise = len(buckets["noise"])
        if noise:
            out.append(f"noise: {noise} result{'' if noise == 1 else 's'} declared noise")
        undeclared = [r for r in self._results if r not in self._standing]
        if undeclared:
            named = ", ".join(f"tool:{r} ({self._names[r]})" for r in undeclared)
            out.append(f"undeclared (no standing declared; not open): {named}")
        if self._conflicts:
            out.append("conflicts (read off the record):")
            out.extend(self._conflicts)
        if self._contingent:
            out.append("contingent (read off the record):")
            out.extend(self._contingent)
        absences = [
            a
            for a in self._absences
            if self._standing.get(str(a["id"]), {}).get("standing") == "ruled-out"
        ]
        if absences:
            out.append("unsettled by absence (read off the record):")
            for a in absences:
                rid = str(a["id"])
                out.append(f"- ruled out {_label(self._names.get(rid), rid)} on an absence")
                for part in ("not_checked", "cannot_cover"):
                    for item in a.get(part) or ():
                        what = item.get("what") if isinstance(item, Mapping) else item
                        why = item.get("why") if isinstance(item, Mapping) else None
                        tail = f" ({why})" if why else ""
                        out.append(f"  tool:{rid} {part}: {what}{tail}")
                if a.get("try_instead"):
                    out.append(f"  tool:{rid} try_instead: {a['try_instead']}")
        if answer_ask == "quote-facts":
            out.append(ANSWER_ASK_TEXT)
        return "\n".join(out)


def ledger_index(scope: Any) -> LedgerPiece:
    """The run's ledger index at ``scope`` (one per run and mount, updated with the rows
    added since it was last read: O(new rows)); a fresh one for a plain mapping."""
    run_local = getattr(scope, "run_local", None)
    if run_local is None:
        memo = LedgerPiece()
    else:
        mount = scope.stage_path.rsplit("/", 1)[0] if "/" in scope.stage_path else ""
        memo = run_local(("findings-index", mount), LedgerPiece)
    memo.update(scope.get("findings") or (), scope.get("tool_results") or ())
    return memo


def findings_piece(state: Any, memo: LedgerPiece | None = None) -> str | None:
    """The ledger piece a call with committed ``state`` is served (``None``: none), from the
    record alone: the recorded ``settings["findings"]``, the ledger and the call rows."""
    recorded = state["settings"].get("findings")
    if not isinstance(recorded, Mapping) or not recorded.get("piece"):
        return None
    ledger = state.get("findings")
    if not ledger:
        return None
    memo = memo if memo is not None else LedgerPiece()
    memo.update(ledger, state.get("tool_results") or ())
    return memo.text(recorded.get("answer_ask"))
