"""Live status and voice: the one status sentence per tool call a chat shows while a turn
runs (``.live_status(...)``, ``chat_bubble_live_status``), the templates that word it
(``.thinking_templates``), the third-person commentary of a replay
(``commentary_templates``) and the agent's ``app_name``. Observers only: they listen to
events and write no state.

Imports: ``explain`` and below (``runtime`` and above import this).
"""

__all__: list[str] = []
