"""What each model call is served and what it costs: the agent's definition (:class:`AgentConfig`),
context windowing and its removal planner, the findings ledger, the cost ledger, request
assembly, and the fast argument check the definition precompiles.

Imports: ``messages`` and ``providers``.
"""
