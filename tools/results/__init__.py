"""What a tool result says it covered: ``absent``, ``coverage``, ``described_result``, periods, the
limits of an answer, canonical notes, and a call's outcome.

Imports: ``define`` and the engine.
"""
