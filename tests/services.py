"""Services the test session starts itself, and what it says of the ones it cannot have.

``make test`` on a fresh machine starts a throwaway PostgreSQL from the local binaries (as
``.ci/postgres.sh`` does in CI) on 127.0.0.1 and a free port, in a temporary directory, and
stops it when the session ends. A server named by ``TRACKWAY_TEST_PG_DSN`` is used as it is.
The other servers (the mock-llm server, a real model and its gateway, the reference MCP
server, Chromium) are started by ``.ci/run``; without them their tests skip, and the
session's summary says which and how to get them.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["PgServer", "Service", "Services", "pg_server", "start_postgres"]

PG_ENV = "TRACKWAY_TEST_PG_DSN"
START_PG_ENV = "TRACKWAY_TEST_START_POSTGRES"
"""``0``: do not start a throwaway server (its tests skip, as on a machine without one)."""


@dataclass
class Service:
    """One service as the session found it: ``how`` it is had (or why not)."""

    name: str
    env: str
    available: bool
    how: str
    stop: Callable[[], None] | None = None


@dataclass
class Services:
    found: list[Service] = field(default_factory=list)

    def stop_all(self) -> None:
        for service in self.found:
            if service.stop is not None:
                service.stop()
                service.stop = None

    def missing(self, name: str) -> bool:
        return any(s.name == name and not s.available for s in self.found)


def _pg_bin() -> str | None:
    """The folder of the newest local PostgreSQL's initdb and pg_ctl."""
    for found in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version, reverse=True):
        if os.access(os.path.join(found, "initdb"), os.X_OK):
            return found
    initdb = shutil.which("initdb")
    return None if initdb is None else os.path.dirname(os.path.realpath(initdb))


def _version(path: str) -> tuple[int, ...]:
    part = Path(path).parent.name
    return tuple(int(p) for p in part.split(".") if p.isdigit())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start_postgres() -> Service:
    """A throwaway PostgreSQL for this session, or why there is none."""
    given = os.environ.get(PG_ENV)
    if given:
        return Service("PostgreSQL", PG_ENV, True, f"given by {PG_ENV}")
    if os.environ.get(START_PG_ENV) == "0":
        return Service(
            "PostgreSQL", PG_ENV, False, f"not started ({START_PG_ENV}=0): its tests skip"
        )
    server = pg_server()
    if isinstance(server, str):
        return Service("PostgreSQL", PG_ENV, False, server)
    os.environ[PG_ENV] = server.dsn  # read by tests/pg.py, and inherited by xdist's workers
    return Service("PostgreSQL", PG_ENV, True, server.how, server.stop)


@dataclass
class PgServer:
    """A throwaway PostgreSQL server of one's own: its DSN, and how to restart and stop it."""

    dsn: str
    how: str
    restart: Callable[[], None]
    stop: Callable[[], None]


def pg_server() -> PgServer | str:
    """Start a PostgreSQL server from the local binaries on 127.0.0.1 and a free port, in a
    temporary directory; returns it, or why there is none."""
    folder = _pg_bin()
    if folder is None:
        return (
            "no local PostgreSQL (initdb) to start: install it (apt-get install postgresql) "
            f"or set {PG_ENV}"
        )
    user = None
    if os.geteuid() == 0:  # the server refuses to run as root: run it as 'postgres'
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            return (
                "running as root with no 'postgres' user to start the server as: set "
                f"{PG_ENV}, or run the tests as another user"
            )
    home = tempfile.mkdtemp(prefix="trackway-test-pg-")
    data = os.path.join(home, "data")
    os.mkdir(data, 0o700)
    if user is not None:
        os.chown(home, user.pw_uid, user.pw_gid)
        os.chown(data, user.pw_uid, user.pw_gid)
    port = _free_port()
    as_user = {} if user is None else {"user": user.pw_uid, "group": user.pw_gid}
    pg_ctl = os.path.join(folder, "pg_ctl")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            args, capture_output=True, text=True, timeout=120, check=False, cwd=home, **as_user
        )

    def start() -> subprocess.CompletedProcess[str]:
        return run(
            pg_ctl, "-D", data, "-l", os.path.join(home, "server.log"),
            "-w", "-o", f"-p {port} -k {home} -c listen_addresses=127.0.0.1",
            "start",
        )  # fmt: skip

    init = run(os.path.join(folder, "initdb"), "-D", data, "-A", "trust", "-U", "postgres")
    started = start() if init.returncode == 0 else None
    if started is None or started.returncode != 0:
        failed = init if started is None else started
        shutil.rmtree(home, ignore_errors=True)
        why = (failed.stderr or failed.stdout).strip().splitlines()[-1:] or ["no output"]
        return f"could not start it from {folder}: {why[0]}"

    def restart() -> None:
        """Stop the server at once (as a crash or a failover does) and start it again on
        the same port: every session is ended."""
        run(pg_ctl, "-D", data, "-m", "immediate", "stop")
        again = start()
        assert again.returncode == 0, again.stderr or again.stdout

    def stop() -> None:
        run(pg_ctl, "-D", data, "-m", "immediate", "stop")
        shutil.rmtree(home, ignore_errors=True)

    return PgServer(
        f"postgresql://postgres@127.0.0.1:{port}/postgres",
        f"started here from {folder} on 127.0.0.1:{port}",
        restart,
        stop,
    )


OTHERS = (
    ("mock-llm server", "TRACKWAY_TEST_MOCK_LLM_URL", ".ci/mock-llm.sh start"),
    ("a real model (llama.cpp)", "TRACKWAY_TEST_LLAMA_URL", ".ci/llama.sh start"),
    ("the litellm gateway", "TRACKWAY_TEST_LITELLM_URL", ".ci/litellm.sh start"),
    ("the reference MCP server", "TRACKWAY_TEST_MCP_EVERYTHING", ".ci/mcp-everything.sh"),
)


def others() -> list[Service]:
    """The servers ``.ci/run`` starts and the session does not: given, or how to get them."""
    out = []
    for name, env, script in OTHERS:
        if os.environ.get(env):
            out.append(Service(name, env, True, f"given by {env}"))
        else:
            out.append(Service(name, env, False, f"its tests skip: {script} starts it ({env})"))
    chromium = os.environ.get("TRACKWAY_TEST_CHROMIUM") or shutil.which("chromium")
    out.append(
        Service("Chromium", "TRACKWAY_TEST_CHROMIUM", True, f"found at {chromium}")
        if chromium
        else Service(
            "Chromium",
            "TRACKWAY_TEST_CHROMIUM",
            False,
            "the viewer's browser tests skip: .ci/chromium.sh installs it",
        )
    )
    return out
