"""trackway.tools.time: times read the person's way, as pure functions. A ``TimeReader``'s
zone-less parts expanded into every candidate instant (date orders, am/pm, DST gaps and
folds, through ``zoneinfo``), the policy that settles them, the checks on a time ask's answer
(``instant``, ``time-range``, ``zone``) with the sentences that refuse one, and the same asks
as MCP elicitations.

Imports: the engine only (``define``, ``results``, ``bridges`` and the agent import this).
"""

__all__: list[str] = []
