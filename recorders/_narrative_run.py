"""What the narrative keeps per run: the frame each chart's stages are told in (by a teller
or stage by stage), and the run's entries with the state of its stages in flight."""

from __future__ import annotations

from typing import Any, NamedTuple

from trackway.engine import ErrorInfo

from ._narrative_text import NarrativeEntry
from ._teller import Teller

__all__ = ["Frame", "Run"]


class Frame(NamedTuple):
    """A chart's state in the run (the run's own, an isolated subflow's): the chart, and the
    teller that tells its stages (``None``: told stage by stage)."""

    chart_id: str
    teller: Teller | None


class Run:
    """What the narrative keeps per run: its entries, and the state of stages in flight."""

    __slots__ = (
        "choices",
        "entries",
        "errors",
        "frames",
        "mounts",
        "open",
        "outputs",
        "reads",
        "resumes",
        "step",
    )

    def __init__(self) -> None:
        self.entries: list[NarrativeEntry] = []
        self.step = 0  # stages told so far: numbering goes on across a resume
        # "" and each isolated mount -> its frame (kept across a resume: paths are unique)
        self.frames: dict[str, Frame] = {}
        # stages in flight; a stage a teller tells (from its commit) maps to its name
        self.open: dict[str, str | None] = {}
        self.reads: dict[str, set[str]] = {}
        self.errors: dict[str, set[ErrorInfo]] = {}
        self.mounts: set[str] = set()
        # prefix -> (entry index, chosen key, evidence) of a decision awaiting its branch name
        self.choices: dict[str, tuple[int, str, Any]] = {}
        self.resumes: dict[str, str] = {}
        self.outputs: dict[str, list[NarrativeEntry]] = {}

    def reset_flight(self) -> None:
        self.open.clear()
        self.reads.clear()
        self.mounts.clear()
        self.choices.clear()
        self.resumes.clear()
        self.outputs.clear()
