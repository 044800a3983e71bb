"""The agent's time layer, ``.time(zone=, reader=, policy=, messages=)``: every run declares
its clock ``{now, zone}`` (or the builder's zone), committed as a clock row per turn and a
dispatch-time row per call; period lines are shown in the person's zone; a ``TimeReader``'s
mentions are expanded and settled (or asked) once per person's message; time asks check
their answers.

Imports: ``offer``, ``context`` and below (the ``loop``, ``runtime`` and ``rerun`` import
this).
"""

from ._building import TimeBuilding as TimeBuilding
from ._layer import TIME_ROWS as TIME_ROWS
from ._layer import TimeLayer as TimeLayer
from ._record import TimeRecord as TimeRecord

__all__ = ["TIME_ROWS", "TimeBuilding", "TimeLayer", "TimeRecord"]
