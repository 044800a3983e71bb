"""The code runner's port: what any backend (a local subprocess, a container, a hosted
interpreter) provides so that ``code_runner_tool`` can drive it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = [
    "STAGED_INPUTS_ENV",
    "CodeInput",
    "CodeRunResult",
    "CodeRunner",
    "CodeSession",
    "StagedCodeInput",
    "StagingCodeSession",
    "can_stage_code_inputs",
    "inert_segment",
]

STAGED_INPUTS_ENV = "TRACKWAY_STAGED_INPUTS"
"""The environment variable the model's code reads its staged inputs from: a JSON object,
argument name -> file path."""


@dataclass(frozen=True)
class CodeInput:
    """One input to write into a session before its code runs: ``name`` is the key the code
    looks up in ``TRACKWAY_STAGED_INPUTS`` (the tool's argument name), ``file_name`` the
    file it lands in (one inert segment: a backend never reads it as a path), ``data`` the
    bytes, ``media_type`` what they are."""

    name: str
    file_name: str
    data: bytes
    media_type: str


@dataclass(frozen=True)
class StagedCodeInput:
    """What a backend reports for one staged input: the manifest key, the path the code
    opens, and how many bytes landed there."""

    name: str
    path: str
    bytes: int


@dataclass(frozen=True)
class CodeRunResult:
    """One run of code, as data. ``status`` is ``"ok"``, ``"error"`` (the code raised;
    ``error`` names the exception, the traceback is in ``stderr``), ``"exit"`` (the code
    called ``sys.exit``; ``exit_code``) or ``"killed"`` (a limit or a crash ended the
    interpreter; ``limit`` says which). ``stdout``/``stderr`` are what was kept, at most the
    runner's output limit (when ``*_cut``, the start and the end, with a marker saying how
    many bytes of the middle were left out); ``*_bytes`` count everything the code wrote.
    ``limit`` is ``None`` or one of ``"time"``, ``"memory"``, ``"output"``, ``"cpu"``,
    ``"crash"``, ``"cancelled"``; ``state_lost`` says the interpreter was replaced (before
    this run, or by it), so variables of earlier runs are gone. ``files`` names what the
    code created at the top of its working directory."""

    status: str
    stdout: str
    stderr: str
    stdout_bytes: int
    stderr_bytes: int
    duration: float
    stdout_cut: bool = False
    stderr_cut: bool = False
    exit_code: int | None = None
    error: str | None = None
    limit: str | None = None
    detail: str = ""
    state_lost: bool = False
    files: tuple[str, ...] = ()


@runtime_checkable
class CodeSession(Protocol):
    """One interpreter: ``run`` executes code in it (state survives between runs while the
    interpreter lives), ``stop`` ends it and releases everything it holds (processes,
    staged files). A session may also stage inputs (see :class:`StagingCodeSession`), and
    may have ``interrupt()``: called from another thread when the run is cancelled, it ends
    the code in progress."""

    def run(self, code: str, *, timeout: float | None = None) -> CodeRunResult: ...

    def stop(self) -> None: ...


@runtime_checkable
class StagingCodeSession(CodeSession, Protocol):
    """A session that can write inputs into itself before its code runs; it lists them in
    ``TRACKWAY_STAGED_INPUTS`` for every later run, until ``stop``."""

    def stage_inputs(self, inputs: Sequence[CodeInput]) -> list[StagedCodeInput]: ...


@runtime_checkable
class CodeRunner(Protocol):
    """A backend: ``open_session()`` starts a fresh, private session. ``name`` is what
    refusals call it."""

    name: str

    def open_session(self) -> CodeSession: ...


def can_stage_code_inputs(session: object) -> bool:
    """Whether ``session`` can stage inputs (it has a callable ``stage_inputs``)."""
    return callable(getattr(session, "stage_inputs", None))


def inert_segment(name: str) -> str:
    """``name`` as one file-name segment that means nothing to a file system: letters,
    digits, ``_`` and ``-`` stay, every other character (``.``, ``/``, ``\\``, …) becomes
    ``%XX`` of its UTF-8 bytes, so ``..`` and separators land as literals."""
    out = []
    for ch in name:
        if ch.isascii() and (ch.isalnum() or ch in "_-"):
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8"))
    return "".join(out) or "%00"
