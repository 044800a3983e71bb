"""Stage paths: the one home of the grammar that names every commit's place in a run.

A path is segments joined by ``/``; a segment is a name (a stage id, a branch key, ``merge``
or ``output``), then optionally ``#<n>`` (the execution index the strand's counter gave out)
and ``:resume<n>`` (the n-th resume of a paused stage)::

    route#2                     the third execution on the root strand, a top-level stage
    review#4/check#5            a stage inside the isolated subflow mounted at review#4
    fan#1/a/step#0              a chart branch "a" of the fork fan#1
    fan#1/b#0                   a function branch "b" of the same fork
    pick#3/merge                the merge commit of the selector pick#3
    approve#2:resume1           the first resume of the stage paused at approve#2

Paths are plain ``str`` on the hot path (``join`` formats them); readers parse them with
:meth:`StagePath.parse` instead of splitting strings by hand.
"""

from __future__ import annotations

import os
import random
import re
import time
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "Segment",
    "StagePath",
    "depth_of",
    "is_name",
    "join",
    "name_fault",
    "new_run_id",
    "parent_of",
    "resumed",
]

_SEGMENT = re.compile(r"(?P<name>[^/#:]+)(?:#(?P<index>\d+))?(?::resume(?P<resume>\d+))?")
_NOT_IN_NAMES = re.compile(r"[/#:\s\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def is_name(text: object) -> bool:
    """True if ``text`` can be a path segment's name (a stage id or branch key): a non-empty
    str without the grammar's ``/``, ``#`` and ``:``, whitespace, control characters (a NUL
    makes every write of a run fail on PostgreSQL, which keeps paths in text columns) or lone
    surrogates (not valid Unicode text)."""
    return isinstance(text, str) and bool(text) and _NOT_IN_NAMES.search(text) is None


def name_fault(text: object) -> str | None:
    """Why ``text`` cannot be a path segment's name (``None`` if :func:`is_name`)."""
    if not isinstance(text, str):
        return f"it is not a str but {type(text).__name__}"
    if not text:
        return "it is empty"
    m = _NOT_IN_NAMES.search(text)
    if m is None:
        return None
    char = m[0]
    kind = {"Cc": "the control character", "Cs": "the lone surrogate"}.get(
        unicodedata.category(char), "the path separator" if char in "/#:" else "the space"
    )
    return f"it holds {kind} {char!r} at index {m.start()}"


@dataclass(frozen=True, slots=True)
class Segment:
    """One step of a path: ``name``, its execution ``index`` (if any), its ``resume`` count."""

    name: str
    index: int | None = None
    resume: int = 0

    def __str__(self) -> str:
        text = self.name if self.index is None else f"{self.name}#{self.index}"
        return text if not self.resume else f"{text}:resume{self.resume}"


def join(prefix: str, name: str, index: int | None = None) -> str:
    """Format a child path: ``prefix`` (``""`` or ending in ``/``), ``name``, ``#index``."""
    return f"{prefix}{name}" if index is None else f"{prefix}{name}#{index}"


def resumed(path: str, count: int) -> str:
    """The path of the ``count``-th resume of the stage paused at ``path``."""
    return f"{path}:resume{count}"


def parent_of(path: str) -> str:
    """Everything before the last ``/`` (``""`` for a top-level path)."""
    return path[: path.rfind("/")] if "/" in path else ""


def depth_of(path: str) -> int:
    """How many mounts and branches a path is nested in (0 at the top level)."""
    return path.count("/")


@dataclass(frozen=True, slots=True)
class StagePath:
    """A parsed stage path. ``str(p)`` formats it back exactly."""

    segments: tuple[Segment, ...]

    @staticmethod
    def parse(text: str) -> StagePath:
        """Parse ``text``; a malformed path raises ``ValueError`` naming the bad segment."""
        return _parse(text)

    # The grammar on plain strings, for readers that see every event (recorders): the same
    # answers as parsing, without building a StagePath. The functions themselves, so a
    # call is one frame.
    join = staticmethod(join)
    parent_of = staticmethod(parent_of)
    depth_of = staticmethod(depth_of)

    @staticmethod
    def prefix_of(path: str) -> str:
        """The strand prefix a path was formatted under: everything up to its last ``/``."""
        return path[: path.rfind("/") + 1]

    def __str__(self) -> str:
        return "/".join(map(str, self.segments))

    @property
    def last(self) -> Segment:
        return self.segments[-1]

    @property
    def name(self) -> str:
        """The last segment's name (a stage id, a branch key, ``merge`` or ``output``)."""
        return self.segments[-1].name

    @property
    def index(self) -> int | None:
        """The last segment's execution index."""
        return self.segments[-1].index

    @property
    def resume(self) -> int:
        return self.segments[-1].resume

    @property
    def top(self) -> Segment:
        """The first segment: the top-level node the path lies under."""
        return self.segments[0]

    @property
    def depth(self) -> int:
        return len(self.segments) - 1

    @property
    def parent(self) -> StagePath | None:
        """The path of the mount or branch this one sits in (``None`` at the top level)."""
        return StagePath(self.segments[:-1]) if len(self.segments) > 1 else None

    def base(self) -> StagePath:
        """This path without a ``:resumeN`` suffix: the stage that paused."""
        if not self.segments[-1].resume:
            return self
        last = self.segments[-1]
        return StagePath((*self.segments[:-1], Segment(last.name, last.index)))

    def child(self, name: str, index: int | None = None) -> StagePath:
        return StagePath((*self.segments, Segment(name, index)))


@lru_cache(maxsize=4096)
def _parse(text: str) -> StagePath:
    if not isinstance(text, str) or not text:
        raise ValueError(f"a stage path is a non-empty str, got {text!r}")
    segments = []
    for part in text.split("/"):
        m = _SEGMENT.fullmatch(part)
        if m is None:
            raise ValueError(f"stage path {text!r}: segment {part!r} is not name[#index][:resumeN]")
        index = m["index"]
        resume = m["resume"]
        segments.append(Segment(m["name"], None if index is None else int(index), int(resume or 0)))
    return StagePath(tuple(segments))


def new_run_id() -> str:
    """A run id that sorts by start time: ``run-<ns since epoch, hex>-<random>``. The root of
    every path above; here, below the executor that starts runs and the queue that submits
    them, so both name runs the same way."""
    return f"run-{time.time_ns():016x}-{_suffixes.getrandbits(24):06x}"


_suffixes = random.Random(os.urandom(16))
"""Run ids' random suffixes: seeded once per process from the OS (and again in a forked
child, so parent and child never draw the same), not a system call per run. A suffix only
tells apart runs that start in the same nanosecond; it is not a secret."""
os.register_at_fork(after_in_child=lambda: _suffixes.seed(os.urandom(16)))
