"""``trackway serve module:agent``: an agent behind ``serve_agent`` under uvicorn.

The agent is imported the way ``trackway resume`` imports a chart (``module:attr``, the
current directory on the import path). It needs an auth hook (``--auth module:fn``): who
each request is for. ``--dev-loopback`` is the one way to start without one, on a loopback
host only: every request from this machine is ``Identity(tenant="local", principal="me")``.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import socket
from pathlib import Path
from typing import Any

from trackway.engine import SERVING_YOUNG_THRESHOLD, serving_gc

from ._cli_out import EXIT_USAGE, CommandFailed, Out, safe
from ._cli_resume import load_chart
from ._cli_store import seal_from_env

__all__ = ["serve_command"]


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _on_store(agent: Any, where: str) -> Any:
    """``agent`` writing its runs to the store at ``where`` (made if it does not exist)."""
    from trackway.agent import Agent
    from trackway.engine import PostgresStore, SqliteStore

    seal = seal_from_env()
    store: Any
    if where.startswith(("postgresql://", "postgres://")):
        store = PostgresStore(where, seal=seal)
    else:
        store = SqliteStore(Path(where), seal=seal)
    runtime = dataclasses.replace(agent._runtime, store=store)
    return Agent(agent._cfg, agent._chart, list(agent._attached), runtime=runtime)


def serve_command(
    out: Out,
    spec: str,
    store: str | None,
    host: str,
    port: int,
    auth_spec: str | None,
    dev_loopback: bool,
    a2a: bool = False,
    gc_freeze: bool = True,
    gc_young: int = SERVING_YOUNG_THRESHOLD,
) -> int:
    """Serve the agent ``spec`` names until interrupted; print the URL to open first (and,
    with ``a2a``, host it over A2A at ``/a2a/`` too); ``gc_freeze`` and ``gc_young``: the
    collector as it serves (``serving_gc``; ``gc_young=0`` keeps the process's threshold)."""
    import uvicorn

    from trackway.agent import Agent
    from trackway.serve import loopback_auth, serve_agent

    agent = load_chart(spec)
    if not isinstance(agent, Agent):
        raise CommandFailed(
            f"{spec!r} is a {type(agent).__name__}, not an Agent: name the built agent "
            "(Agent.create(...).build())",
            EXIT_USAGE,
        )
    if auth_spec is not None:
        auth = load_chart(auth_spec)
        if not callable(auth):
            raise CommandFailed(f"--auth {auth_spec!r} is not a function", EXIT_USAGE)
    elif dev_loopback:
        if not _loopback(host):
            raise CommandFailed(
                f"--dev-loopback serves this machine only; --host {host!r} is not a "
                "loopback address: pass --auth module:fn to serve others",
                EXIT_USAGE,
            )
        auth = loopback_auth()
    else:
        raise CommandFailed(
            "trackway serve needs an auth hook: --auth module:fn, a function of the request "
            "returning an Identity (or None to refuse); to try an agent on this machine "
            "only, --dev-loopback",
            EXIT_USAGE,
        )
    if store is not None:
        agent = _on_store(agent, store)
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        raise CommandFailed(f"cannot listen on {host}:{port}: {exc}", EXIT_USAGE) from None
    bound = sock.getsockname()[1]
    shown = f"[{host.strip('[]')}]" if family == socket.AF_INET6 else host
    url = f"http://{shown}:{bound}/"
    app = serve_agent(agent, auth=auth, a2a_url=url + "a2a/" if a2a else None)
    out.line(f"serving {safe(agent.name)} at {url} (Ctrl-C stops it)")
    if a2a:
        out.line(f"A2A: {url}a2a/ (its card at {url}a2a/.well-known/agent-card.json)")
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    with serving_gc(freeze=gc_freeze, young=gc_young or None):
        server.run(sockets=[sock])
    return 0
