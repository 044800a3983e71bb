"""Claim contracts: ``claim(id, pattern=, from_tools=, description=)`` declares a kind of
statement an answer may make (a regex with one group, the value) and the tools whose results
must carry that value. A declaration is data (the pattern is a string), so a recording holds
it and a replay checks it again without code.

Values are compared as the evidence gate compares them: Unicode NFKC, case folded, digit
groups joined (``1,200``, ``1 200``, ``1_200`` and ``1200`` are one value) and a number read
as a number (``3.50`` is ``3.5``; its sign is kept).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ..messages._errors import AgentBuildError

__all__ = ["DeclaredClaim", "carries", "claim", "normal", "stated_values"]

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*")
_GROUPED = re.compile(r"(?<=\d)[,_\u00a0\u202f\u2009 ](?=\d{3}(?!\d))")
_NUMBER = re.compile(r"^[+-]?\d+(?:\.\d+)?$")
_NUMBERS = re.compile(r"(?<![\w.])[+-]?\d+(?:\.\d+)?(?!\d|\.\d)")


@dataclass(frozen=True)
class DeclaredClaim:
    """A claim contract: when the answer states ``pattern``'s group, some result of
    ``from_tools`` in the same turn must carry that value."""

    id: str
    pattern: str
    from_tools: tuple[str, ...]
    description: str = ""

    @cached_property
    def compiled(self) -> re.Pattern[str]:
        return re.compile(self.pattern)

    def record(self) -> dict[str, Any]:
        """The declaration as data (what ``settings`` keeps for a replay)."""
        out: dict[str, Any] = {
            "id": self.id,
            "pattern": self.pattern,
            "from_tools": list(self.from_tools),
        }
        if self.description:
            out["description"] = self.description
        return out

    @classmethod
    def from_record(cls, data: Mapping[str, Any]) -> DeclaredClaim:
        return claim(
            data["id"],
            pattern=data["pattern"],
            from_tools=tuple(data["from_tools"]),
            description=data.get("description", ""),
        )


def claim(
    id: str,
    *,
    pattern: str,
    from_tools: Iterable[str] | str,
    description: str = "",
) -> DeclaredClaim:
    """Declare a claim contract (for ``.answer_validation(claims=[...])``).

    ``pattern`` is a regular expression with exactly one group, the value the answer states
    (``r"(\\d+) ports? (?:are )?down"``; inline flags such as ``(?i)`` work); ``from_tools``
    names the tools whose results of the same turn must carry it. A pattern that does not
    compile or has not exactly one group is refused here; a tool the agent does not have is
    refused at ``build()``.
    """
    if not isinstance(id, str) or not _ID.fullmatch(id):
        raise AgentBuildError(
            f"claim({id!r}): the id must be a non-empty str of letters, digits and _ . : - "
            "(it names the claim in the report), e.g. claim('ports-down', ...)"
        )
    if not isinstance(pattern, str) or not pattern:
        raise AgentBuildError(
            f"claim({id!r}, pattern={pattern!r}): the pattern is a regex str with one group, "
            r"e.g. pattern=r'(\d+) ports? down'"
        )
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise AgentBuildError(
            f"claim({id!r}): the pattern {pattern!r} does not compile ({exc}); fix the regex "
            "(a raw string r'...' keeps its backslashes)"
        ) from None
    if compiled.groups != 1:
        raise AgentBuildError(
            f"claim({id!r}): the pattern {pattern!r} has {compiled.groups} groups; it needs "
            "exactly one, around the value the answer states (make the others non-capturing: "
            "(?:...))"
        )
    tools = (from_tools,) if isinstance(from_tools, str) else tuple(from_tools)
    if not tools or not all(isinstance(t, str) and t for t in tools):
        raise AgentBuildError(
            f"claim({id!r}, from_tools={from_tools!r}): name the tools whose results must "
            "carry the value, e.g. from_tools=('port_status',)"
        )
    if not isinstance(description, str):
        raise AgentBuildError(f"claim({id!r}, description={description!r}): use a str")
    return DeclaredClaim(id, pattern, tuple(dict.fromkeys(tools)), description)


def normal(text: str) -> str:
    """``text`` as values are compared: NFKC, case folded, digit groups joined."""
    return _GROUPED.sub("", unicodedata.normalize("NFKC", text).casefold())


def stated_values(item: DeclaredClaim, answer: str) -> list[str]:
    """The values the answer states for ``item``, each once (as first written), in order."""
    out: dict[str, str] = {}
    for match in item.compiled.finditer(answer):
        value = match.group(1)
        if value is None or not value.strip():
            continue
        out.setdefault(_key(normal(value.strip())), value.strip())
    return list(out.values())


def _key(value: str) -> str:
    """A normalized value's identity: a number by its value (``+3.50`` is ``3.5``, ``007`` is
    ``7``; the sign kept), anything else as it is. String work, not ``Decimal``: a decimal
    context is made per thread, and a run may be on a fresh one."""
    if not _NUMBER.match(value):
        return value
    sign = "-" if value[0] == "-" else ""
    whole, _, fraction = value.lstrip("+-").partition(".")
    whole, fraction = whole.lstrip("0") or "0", fraction.rstrip("0")
    if whole == "0" and not fraction:
        sign = ""  # -0 is 0
    return f"#{sign}{whole}.{fraction}" if fraction else f"#{sign}{whole}"


def carries(text: str, value: str) -> bool:
    """Whether ``text`` (normalized) states ``value`` (as written in the answer): a number
    as a number anywhere a number stands, anything else as a whole word."""
    wanted = normal(value)
    key = _key(wanted)
    if key.startswith("#"):
        return any(_key(found) == key for found in _NUMBERS.findall(text))
    before = r"(?<!\w)" if wanted[:1].isalnum() or wanted[:1] == "_" else ""
    after = r"(?!\w)" if wanted[-1:].isalnum() or wanted[-1:] == "_" else ""
    return re.search(before + re.escape(wanted) + after, text) is not None
