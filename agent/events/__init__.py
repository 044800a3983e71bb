"""The event catalogue: every event name trackway emits, with its payload's TypedDict and a
one-line summary (``EVENTS``, ``event_catalogue()``), the generated events page, and
``EventAudit``, which checks heard events against it (tests only: nothing on the emit path
reads the registry).

Adding an event is a TypedDict and one ``event(name, payload, summary)`` line in the module
of its domain: ``_loop_events`` (agent, stream, cost, validation), ``_tool_events`` (tools,
tool_choice, credential, artifacts), ``_context_events`` (context, findings, memory, skill,
time, middleware, composition), ``_map_events`` (ontology, the composition patterns).

Imports: the engine only (the bottom layer of the agent: every layer above may read it).
"""

from . import _context_events, _loop_events, _map_events, _tool_events  # noqa: F401 (register)
from ._audit import EventAudit as EventAudit
from ._docs import render_events_page as render_events_page
from ._registry import EVENTS as EVENTS
from ._registry import MEMBER_KEY as MEMBER_KEY
from ._registry import EventSpec as EventSpec
from ._registry import event as event
from ._registry import event_catalogue as event_catalogue
from ._registry import payload_problems as payload_problems

__all__ = [
    "EVENTS",
    "MEMBER_KEY",
    "EventAudit",
    "EventSpec",
    "event",
    "event_catalogue",
    "payload_problems",
    "render_events_page",
]
