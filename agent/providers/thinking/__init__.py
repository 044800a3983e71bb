"""A user function that normalises the reasoning each model answer carries
(``.thinking_handler(fn)``): the handler, the ``thinking`` stage that runs it after
``call-llm`` and the builder method that mounts it."""

from ._building import ThinkingBuilding as ThinkingBuilding
from ._handler import NORMALISED_KEY as NORMALISED_KEY
from ._handler import ThinkingHandler as ThinkingHandler
from ._handler import recorded_handler as recorded_handler
from ._handler import thinking_stages as thinking_stages

__all__ = [
    "NORMALISED_KEY",
    "ThinkingBuilding",
    "ThinkingHandler",
    "recorded_handler",
    "thinking_stages",
]
