"""trackway.tools.time: times read the person's way, as pure functions. A ``TimeReader``'s
zone-less parts expanded into every candidate instant (date orders, am/pm, DST gaps and
folds, through ``zoneinfo``), the policy that settles them, the checks on a time ask's answer
(``instant``, ``time-range``, ``zone``) with the sentences that refuse one, and the same asks
as MCP elicitations.

Imports: the engine only (``define``, ``results``, ``bridges`` and the agent import this).
"""

from ._ask import DEFAULT_TIME_ASK_MESSAGES as DEFAULT_TIME_ASK_MESSAGES
from ._ask import TIME_FORMATS as TIME_FORMATS
from ._ask import check_messages as check_messages
from ._ask import check_time_answer as check_time_answer
from ._ask import format_schema as format_schema
from ._candidates import DATE_ORDERS as DATE_ORDERS
from ._candidates import TimeReader as TimeReader
from ._candidates import candidates_of as candidates_of
from ._candidates import wall_instants as wall_instants
from ._clock import Clock as Clock
from ._clock import InstantError as InstantError
from ._clock import UnknownZoneError as UnknownZoneError
from ._clock import instant_text as instant_text
from ._clock import offset_label as offset_label
from ._clock import parse_instant as parse_instant
from ._clock import zone_of as zone_of
from ._mcp import answer_from_elicitation as answer_from_elicitation
from ._mcp import elicitation_of as elicitation_of
from ._policy import DEFAULT_POLICY as DEFAULT_POLICY
from ._policy import check_policy as check_policy
from ._policy import settle as settle
from ._reading import time_readings as time_readings

__all__ = [
    "DATE_ORDERS",
    "DEFAULT_POLICY",
    "DEFAULT_TIME_ASK_MESSAGES",
    "TIME_FORMATS",
    "Clock",
    "InstantError",
    "TimeReader",
    "UnknownZoneError",
    "answer_from_elicitation",
    "candidates_of",
    "check_messages",
    "check_policy",
    "check_time_answer",
    "elicitation_of",
    "format_schema",
    "instant_text",
    "offset_label",
    "parse_instant",
    "settle",
    "time_readings",
    "wall_instants",
    "zone_of",
]
