"""``local_code_runner``: Python in a subprocess on this machine, one long-lived interpreter
per session, inside rlimits, a wall-clock limit that kills the whole process group, capped
output, an environment built from nothing and a private working directory.

Linux is the target. Elsewhere on POSIX (macOS) the same code runs, but ``RLIMIT_AS`` may
be refused and ``RLIMIT_NPROC`` counts differently; Windows has no ``resource`` module or
process groups, and ``open_session`` refuses there with a message.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from trackway.engine.core._keywords import checked_keywords
from trackway.tools.define._errors import ToolDefinitionError

from ._errors import CodeRunnerError
from ._session import LocalCodeSession

__all__ = ["LocalCodeRunner", "local_code_runner"]

_MIB = 2**20


@dataclass(frozen=True)
class LocalCodeRunner:
    """The settings of :func:`local_code_runner` (see there); ``open_session()`` starts a
    session with its own working directory and, on its first run, its interpreter."""

    time_limit: float = 10.0
    memory_limit: int | None = 512 * _MIB
    output_limit: int = 16_384
    drain_limit: int = 64 * _MIB
    file_size_limit: int | None = 64 * _MIB
    max_processes: int | None = 32
    cpu_limit: int | None = None
    python: str = sys.executable
    user: int | None = None
    name: str = "local_code_runner"

    def open_session(self) -> LocalCodeSession:
        """A fresh session: a new private working directory (``0700``); its interpreter
        starts at the first ``run``."""
        if os.name != "posix":
            raise CodeRunnerError(
                "local_code_runner needs POSIX process groups and rlimits (Linux is the "
                "target); on this system plug in another CodeRunner (a container runner)"
            )
        return LocalCodeSession(self)


@checked_keywords
def local_code_runner(
    *,
    time_limit: float = 10.0,
    memory_limit: int | None = 512 * _MIB,
    output_limit: int = 16_384,
    drain_limit: int = 64 * _MIB,
    file_size_limit: int | None = 64 * _MIB,
    max_processes: int | None = 32,
    cpu_limit: int | None = None,
    python: str = sys.executable,
    user: int | None = None,
) -> LocalCodeRunner:
    """A runner of Python in a subprocess (``python -I -u``), one interpreter per session.

    - ``time_limit`` (seconds, per run): past it the interpreter and every process in its
      process group are killed (``SIGKILL``); the run reports ``limit="time"``.
    - ``memory_limit`` (bytes, ``RLIMIT_AS`` and ``RLIMIT_DATA``): an allocation past it
      fails (``MemoryError``) or the interpreter dies; ``None`` sets none.
    - ``output_limit`` (bytes per stream kept); the rest is read, counted and dropped, never
      buffered. ``drain_limit``: past that many bytes of output in one run the interpreter
      is killed (``limit="output"``), so a flood costs no more than that.
    - ``file_size_limit`` (``RLIMIT_FSIZE``): a write that would grow a file past it fails
      with ``OSError: File too large``.
    - ``max_processes`` (``RLIMIT_NPROC``): at most this many processes more than the user
      the code runs as already has, so a fork bomb stalls at the limit until the time limit
      kills it. The kernel does not apply this limit to root: run as root, pass ``user=``.
    - ``cpu_limit`` (``RLIMIT_CPU``, seconds of CPU over the interpreter's whole life,
      default ``max(60, 10 * time_limit)``): the backstop for a process that escaped the
      group.
    - ``python``: the interpreter to run; ``user``: a uid to run the code as (needs root;
      the working directory is handed to that user).

    The environment is built from nothing: ``HOME`` and ``TMPDIR`` are the working
    directory, ``LANG=C.UTF-8``, and ``TRACKWAY_STAGED_INPUTS``; nothing of this process's
    environment is passed on.
    """
    if isinstance(time_limit, bool) or not isinstance(time_limit, (int, float)) or time_limit <= 0:
        raise ToolDefinitionError(f"local_code_runner(time_limit={time_limit!r}): use seconds > 0")
    for label, value in (
        ("memory_limit", memory_limit),
        ("file_size_limit", file_size_limit),
        ("max_processes", max_processes),
        ("cpu_limit", cpu_limit),
    ):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            raise ToolDefinitionError(
                f"local_code_runner({label}={value!r}): use a positive whole number, or None "
                "for no limit"
            )
    for label, value in (("output_limit", output_limit), ("drain_limit", drain_limit)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ToolDefinitionError(
                f"local_code_runner({label}={value!r}): use a positive number of bytes"
            )
    if drain_limit < output_limit:
        raise ToolDefinitionError(
            f"local_code_runner: drain_limit={drain_limit} is below output_limit="
            f"{output_limit}; the drain limit is how much output is read before a flood is "
            "killed, so make it at least the output limit"
        )
    return LocalCodeRunner(
        float(time_limit),
        memory_limit,
        output_limit,
        drain_limit,
        file_size_limit,
        max_processes,
        cpu_limit,
        python,
        user,
    )
