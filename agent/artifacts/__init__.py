"""The agent's side of artifacts: placement (a result over ``max_inline_chars`` is stored
and the model reads its ticket, after the tool's ceiling and before the agent's cap) and
redemption (a ``wants`` argument's ticket resolved under the run's scope before the tool
runs, or a teaching refusal). Tickets minted and redeemed are committed, so ``served_at``
and ``replay`` need only the record.

Imports: ``offer``, ``context`` and below (the ``loop``, ``runtime`` and ``rerun`` import
this).
"""

from ._plan import DEFAULT_MAX_INLINE_CHARS as DEFAULT_MAX_INLINE_CHARS
from ._recording import recorded_artifacts as recorded_artifacts

__all__ = ["DEFAULT_MAX_INLINE_CHARS", "recorded_artifacts"]
