"""``classifier_scorer``: a skill graph's entries ranked by a classifier. On a classifier
failure it ranks nothing, so the cold-start entry is picked rather than a guess."""

from __future__ import annotations

from ..classify._port import Classifier, ClassifierError, ClassifyCriterion, ClassifyRequest
from ..messages._errors import AgentBuildError
from ._declare import EntryRequest, EntryScoring

__all__ = [
    "CLASSIFIER_SCORER_UNAVAILABLE",
    "ENTRY_QUESTION",
    "ClassifierScorer",
    "classifier_scorer",
]

ENTRY_QUESTION = "trackway.skill-entry"
"""The ``question_id`` a classifier scorer asks."""
CLASSIFIER_SCORER_UNAVAILABLE = "classifier-unavailable"
"""The scorer name an entry row carries when the classifier failed (the cold start took over)."""


class ClassifierScorer:
    """An :class:`~trackway.agent.EntryScorer` whose ranking is the classifier's."""

    def __init__(self, classifier: Classifier) -> None:
        self.classifier = classifier
        self.name = f"classifier:{classifier.name}"

    async def score(self, request: EntryRequest) -> EntryScoring:
        ask = ClassifyRequest(
            ENTRY_QUESTION,
            "Which of these skills should handle the person's message?",
            tuple(ClassifyCriterion(sid, title) for sid, title in request.entries),
            {"message": request.message},
        )
        try:
            answer = await self.classifier.classify(ask)
        except ClassifierError:
            return EntryScoring(CLASSIFIER_SCORER_UNAVAILABLE)
        ids = {sid for sid, _ in request.entries}
        ranking = tuple(
            sorted(((n, float(s)) for n, s in answer.ranked if n in ids), key=lambda p: -p[1])
        )
        chosen = answer.chosen if answer.chosen in ids else None
        return EntryScoring(self.name, ranking, chosen)


def classifier_scorer(classifier: Classifier) -> ClassifierScorer:
    """Rank a skill graph's entries with ``classifier`` (one choice question per turn)."""
    if not isinstance(classifier, Classifier):
        raise AgentBuildError(
            f"classifier_scorer({classifier!r}): pass a Classifier (mock_classifier(...), "
            "provider_classifier(provider) or your own)"
        )
    return ClassifierScorer(classifier)
