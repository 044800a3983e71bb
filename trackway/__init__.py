"""trackway: explainable flowcharts and LLM agents on one commit log.

The public API for flow authors. Imports flow one way: ``engine`` <- ``recorders`` <- ``tools``
<- ``agent`` <- this facade; nothing inside imports the facade.
"""

from trackway.engine import *  # noqa: F403
from trackway.engine import __all__ as _engine_all

__version__ = "0.1.0"

__all__ = [*_engine_all, "__version__"]  # noqa: PLE0604
