"""Skills, instructions and the skill graph: behaviour added by declaration. The declarations
are data; the choices made from them (which skill is active, which instructions are served)
are pure functions of committed state, so ``served_at`` rebuilds every request and a replay
needs neither the model nor a classifier.

Imports: ``classify``, ``providers`` and ``messages`` (and the engine and tools).
"""

from ._declare import ALWAYS_SERVED_TOOLS as ALWAYS_SERVED_TOOLS
from ._declare import STRICTNESS as STRICTNESS
from ._declare import EntryRequest as EntryRequest
from ._declare import EntryScorer as EntryScorer
from ._declare import EntryScoring as EntryScoring
from ._declare import Instruction as Instruction
from ._declare import Route as Route
from ._declare import Skill as Skill
from ._declare import SkillGraph as SkillGraph
from ._declare import define_instruction as define_instruction
from ._declare import define_skill as define_skill
from ._declare import propose_transition as propose_transition
from ._declare import require_instruction as require_instruction
from ._declare import route as route
from ._declare import skill_graph as skill_graph
from ._scorer import CLASSIFIER_SCORER_UNAVAILABLE as CLASSIFIER_SCORER_UNAVAILABLE
from ._scorer import ENTRY_QUESTION as ENTRY_QUESTION
from ._scorer import ClassifierScorer as ClassifierScorer
from ._scorer import classifier_scorer as classifier_scorer

__all__ = [
    "ALWAYS_SERVED_TOOLS",
    "CLASSIFIER_SCORER_UNAVAILABLE",
    "ENTRY_QUESTION",
    "STRICTNESS",
    "ClassifierScorer",
    "EntryRequest",
    "EntryScorer",
    "EntryScoring",
    "Instruction",
    "Route",
    "Skill",
    "SkillGraph",
    "classifier_scorer",
    "define_instruction",
    "define_skill",
    "propose_transition",
    "require_instruction",
    "route",
    "skill_graph",
]
