"""Hosting an agent over A2A with the official ``a2a-sdk``: its agent card, tasks and
streaming, mapped onto trackway runs in a store (``pip install 'trackway[a2a]'``).

Imports: ``trackway.serve`` and below.
"""

from ._app import a2a_app as a2a_app
from ._app import a2a_routes as a2a_routes
from ._caller import task_owner as task_owner
from ._card import agent_card as agent_card
from ._conversation import RUN_ID_KEY as RUN_ID_KEY
from ._executor import A2AExecutor as A2AExecutor
from ._executor import status_line as status_line

__all__ = [
    "RUN_ID_KEY",
    "A2AExecutor",
    "a2a_app",
    "a2a_routes",
    "agent_card",
    "status_line",
    "task_owner",
]
