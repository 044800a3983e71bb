"""Reading a run back from its record alone: what a run is read from (``Record``; the ``Runner``
protocol an agent or a composition meets), ``served_at``, receipts, saving and loading
recordings, the transcript, and how narratives and causal traces read agent runs. Running a
record again is ``rerun``'s, above the runtime.

Imports: every agent subpackage below it (``messages`` to ``loop``); never ``runtime``, which
builds on it: what it needs of an agent is the ``Runner`` protocol.
"""
