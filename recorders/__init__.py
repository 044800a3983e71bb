"""trackway.recorders: built-in observers of runs.

``narrative()`` tells a run in plain English, ``metrics()`` times its stages, ``jsonl(path)``
writes a recording that ``load_recording`` turns back into a snapshot, and ``otel()`` sends
OpenTelemetry spans. Each is an ordinary recorder: pass it to ``Executor(chart, recorders=[...])``.
"""

from ._from_log import narrative_from_log as narrative_from_log
from ._jsonl import READABLE_FORMATS as READABLE_FORMATS
from ._jsonl import RECORDING_FORMAT as RECORDING_FORMAT
from ._jsonl import JsonlRecorder as JsonlRecorder
from ._jsonl import jsonl as jsonl
from ._jsonl import load_recording as load_recording
from ._jsonl import read_recording as read_recording
from ._jsonl import write_recording as write_recording
from ._metrics import Metrics as Metrics
from ._metrics import metrics as metrics
from ._narrative import Narrative as Narrative
from ._narrative import NarrativeEntry as NarrativeEntry
from ._narrative import narrative as narrative
from ._otel import OtelRecorder as OtelRecorder
from ._otel import otel as otel
from ._teller import Teller as Teller
from ._teller import Telling as Telling
from ._teller import register_teller as register_teller

__all__ = [
    "READABLE_FORMATS",
    "RECORDING_FORMAT",
    "JsonlRecorder",
    "Metrics",
    "Narrative",
    "NarrativeEntry",
    "OtelRecorder",
    "Teller",
    "Telling",
    "jsonl",
    "load_recording",
    "metrics",
    "narrative",
    "narrative_from_log",
    "otel",
    "read_recording",
    "register_teller",
    "write_recording",
]


def _public_names() -> None:
    """Show the recorders under their public module in reprs and tracebacks."""
    import inspect

    for name in __all__:
        obj = globals()[name]
        if inspect.isclass(obj) or inspect.isfunction(obj):
            obj.__module__ = __name__


_public_names()
