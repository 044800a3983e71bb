"""``local_code_runner``: Python in a subprocess on this machine, one long-lived interpreter
per session, inside rlimits, a wall-clock limit that kills the whole process group, capped
output, an environment built from nothing and a private working directory.

Linux is the target. Elsewhere on POSIX (macOS) the same code runs, but ``RLIMIT_AS`` may
be refused and ``RLIMIT_NPROC`` counts differently; Windows has no ``resource`` module or
process groups, and ``open_session`` refuses there with a message.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from trackway.engine.core._keywords import checked_keywords
from trackway.tools.define._errors import ToolDefinitionError

from ._driver import DRIVER, frame, unframe_length
from ._errors import CodeRunnerError
from ._port import STAGED_INPUTS_ENV, CodeInput, CodeRunResult, StagedCodeInput

__all__ = ["LocalCodeRunner", "LocalCodeSession", "inert_segment", "local_code_runner"]

_MIB = 2**20
_CHUNK = 65536
_SAFE_NAME = re.compile(r"[A-Za-z0-9_%-]+(\.[A-Za-z0-9]+)?")


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


@dataclass
class _Capture:
    """One stream read with a cap: the first half of ``limit`` bytes and a rolling last
    half are kept (a traceback's last line, a summary printed at the end), the middle is
    counted and dropped."""

    limit: int
    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    total: int = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.limit // 2 - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            keep = self.limit - self.limit // 2
            self.tail += chunk[-keep:]
            del self.tail[:-keep]

    @property
    def cut(self) -> int:
        return self.total - len(self.head) - len(self.tail)

    def text(self) -> str:
        if not self.cut:
            return (self.head + self.tail).decode("utf-8", "replace")
        head, tail = _whole_end(bytes(self.head)), _whole_start(bytes(self.tail))
        cut = self.total - len(head) - len(tail)  # a character split by the cut is cut
        return (
            f"{head.decode('utf-8', 'replace')}\n[… {cut} of {self.total} bytes cut …]\n"
            f"{tail.decode('utf-8', 'replace')}"
        )


def _whole_start(data: bytes) -> bytes:
    """``data`` without the UTF-8 continuation bytes a cut left at its start."""
    skip = 0
    while skip < min(3, len(data)) and data[skip] & 0xC0 == 0x80:
        skip += 1
    return data[skip:]


def _whole_end(data: bytes) -> bytes:
    """``data`` without a UTF-8 character a cut left incomplete at its end."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # the lead (or ASCII) byte of the last character
            need = 1 if byte < 0x80 else 2 if byte >> 5 == 0b110 else 3 if byte >> 4 == 14 else 4
            return data if need <= back else data[:-back]
    return data


def _processes_of(uid: int) -> int:
    """How many processes ``uid`` runs now (read from ``/proc``; 0 where there is none)."""
    count = 0
    try:
        entries = os.listdir("/proc")
    except OSError:
        return 0
    for entry in entries:
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    count += 1
            except OSError:
                continue
    return count


class LocalCodeSession:
    """One local interpreter and its working directory; thread-safe (runs are serialized).
    A killed or dead interpreter is replaced at the next run, whose result says the state
    was lost."""

    def __init__(self, runner: LocalCodeRunner) -> None:
        self.runner = runner
        self.workdir = tempfile.mkdtemp(prefix="trackway-code-")
        os.chmod(self.workdir, 0o700)
        if runner.user is not None:
            os.chown(self.workdir, runner.user, -1)
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._control = -1
        self._staged: dict[str, str] = {}
        self._lost = False
        self._stopped = False
        self._interrupted = False
        self.interpreters = 0
        """How many interpreters this session started (a test reads it)."""

    # -- the port -------------------------------------------------------------------------

    def stage_inputs(self, inputs: Sequence[CodeInput]) -> list[StagedCodeInput]:
        """Write each input into ``<workdir>/inputs/`` (never following a link) and list it
        in ``TRACKWAY_STAGED_INPUTS`` for every later run of this session."""
        with self._lock:
            self._check_open()
            folder = os.path.join(self.workdir, "inputs")
            os.makedirs(folder, mode=0o700, exist_ok=True)
            if self.runner.user is not None:
                os.chown(folder, self.runner.user, -1)
            out: list[StagedCodeInput] = []
            for item in inputs:
                name = item.file_name
                if not _SAFE_NAME.fullmatch(name):
                    name = inert_segment(name)
                path = os.path.join(folder, name)
                flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
                fd = os.open(path, flags, 0o600)
                with os.fdopen(fd, "wb") as handle:
                    handle.write(item.data)
                if self.runner.user is not None:
                    os.chown(path, self.runner.user, -1)
                self._staged[item.name] = path
                out.append(StagedCodeInput(item.name, path, len(item.data)))
            return out

    def run(self, code: str, *, timeout: float | None = None) -> CodeRunResult:
        """Run ``code`` in this session's interpreter (started, or restarted after a death,
        here), within the runner's limits; never raises for what the code does."""
        with self._lock:
            self._check_open()
            lost_before = self._lost
            if self._proc is None:
                self._start()
            self._lost = False
            result = self._run(code, self.runner.time_limit if timeout is None else timeout)
            if lost_before and not result.state_lost:
                result = _replace(result, state_lost=True)
            return result

    def stop(self) -> None:
        """Kill the interpreter (and its process group) and remove the working directory
        with every staged input and file the code wrote there. Idempotent."""
        with self._lock:
            self._stopped = True
            self._kill()
            shutil.rmtree(self.workdir, ignore_errors=True)
            self._staged.clear()

    def interrupt(self) -> None:
        """Kill the running code and its process group now, from any thread (a cancelled
        run): the run in progress returns as killed (``limit="cancelled"``) and the next
        run starts a fresh interpreter."""
        proc = self._proc
        if proc is not None:
            self._interrupted = True
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)

    @property
    def alive(self) -> bool:
        """Whether an interpreter is running now."""
        return self._proc is not None and self._proc.poll() is None

    # -- the interpreter ------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._stopped:
            raise CodeRunnerError(
                f"{self.runner.name}: this session was stopped; open a new one "
                "(runner.open_session())"
            )

    def _limits(self) -> dict[str, int]:
        """The rlimits the driver sets on itself before it reads any code (soft = hard, so
        the code cannot raise them unless it runs as root), by ``resource`` name."""
        runner = self.runner
        limits: dict[str, int] = {"RLIMIT_CORE": 0}
        if runner.memory_limit is not None:
            limits |= {"RLIMIT_AS": runner.memory_limit, "RLIMIT_DATA": runner.memory_limit}
        if runner.file_size_limit is not None:
            limits["RLIMIT_FSIZE"] = runner.file_size_limit
        limits["RLIMIT_CPU"] = runner.cpu_limit or max(60, math.ceil(10 * runner.time_limit))
        if runner.max_processes is not None:
            uid = os.getuid() if runner.user is None else runner.user
            limits["RLIMIT_NPROC"] = _processes_of(uid) + runner.max_processes
        return limits

    def _start(self) -> None:
        runner = self.runner
        env = {
            "HOME": self.workdir,
            "TMPDIR": self.workdir,
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            STAGED_INPUTS_ENV: json.dumps(self._staged),
        }
        limits = json.dumps(self._limits())  # set by the driver: no preexec_fn in a thread
        read_end, write_end = os.pipe()
        try:
            self._proc = subprocess.Popen(
                [runner.python, "-I", "-u", "-c", DRIVER, str(write_end), limits],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(write_end,),
                cwd=self.workdir,
                env=env,
                process_group=0,
                user=runner.user,
                group=runner.user,
                extra_groups=[] if runner.user is not None else None,
            )
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)
        self._control = read_end
        self.interpreters += 1

    def _kill(self) -> int | None:
        """End the interpreter and its process group; its exit status (``None`` if none)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        status = proc.wait()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        if self._control >= 0:
            os.close(self._control)
            self._control = -1
        return status

    def _run(self, code: str, timeout: float) -> CodeRunResult:
        proc = self._proc
        assert proc is not None and proc.stdin is not None
        assert proc.stdout is not None and proc.stderr is not None
        runner = self.runner
        before = set(os.listdir(self.workdir))
        out, err = _Capture(runner.output_limit), _Capture(runner.output_limit)
        started = time.monotonic()
        deadline = started + timeout
        reply: dict[str, object] | None = None
        limit: str | None = None
        died = False
        control = bytearray()
        try:
            proc.stdin.write(frame({"code": code, "staged": self._staged}))
            proc.stdin.flush()
        except OSError:
            died = True
        streams = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
        with selectors.DefaultSelector() as sel:
            for fd in (*streams, self._control):
                sel.register(fd, selectors.EVENT_READ)
            while reply is None and not died and limit is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    limit = "time"
                    break
                for key, _ in sel.select(left):
                    fd = int(key.fd)
                    chunk = os.read(fd, _CHUNK)
                    if fd == self._control:
                        if not chunk:
                            died = True
                            break
                        control += chunk
                        if len(control) >= 4 and len(control) >= 4 + unframe_length(control[:4]):
                            reply = json.loads(bytes(control[4 : 4 + unframe_length(control[:4])]))
                    elif not chunk:
                        sel.unregister(fd)
                    else:
                        streams[fd].add(chunk)
                        if out.total + err.total > runner.drain_limit:
                            limit = "output"
                            break
            if reply is not None:  # what the code wrote before its block ended
                _drain(sel, streams, self._control, runner.drain_limit)
        duration = time.monotonic() - started
        files = tuple(sorted(set(os.listdir(self.workdir)) - before - {"inputs"}))
        if reply is not None:
            error = reply.get("error")
            exit_code = reply.get("exit_code")
            return CodeRunResult(
                status=str(reply["status"]),
                stdout=out.text(),
                stderr=err.text(),
                stdout_bytes=out.total,
                stderr_bytes=err.total,
                duration=duration,
                stdout_cut=out.cut > 0,
                stderr_cut=err.cut > 0,
                exit_code=exit_code if isinstance(exit_code, int) else None,
                error=error if isinstance(error, str) else None,
                limit="memory" if error == "MemoryError" else None,
                detail=_memory_detail(runner) if error == "MemoryError" else "",
                files=files,
            )
        if died:  # the interpreter ended by itself: read what it left, then its status
            with selectors.DefaultSelector() as sel:
                for fd in streams:
                    sel.register(fd, selectors.EVENT_READ)
                _drain(sel, streams, -1, runner.drain_limit, wait=0.5)
        status = self._kill()
        self._lost = True
        if self._interrupted:
            limit, detail = "cancelled", "the run was cancelled and the interpreter killed"
        else:
            limit, detail = _why(limit, status, runner, timeout, out, err)
        self._interrupted = False
        return CodeRunResult(
            status="killed",
            stdout=out.text(),
            stderr=err.text(),
            stdout_bytes=out.total,
            stderr_bytes=err.total,
            duration=duration,
            stdout_cut=out.cut > 0,
            stderr_cut=err.cut > 0,
            exit_code=status,
            limit=limit,
            detail=detail,
            state_lost=True,
            files=files,
        )


def _drain(
    sel: selectors.BaseSelector,
    streams: dict[int, _Capture],
    control: int,
    ceiling: int,
    wait: float = 0.0,
) -> None:
    """Read what is already written to the streams (up to ``ceiling`` bytes in all)."""
    if control >= 0:
        sel.unregister(control)
    end = time.monotonic() + wait
    while sel.get_map():
        ready = sel.select(max(0.0, end - time.monotonic()) if wait else 0)
        if not ready:
            return
        for key, _ in ready:
            fd = int(key.fd)
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                sel.unregister(fd)
            else:
                streams[fd].add(chunk)
        if sum(c.total for c in streams.values()) > ceiling:
            return


def _memory_detail(runner: LocalCodeRunner) -> str:
    limit = runner.memory_limit
    return (
        f"the code ran out of memory (limit {limit // _MIB} MiB)"
        if limit is not None
        else "the code ran out of memory"
    )


def _why(
    limit: str | None,
    status: int | None,
    runner: LocalCodeRunner,
    timeout: float,
    out: _Capture,
    err: _Capture,
) -> tuple[str, str]:
    """Which limit ended the interpreter, in a sentence."""
    if limit == "time":
        return "time", f"the code ran past the time limit of {timeout:g} s and was killed"
    if limit == "output":
        return "output", (
            f"the code wrote more than {runner.drain_limit} bytes of output in one run and "
            "was killed (the drain limit)"
        )
    if status == -signal.SIGXCPU:
        return "cpu", "the interpreter used up its CPU time (RLIMIT_CPU) and was killed"
    if status == -signal.SIGXFSZ:
        return "crash", "the interpreter was killed for writing past the file size limit"
    said = err.text()
    if "MemoryError" in said or "memory" in said.lower():
        return "memory", _memory_detail(runner) + " and the interpreter died"
    how = (
        f"signal {signal.Signals(-status).name}"
        if status is not None and status < 0
        else (f"status {status}")
    )
    return "crash", f"the interpreter died ({how})"


def _replace(result: CodeRunResult, **changes: object) -> CodeRunResult:
    import dataclasses

    return dataclasses.replace(result, **changes)  # type: ignore[arg-type]
