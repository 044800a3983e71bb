"""An agent's memory across runs: what ``.memory(define_memory(...))`` declares (the last
turns, a running summary, facts), the scope it is kept under (who the run is for), and the
two stages that recall it before a turn and write the turn after it. What was recalled and
what was written are committed, so ``served_at`` rebuilds every request and a replay reads
both back without a store.

Imports: ``offer``, ``context`` and below (the ``loop``, the ``runtime`` and ``rerun``
import this).
"""

from ._define import KINDS as KINDS
from ._define import MemoryDefinition as MemoryDefinition
from ._define import MemoryTurn as MemoryTurn
from ._define import define_memory as define_memory
