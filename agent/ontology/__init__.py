"""The agent's domain map, ``.ontology(map, ask=)``: ``define_ontology`` declares what each term
is, how terms relate, which source holds a term and which tool reads it there; every model call
is served one fixed system piece (``ontology_piece``) composed from the run constant
``ontology``; ``score_absence`` measures "no data" answers; ``from_skos``/``read_skos``/
``to_skos`` bring a SKOS JSON-LD taxonomy in and out (the ``skos`` extra, rdflib).

Imports: ``skills``, ``messages`` and below (``context``, ``loop``, ``runtime`` and ``rerun``
import this).
"""

from ._absence import AbsenceExpectation as AbsenceExpectation
from ._absence import AbsenceScore as AbsenceScore
from ._absence import AbsenceSummary as AbsenceSummary
from ._absence import AbsenceTurn as AbsenceTurn
from ._absence import score_absence as score_absence
from ._absence import summarize_absence as summarize_absence
from ._building import OntologyBuilding as OntologyBuilding
from ._piece import ONTOLOGY_ASKS as ONTOLOGY_ASKS
from ._piece import ONTOLOGY_INSTRUCTION as ONTOLOGY_INSTRUCTION
from ._piece import ONTOLOGY_INSTRUCTION_ID as ONTOLOGY_INSTRUCTION_ID
from ._piece import ONTOLOGY_PIECE_LIMITS as ONTOLOGY_PIECE_LIMITS
from ._piece import OntologyAsk as OntologyAsk
from ._piece import ontology_piece as ontology_piece
from ._piece import served_ontology as served_ontology
from ._plan import OntologyPlan as OntologyPlan
from ._skos import SKOS_ERROR_CODES as SKOS_ERROR_CODES
from ._skos import SKOS_IRI_BASE as SKOS_IRI_BASE
from ._skos import SKOS_NS as SKOS_NS
from ._skos import TRACKWAY_NS as TRACKWAY_NS
from ._skos import SkosConcept as SkosConcept
from ._skos import SkosError as SkosError
from ._skos import SkosScheme as SkosScheme
from ._skos import from_skos as from_skos
from ._skos import read_skos as read_skos
from ._skos import to_skos as to_skos
from ._spec import ONTOLOGY_LIMITS as ONTOLOGY_LIMITS
from ._spec import Ontology as Ontology
from ._spec import OntologyError as OntologyError
from ._spec import define_ontology as define_ontology
from ._spec import ontology_hash as ontology_hash

__all__ = [
    "ONTOLOGY_ASKS",
    "ONTOLOGY_INSTRUCTION",
    "ONTOLOGY_INSTRUCTION_ID",
    "ONTOLOGY_LIMITS",
    "ONTOLOGY_PIECE_LIMITS",
    "SKOS_ERROR_CODES",
    "SKOS_IRI_BASE",
    "SKOS_NS",
    "TRACKWAY_NS",
    "AbsenceExpectation",
    "AbsenceScore",
    "AbsenceSummary",
    "AbsenceTurn",
    "Ontology",
    "OntologyAsk",
    "OntologyBuilding",
    "OntologyError",
    "OntologyPlan",
    "SkosConcept",
    "SkosError",
    "SkosScheme",
    "define_ontology",
    "from_skos",
    "ontology_hash",
    "ontology_piece",
    "read_skos",
    "score_absence",
    "served_ontology",
    "summarize_absence",
    "to_skos",
]
