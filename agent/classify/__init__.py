"""The classifier port: a second reader of one choice (which tool, which skill to enter),
asked by a stage and filed on the record, so a replay reads the answer instead of asking
again. ``Classifier`` is the interface; ``mock_classifier`` and ``provider_classifier`` are
its adapters.

Imports: ``providers`` and ``messages`` (and the engine).
"""

from ._mock import MockClassifier as MockClassifier
from ._mock import MockClassifierExhaustedError as MockClassifierExhaustedError
from ._mock import mock_classifier as mock_classifier
from ._port import Classifier as Classifier
from ._port import ClassifierError as ClassifierError
from ._port import ClassifyAnswer as ClassifyAnswer
from ._port import ClassifyCriterion as ClassifyCriterion
from ._port import ClassifyRequest as ClassifyRequest
from ._provider import ProviderClassifier as ProviderClassifier
from ._provider import provider_classifier as provider_classifier

__all__ = [
    "Classifier",
    "ClassifierError",
    "ClassifyAnswer",
    "ClassifyCriterion",
    "ClassifyRequest",
    "MockClassifier",
    "MockClassifierExhaustedError",
    "ProviderClassifier",
    "mock_classifier",
    "provider_classifier",
]
