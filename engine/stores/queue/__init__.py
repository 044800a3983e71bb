"""The PostgreSQL run queue: submitted runs, the workers' claims under a lease, their
fencing, and ``LISTEN``/``NOTIFY`` so an idle worker hears new work at once.

``PostgresStore`` mixes the queue in (``PgRunQueue``); ``engine/scale``'s ``Worker`` drives
it. Imports: ``core`` and ``observe``.
"""
