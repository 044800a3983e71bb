"""The agent's domain map, ``.ontology(map, ask=)``: ``define_ontology`` declares what each term
is, how terms relate, which source holds a term and which tool reads it there; every model call
is served one fixed system piece (``ontology_piece``) composed from the run constant
``ontology``; ``score_absence`` measures "no data" answers; ``from_skos``/``read_skos``/
``to_skos`` bring a SKOS JSON-LD taxonomy in and out (the ``skos`` extra, rdflib).

Imports: ``skills``, ``messages`` and below (``context``, ``loop``, ``runtime`` and ``rerun``
import this).
"""

from ._building import OntologyBuilding as OntologyBuilding
from ._piece import ONTOLOGY_ASKS as ONTOLOGY_ASKS
from ._piece import ONTOLOGY_INSTRUCTION as ONTOLOGY_INSTRUCTION
from ._piece import ONTOLOGY_INSTRUCTION_ID as ONTOLOGY_INSTRUCTION_ID
from ._piece import ONTOLOGY_PIECE_LIMITS as ONTOLOGY_PIECE_LIMITS
from ._piece import OntologyAsk as OntologyAsk
from ._piece import ontology_piece as ontology_piece
from ._piece import served_ontology as served_ontology
from ._plan import OntologyPlan as OntologyPlan
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
    "Ontology",
    "OntologyAsk",
    "OntologyBuilding",
    "OntologyError",
    "OntologyPlan",
    "define_ontology",
    "ontology_hash",
    "ontology_piece",
    "served_ontology",
]
