"""Claim contracts: ``claim(id, pattern=, from_tools=, description=)`` declares a kind of
statement an answer may make (a regex with one group, the value) and the tools whose results
must carry that value. A declaration is data (the pattern is a string), so a recording holds
it and a replay checks it again without code.

A stated value is compared with a result exactly as the evidence gate compares an answer's
values (``_values``, ``_corpus``): one token by its normal form (``1,200`` is ``1200``,
``3.50`` is ``3.5``, ``EMEA`` is ``emea``), several as a phrase.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ..messages._errors import AgentBuildError
from ._values import AnswerValue, value_of

__all__ = ["DeclaredClaim", "claim", "stated_values"]

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*")


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


def stated_values(item: DeclaredClaim, answer: str) -> list[AnswerValue]:
    """The values the answer states for ``item``, each once (as first written), in order."""
    out: dict[str, AnswerValue] = {}
    for match in item.compiled.finditer(answer):
        found = None if match.group(1) is None else value_of(match.group(1))
        if found is not None:
            out.setdefault(found.value, found)
    return list(out.values())
