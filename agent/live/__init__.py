"""Live status and voice: the one status sentence per tool call a chat shows while a turn
runs (``.live_status(...)``, ``chat_bubble_live_status``), the templates that word it
(``.thinking_templates``), the third-person commentary of a replay
(``commentary_templates``) and the agent's ``app_name``. Observers only: they listen to
events and write no state.

Imports: ``explain`` and below (``runtime`` and above import this).
"""

from ._commentary import commentary as commentary
from ._status import MESSAGE_LIMIT as MESSAGE_LIMIT
from ._status import ChatBubbleLiveStatus as ChatBubbleLiveStatus
from ._status import LiveStatusStrategy as LiveStatusStrategy
from ._status import StatusLine as StatusLine
from ._status import chat_bubble_live_status as chat_bubble_live_status
from ._status import status_line as status_line
from ._templates import COMMENTARY_TEMPLATES as COMMENTARY_TEMPLATES
from ._templates import DEFAULT_APP_NAME as DEFAULT_APP_NAME
from ._templates import THINKING_TEMPLATES as THINKING_TEMPLATES
from ._templates import Voice as Voice

__all__ = [
    "COMMENTARY_TEMPLATES",
    "DEFAULT_APP_NAME",
    "MESSAGE_LIMIT",
    "THINKING_TEMPLATES",
    "ChatBubbleLiveStatus",
    "LiveStatusStrategy",
    "StatusLine",
    "Voice",
    "chat_bubble_live_status",
    "commentary",
    "status_line",
]
