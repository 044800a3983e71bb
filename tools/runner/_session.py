"""One local session: its interpreter (started, watched, killed), its private working
directory and its staged inputs."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import re
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._driver import DRIVER, frame, unframe_length
from ._errors import CodeRunnerError
from ._port import STAGED_INPUTS_ENV, CodeInput, CodeRunResult, StagedCodeInput, inert_segment
from ._streams import CHUNK, Capture, drain

if TYPE_CHECKING:
    from ._local import LocalCodeRunner

__all__ = ["LocalCodeSession"]

_MIB = 2**20
_STARTUP_LIMIT = 30.0
"""Seconds a new interpreter may take to say it is ready (a loaded machine is slow)."""
_SAFE_NAME = re.compile(r"[A-Za-z0-9_%-]+(\.[A-Za-z0-9]+)?")


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
        # held open for the session: staging and listing go through it, so code that moves
        # the directory or plants a link never redirects a write of this process
        self._dir = os.open(self.workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        self._remover = weakref.finalize(self, _remove, self.workdir, self._dir)
        os.fchmod(self._dir, 0o700)
        if runner.user is not None:
            os.fchown(self._dir, runner.user, -1)
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
            with contextlib.suppress(FileExistsError):
                os.mkdir("inputs", 0o700, dir_fd=self._dir)
            nofollow = os.O_NOFOLLOW | os.O_CLOEXEC
            flags = os.O_RDONLY | os.O_DIRECTORY | nofollow
            inputs_dir = os.open("inputs", flags, dir_fd=self._dir)
            out: list[StagedCodeInput] = []
            try:
                if self.runner.user is not None:
                    os.fchown(inputs_dir, self.runner.user, -1)
                for item in inputs:
                    name = item.file_name
                    if not _SAFE_NAME.fullmatch(name):
                        name = inert_segment(name)
                    path = os.path.join(folder, name)
                    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | nofollow
                    fd = os.open(name, flags, 0o600, dir_fd=inputs_dir)
                    with os.fdopen(fd, "wb") as handle:
                        if self.runner.user is not None:
                            os.fchown(handle.fileno(), self.runner.user, -1)
                        handle.write(item.data)
                    self._staged[item.name] = path
                    out.append(StagedCodeInput(item.name, path, len(item.data)))
            finally:
                os.close(inputs_dir)
            return out

    def run(self, code: str, *, timeout: float | None = None) -> CodeRunResult:
        """Run ``code`` in this session's interpreter (started, or restarted after a death,
        here), within the runner's limits; never raises for what the code does."""
        with self._lock:
            self._check_open()
            lost_before = self._lost
            if self._proc is None:
                failed = self._start()
                if failed is not None:
                    return failed
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
            self._staged.clear()
            self._remover()

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

    def _start(self) -> CodeRunResult | None:
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
        # a session nobody stopped still leaves no interpreter behind: when it is
        # collected, or when this process exits
        self._reaper = weakref.finalize(self, _reap, self._proc, read_end)
        self.interpreters += 1
        return self._await_ready()

    def _await_ready(self) -> CodeRunResult | None:
        """Wait for the new interpreter's ready frame (its start-up is not the code's time);
        a result saying why when it never comes."""
        proc = self._proc
        assert proc is not None and proc.stderr is not None
        started = time.monotonic()
        got = bytearray()
        with selectors.DefaultSelector() as sel:
            sel.register(self._control, selectors.EVENT_READ)
            while len(got) < 4 or len(got) < 4 + unframe_length(got[:4]):
                left = started + _STARTUP_LIMIT - time.monotonic()
                if left <= 0 or not sel.select(left):
                    break
                chunk = os.read(self._control, CHUNK)
                if not chunk:
                    break
                got += chunk
            else:
                return None
        err = Capture(self.runner.output_limit)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        with contextlib.suppress(OSError, ValueError):  # what it said before it died
            err.add(proc.stderr.read(self.runner.output_limit) or b"")
        status = self._kill()
        self._lost = True
        return CodeRunResult(
            status="killed",
            stdout="",
            stderr=err.text(),
            stdout_bytes=0,
            stderr_bytes=err.total,
            duration=time.monotonic() - started,
            exit_code=status,
            limit="crash",
            detail=f"the interpreter did not start (status {status})",
            state_lost=True,
        )

    def _kill(self) -> int | None:
        """End the interpreter and its process group; its exit status (``None`` if none)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        self._reaper()  # runs once: here, or when the session is collected, or at exit
        self._control = -1
        return proc.returncode

    def _run(self, code: str, timeout: float) -> CodeRunResult:
        proc = self._proc
        assert proc is not None and proc.stdin is not None
        assert proc.stdout is not None and proc.stderr is not None
        runner = self.runner
        before = _listed(self._dir)
        out, err = Capture(runner.output_limit), Capture(runner.output_limit)
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
                    chunk = os.read(fd, CHUNK)
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
                drain(sel, streams, self._control, runner.drain_limit)
        duration = time.monotonic() - started
        files = tuple(sorted(_listed(self._dir) - before - {"inputs"}))
        if reply is not None:
            error = reply.get("error")
            exit_code = reply.get("exit_code")
            return _captured(
                str(reply["status"]),
                out,
                err,
                duration,
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
                drain(sel, streams, -1, runner.drain_limit, wait=0.5)
        status = self._kill()
        self._lost = True
        if self._interrupted:
            limit, detail = "cancelled", "the run was cancelled and the interpreter killed"
        else:
            limit, detail = _why(limit, status, runner, timeout, out, err)
        self._interrupted = False
        return _captured(
            "killed",
            out,
            err,
            duration,
            exit_code=status,
            limit=limit,
            detail=detail,
            state_lost=True,
            files=files,
        )


def _captured(
    status: str, out: Capture, err: Capture, duration: float, **rest: Any
) -> CodeRunResult:
    """A finished or killed run's result: what each stream kept, its size and whether it
    was cut, and ``rest`` (exit code, limit, detail, files, ...)."""
    return CodeRunResult(
        status=status,
        stdout=out.text(),
        stderr=err.text(),
        stdout_bytes=out.total,
        stderr_bytes=err.total,
        duration=duration,
        stdout_cut=out.cut > 0,
        stderr_cut=err.cut > 0,
        **rest,
    )


def _reap(proc: subprocess.Popen[bytes], control: int) -> None:
    """Kill an interpreter's process group, wait for it, close its pipes."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
    with contextlib.suppress(OSError):
        os.close(control)


def _remove(workdir: str, handle: int) -> None:
    """Remove a session's working directory and close the handle held on it."""
    shutil.rmtree(workdir, ignore_errors=True)
    with contextlib.suppress(OSError):
        os.close(handle)


def _listed(folder: int) -> set[str]:
    """The names in the open directory ``folder`` (none when the code made it unreadable)."""
    try:
        return set(os.listdir(folder))
    except OSError:
        return set()


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
    out: Capture,
    err: Capture,
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
    return dataclasses.replace(result, **changes)  # type: ignore[arg-type]
