"""How ``.findings()`` serves the ledger: the checked options of the door, and the run
constant a run records of them (``settings["findings"]``), so a replay and ``served_at``
serve the same bytes from the record alone.

``settings["findings"]`` is ``True`` in a recording made before the ledger piece existed
(the reserved argument and tickets only: such a recording replays without the piece), and a
dict from this version on: ``{"piece": True}``, plus ``"serve": "ledger-only"``,
``"answer_ask": "quote-facts"`` and ``"judge": name`` only when they were chosen, so the
defaults record what they always recorded beside the piece.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..messages._errors import AgentBuildError

__all__ = [
    "ANSWER_ASKS",
    "FINDINGS_SERVES",
    "FindingsPlan",
    "findings_options",
    "ticketed_standings",
]

FINDINGS_SERVES = ("ledger-and-facts", "ledger-only")
"""``serve=``: facts stay verbatim beside the piece (the default), or become tickets too."""
ANSWER_ASKS = ("none", "quote-facts")
"""``answer_ask=``: nothing more (the default), or a short ask at the end of the piece."""


@dataclass(frozen=True)
class FindingsPlan:
    """The checked options of ``.findings()`` (keyword-only at the door, so a new option is
    one more field here and one more key in :meth:`record`)."""

    serve: str = "ledger-and-facts"
    answer_ask: str = "none"
    judge: Any = None
    """A :class:`~trackway.agent.classify.Classifier`, or ``None``."""
    piece: bool = True
    """``False`` only for a replay of a recording made before the piece existed."""

    def record(self) -> Any:
        """The run constant: ``True`` for a pre-piece recording's replay, else a dict with
        only what differs from the defaults beside ``piece``."""
        if not self.piece:
            return True
        out: dict[str, Any] = {"piece": True}
        if self.serve != "ledger-and-facts":
            out["serve"] = self.serve
        if self.answer_ask != "none":
            out["answer_ask"] = self.answer_ask
        if self.judge is not None:
            out["judge"] = str(getattr(self.judge, "name", type(self.judge).__name__))
        return out


def _choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in allowed:
        shown = ", ".join(repr(a) for a in allowed)
        raise AgentBuildError(
            f"findings({name}={value!r}): use one of {shown} (the first is the default)"
        )
    return value


def findings_options(serve: Any, answer_ask: Any, judge: Any) -> FindingsPlan:
    """The door's options, checked: a refusal names the option and what it takes."""
    from ..classify._port import Classifier

    if judge is not None and not isinstance(judge, Classifier):
        raise AgentBuildError(
            f"findings(judge={type(judge).__name__}): a judge is a Classifier (a `name` and an "
            "async `classify(request)`), e.g. mock_classifier([...]) or "
            "provider_classifier(provider, model)"
        )
    return FindingsPlan(
        serve=_choice("serve", serve, FINDINGS_SERVES),
        answer_ask=_choice("answer_ask", answer_ask, ANSWER_ASKS),
        judge=judge,
    )


def ticketed_standings(recorded: Any) -> tuple[str, ...]:
    """The standings served as a ticket under the recorded ``settings["findings"]``."""
    if isinstance(recorded, Mapping) and recorded.get("serve") == "ledger-only":
        return ("fact", "noise", "ruled-out")
    return ("noise", "ruled-out")
