"""Running a record again: ``replay`` of agents and compositions with the recorded model answers,
tool results and decisions, never a live model or tool, checked commit by commit against the
recording; and the runner a replay rebuilds from a recording when it is given none.

Named ``rerun``, not ``replay``: a subpackage of that name would shadow the public function
``trackway.agent.replay`` for readers of the package (the API reference, ``import ... as``).

Imports: every agent subpackage below it (``messages`` to ``compose``).
"""
