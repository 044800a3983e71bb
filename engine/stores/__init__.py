"""Where runs live beyond the process: checkpoints as documents, the store interface, the in-
memory, SQLite and PostgreSQL stores (one SQL shape), group commit, lease fencing, sealed rows,
damaged rows, paused runs, and the PostgreSQL run queue with its claims.

Imports: ``core``, ``observe``, ``chart`` and ``run``.
"""
