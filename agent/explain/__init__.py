"""Self-explanation: ``.self_explain()`` gives the model read-only trace tools and a skill
body for "why" questions about its last completed run in the conversation. Evidence binds at
the end of a run, never mid-run; the tools serve only what the record holds.

Imports: ``record``, ``loop`` and below (the ``runtime`` and ``rerun`` import this).
"""

from ._tools import NO_COMPLETED_RUN as NO_COMPLETED_RUN
from ._tools import TRACE_TOOLS as TRACE_TOOLS
