"""``block_network()``: a test cannot reach a real server — or call a real model — by accident.

While a block is active, every Python socket in the process is checked before it connects,
and every name lookup before it resolves: loopback (``127.0.0.0/8``, ``::1``, ``localhost``)
and Unix sockets stay allowed, so a test's own server on 127.0.0.1 still works; anything
else raises :class:`NetworkBlockedError`, which says how to allow it. Blocks nest: the
innermost one decides, and the sockets are restored when the outermost one ends.

What it covers: ``socket.socket.connect`` / ``connect_ex`` (asyncio, trio, anyio, httpx2,
``urllib`` and ``requests`` all connect through them, TLS included) and
``socket.getaddrinfo`` (so a blocked host is refused before any DNS query). What it cannot
see: C libraries that open their own sockets (libpq under psycopg, a gRPC core) and other
processes.
"""

from __future__ import annotations

import functools
import inspect
import ipaddress
import socket
import threading
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Any, TypeVar, cast

from trackway.engine import TrackwayError

__all__ = ["NetworkBlock", "NetworkBlockedError", "block_network"]

_F = TypeVar("_F", bound=Callable[..., Any])

_HOW_TO_ALLOW = (
    "tests here run without a real network, so that none calls a real model or service by "
    "accident: use a test double (trackway.testing.TestModel, mock(...), httpx2.MockTransport), "
    "or allow this host with block_network(allow=[{host!r}]) — under the pytest plugin, "
    "@pytest.mark.block_network(allow=[{host!r}]), @pytest.mark.allow_network, or "
    "trackway_block_network = false in the pytest ini"
)


class NetworkBlockedError(TrackwayError):
    """A connection (or a name lookup) was refused because ``block_network()`` is active.

    Not an ``OSError`` on purpose: HTTP clients turn an ``OSError`` into their own "could not
    connect" error and the reason would be lost; this one travels up as itself.
    """

    def __init__(self, host: str, port: object, *, loopback: bool) -> None:
        where = f"{host}:{port}" if port is not None else host
        what = "a loopback connection (allow_loopback=False)" if loopback else "a connection"
        super().__init__(
            f"block_network() refused {what} to {where}: " + _HOW_TO_ALLOW.format(host=host)
        )
        self.host = host
        self.port = port


def _is_loopback(host: str) -> bool:
    name = host.strip("[]").lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name.split("%", 1)[0])  # an IPv6 zone id is no part of it
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


class NetworkBlock:
    """One active (or reusable) block: which hosts stay reachable.

    Use it as ``with block_network(): ...``, ``async with``, or as a decorator of a sync or
    async function. ``refused`` lists the ``(host, port)`` pairs it turned away, for tests
    that want to assert on them.
    """

    def __init__(self, *, allow_loopback: bool = True, allow: Iterable[str] = ()) -> None:
        if isinstance(allow, str):
            raise TypeError(
                f"block_network(allow={allow!r}): pass a list of hosts, e.g. [{allow!r}]"
            )
        self.allow_loopback = allow_loopback
        self.allow = frozenset(h.strip("[]").lower().rstrip(".") for h in allow)
        self.refused: list[tuple[str, object]] = []

    def allows(self, host: str) -> bool:
        name = host.strip("[]").lower().rstrip(".")
        if name in self.allow:
            return True
        return self.allow_loopback and _is_loopback(name)

    def check(self, host: str, port: object) -> None:
        if not self.allows(host):
            self.refused.append((host, port))
            raise NetworkBlockedError(host, port, loopback=_is_loopback(host))

    # -- context manager and decorator ---------------------------------------------------

    def __enter__(self) -> NetworkBlock:
        _push(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _pop(self)

    async def __aenter__(self) -> NetworkBlock:
        return self.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.__exit__(exc_type, exc, tb)

    def __call__(self, fn: _F) -> _F:
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                with self._again():
                    return await fn(*args, **kwargs)

            return cast(_F, run_async)

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            with self._again():
                return fn(*args, **kwargs)

        return cast(_F, run)

    def _again(self) -> NetworkBlock:
        """A fresh block with the same rules, for each call of a decorated function."""
        return NetworkBlock(allow_loopback=self.allow_loopback, allow=self.allow)


def block_network(*, allow_loopback: bool = True, allow: Iterable[str] = ()) -> NetworkBlock:
    """Refuse every network connection from this process but loopback ones, while active.

    ``allow_loopback=False`` refuses 127.0.0.1 and ``localhost`` too; ``allow`` names hosts
    (as the code connects to them: a name or an address) that stay reachable. A refused
    attempt raises :class:`NetworkBlockedError`, naming the host and how to allow it.
    """
    return NetworkBlock(allow_loopback=allow_loopback, allow=allow)


# -- the patch: installed while at least one block is active --------------------------------

_lock = threading.Lock()
_active: list[NetworkBlock] = []
_original: dict[str, Any] = {}


def _host_port(address: Any) -> tuple[str, object] | None:
    """The (host, port) of an INET address tuple; ``None`` for a Unix socket path."""
    if isinstance(address, tuple) and address and isinstance(address[0], str):
        return address[0], address[1] if len(address) > 1 else None
    return None


def _guard(address: Any) -> None:
    target = _host_port(address)
    if target is not None and _active:
        _active[-1].check(*target)


def _connect(self: socket.socket, address: Any) -> None:
    _guard(address)
    _original["connect"](self, address)


def _connect_ex(self: socket.socket, address: Any) -> int:
    _guard(address)
    result: int = _original["connect_ex"](self, address)
    return result


def _getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
    if isinstance(host, bytes):
        host = host.decode("idna")
    if isinstance(host, str) and _active:  # None: the local host's passive addresses
        _active[-1].check(host, port)
    return _original["getaddrinfo"](host, port, *args, **kwargs)


def _push(block: NetworkBlock) -> None:
    with _lock:
        if not _active:
            _original.update(
                connect=socket.socket.connect,
                connect_ex=socket.socket.connect_ex,
                getaddrinfo=socket.getaddrinfo,
            )
            socket.socket.connect = _connect  # type: ignore[method-assign,assignment]
            socket.socket.connect_ex = _connect_ex  # type: ignore[method-assign,assignment]
            socket.getaddrinfo = _getaddrinfo
        _active.append(block)


def _pop(block: NetworkBlock) -> None:
    with _lock:
        # the innermost block usually; a block left out of order is removed where it stands
        for i in range(len(_active) - 1, -1, -1):
            if _active[i] is block:
                del _active[i]
                break
        if not _active and _original:
            socket.socket.connect = _original.pop("connect")  # type: ignore[method-assign]
            socket.socket.connect_ex = _original.pop("connect_ex")  # type: ignore[method-assign]
            socket.getaddrinfo = _original.pop("getaddrinfo")
