"""Answers that show their ground: the evidence gate (every name and number in an answer
found in a tool result of the turn), answer validation under resource limits, claim
contracts, and the assessment folded from the committed record. Everything here reads
committed state; a verdict is committed, so a recording folds the same way in another
process.

Imports: ``middleware``, ``memory``, ``offer``, ``context`` and below (the ``loop``,
``runtime`` and ``rerun`` import this).
"""

from ._assess import AnswerAssessment as AnswerAssessment
from ._assess import assess_answer as assess_answer
from ._claims import DeclaredClaim as DeclaredClaim
from ._claims import claim as claim
from ._validation import AnswerValidationLimits as AnswerValidationLimits

__all__ = [
    "AnswerAssessment",
    "AnswerValidationLimits",
    "DeclaredClaim",
    "assess_answer",
    "claim",
]
