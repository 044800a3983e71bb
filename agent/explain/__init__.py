"""Self-explanation: ``.self_explain()`` gives the model read-only trace tools and a guide
(served after the system prompt) for "why" questions about its last completed run in the
conversation. Evidence binds at the end of a run, never mid-run, per conversation, in this
process and in the store; the tools serve only what the record holds, bounded, saying what
they cut. The agent's builder and the ``Agent`` take their parts of it from here
(``_building``, ``_explaining``), and so does a replay.

Imports: ``record``, ``loop`` and below (the ``runtime`` and ``rerun`` import this).
"""

from ._tools import NO_COMPLETED_RUN as NO_COMPLETED_RUN
from ._tools import TRACE_TOOLS as TRACE_TOOLS
