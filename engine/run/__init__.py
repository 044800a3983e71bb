"""Running a chart in one process: the tracked scope, the run context with its frames and strands,
recorder dispatch, one stage into one commit, the walker and each node kind (deciders,
selectors, parallel forks, ``parallel_for_each``, subflows), merges, ``decide`` / ``select``,
release between stages, the pause cursor, and which build is running.

Imports: ``core``, ``observe`` and ``chart``. Where it needs a store or a stream it takes the
``Protocol`` it defines (``_sinks``: a sink, a commit tap), so stores and the executor sit
above it.

Holds 15 modules because the scope, the context, one stage and the walker with its node kinds
call one another on every stage (a cycle of type references the layer keeps inside itself),
and half of them are compiled together by mypyc (docs/compiled.md); split, they would need
protocols on the hot path.
"""
