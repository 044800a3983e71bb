"""Skills, instructions and the skill graph: behaviour added by declaration. The declarations
are data; the choices made from them (which skill is active, which instructions are served)
are pure functions of committed state, so ``served_at`` rebuilds every request and a replay
needs neither the model nor a classifier.

Imports: ``classify``, ``providers`` and ``messages`` (and the engine and tools).
"""
