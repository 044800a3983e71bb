"""Reading a run back from its record alone: ``served_at``, receipts, ``replay`` of agents and
compositions, the transcript, and how narratives and causal traces read agent runs.

Imports: every agent subpackage below it; the top agent layer.
"""
