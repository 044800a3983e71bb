"""``Commit.detail``: the named shapes of what a commit records beyond its writes.

A commit's ``detail`` is a JSON object (or ``None``) holding any of the entries of
:class:`CommitDetail`; each entry has one shape, named here, written by one part of the
engine and read by the causal trace, redaction, the narrative, OpenTelemetry and the CLI.
These are ``TypedDict``s: plain dicts at run time (the log stays JSON), checked by mypy.

==================  ==============================  =========================================
entry               written by                      shape
==================  ==============================  =========================================
``decision``        deciders and selectors          :class:`DecisionEvidence`
``control``         any stage a decision chose      :class:`Control`
``pause``           a stage that paused             the pause payload (JSON)
``resume``          the resume commit               :class:`ResumeRecord`
``break``           a stage that called ``break_``  the reason (str, ``""`` when none given)
``failed_attempts`` a stage retried before commit   list of :class:`FailedAttempt`
``merge``           a fork's or selector's merge    :class:`MergeRecord`
``for_each``        a ``parallel_for_each`` merge   :class:`ForEachRecord`
``subflow``         ``subflow-input``/``-output``   the mounted chart's id
``reads_frame``     ``subflow-input``/``-output``   the frame the commit's reads came from
==================  ==============================  =========================================
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

__all__ = [
    "CommitDetail",
    "Condition",
    "Control",
    "DecisionEvidence",
    "FailedAttempt",
    "ForEachRecord",
    "ForkRecord",
    "MergeRecord",
    "ResumeRecord",
    "RuleEvidence",
    "as_detail",
]


class Control(TypedDict):
    """The decision that chose the branch a commit ran in: the decider's path, the key."""

    decider: str
    branch: str


class Condition(TypedDict, total=False):
    """One tested condition of a filter rule: the value read and whether it passed."""

    key: str
    op: str
    expected: Any
    actual: Any
    present: bool
    passed: bool
    error: str
    redacted: bool


class RuleEvidence(TypedDict, total=False):
    """One evaluated rule of ``decide``/``select``: its conditions or the keys a function
    rule read (``inputs``), and whether it matched."""

    rule: int
    then: str
    label: str | None
    conditions: list[Condition]
    inputs: list[dict[str, Any]]
    matched: bool
    error: str


class DecisionEvidence(TypedDict, total=False):
    """Why a decider chose ``chosen`` (or a selector ``selected``): the rules evaluated."""

    chosen: str
    selected: list[str]
    default: bool
    rules: list[RuleEvidence]


class ResumeRecord(TypedDict):
    """The value a paused run was resumed with."""

    value: Any


class FailedAttempt(TypedDict):
    """One attempt of a retried stage that raised before the attempt that committed."""

    type: str
    message: str


class MergeRecord(TypedDict):
    """How parallel branches were merged: the policy and the branches, in order."""

    policy: str | dict[str, list[str]]
    branches: list[str]


class ForEachRecord(TypedDict, total=False):
    """What a ``parallel_for_each`` ran: items given, the cap, how many ran and were
    dropped, and which branches wrote no result."""

    items: int
    max_branches: int
    ran: int
    dropped: int
    missing_results: list[int]


class ForkRecord(TypedDict):
    """Where a forked run came from (``Executor.fork_from``): the run and the number of its
    commits the fork continued after."""

    run_id: str
    k: int


CommitDetail = TypedDict(
    "CommitDetail",
    {
        "decision": DecisionEvidence,
        "control": Control,
        "pause": Any,
        "resume": ResumeRecord,
        "break": str,
        "failed_attempts": list[FailedAttempt],
        "merge": MergeRecord,
        "for_each": ForEachRecord,
        "subflow": str,
        "reads_frame": str,
        "forked_from": ForkRecord,
    },
    total=False,
)
"""Everything a commit's ``detail`` may hold (``break`` is a keyword, hence this form)."""


def as_detail(detail: Any) -> CommitDetail:
    """A commit's detail for reading: the detail itself, or ``{}`` when it has none."""
    if isinstance(detail, Mapping):
        return detail  # type: ignore[return-value]
    return {}
