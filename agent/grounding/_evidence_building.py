"""The part of the agent's builder that declares grounded answers:
``.names_and_numbers_from_evidence(...)``, the evidence gate."""

from __future__ import annotations

from typing import Any, Self

from trackway.engine.core._keywords import checked_keywords

from ..grounding._gate import DEFAULT_MAX_CORPUS_TOKENS, POSTURES, EvidenceGate
from ..messages._errors import AgentBuildError

__all__ = ["GroundingBuilding"]


class GroundingBuilding:
    """``.names_and_numbers_from_evidence(...)``."""

    _evidence: EvidenceGate | None

    def _take_grounding_options(self) -> None:
        self._evidence = None

    @checked_keywords
    def names_and_numbers_from_evidence(
        self,
        *,
        posture: str = "assist",
        max_corpus_tokens: int | None = DEFAULT_MAX_CORPUS_TOKENS,
    ) -> Self:
        """Check every name and number of the final answer against what the tools wrote in
        this turn (the evidence gate; the value rule is in the grounded-answers guide).

        ``posture``: ``"assist"`` ships the answer and records the values no result carried
        (``agent.unsupported_values()``); ``"guard"`` first asks the model once to revise
        them, then ships with the record; ``"rails"`` asks once, then withholds the answer
        and ``run`` raises :class:`~trackway.agent.UnsupportedValuesError`.
        ``max_corpus_tokens`` bounds the corpus (characters / 4; ``None``: no bound); a
        turn whose results pass it is only flagged, whatever the posture, and the verdict
        says so. Recorded in ``settings["evidence"]``, so a replay needs no code for it."""
        if posture not in POSTURES:
            raise AgentBuildError(
                f"names_and_numbers_from_evidence(posture={posture!r}): use 'assist' (flag "
                "the values), 'guard' (ask the model once to revise, then flag) or 'rails' "
                "(ask once, then withhold the answer and raise UnsupportedValuesError)"
            )
        limit: Any = max_corpus_tokens
        bad = isinstance(limit, bool) or not isinstance(limit, int) or limit < 1
        if limit is not None and bad:
            raise AgentBuildError(
                f"names_and_numbers_from_evidence(max_corpus_tokens={limit!r}): use a whole "
                "number of tokens >= 1 (the corpus is measured as characters / 4), or None "
                "for no ceiling"
            )
        if self._evidence is not None:
            raise AgentBuildError(
                "names_and_numbers_from_evidence(...) was called twice; an agent has one "
                "evidence gate: call it once with the posture and ceiling you want"
            )
        self._evidence = EvidenceGate(posture, limit)
        return self
