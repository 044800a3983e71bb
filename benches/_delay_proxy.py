"""A TCP proxy that delays every byte by a fixed time each way, so a loopback PostgreSQL
answers as one behind a network would (a round trip of twice ``--delay-ms``).

Run it in a process of its own (it must not share the measured process's GIL), then point
the bench at its port::

    .venv/bin/python benches/_delay_proxy.py --listen 54392 --to 54391 --delay-ms 0.5 &
    TRACKWAY_TEST_PG_DSN=postgresql://postgres@127.0.0.1:54392/postgres \\
        .venv/bin/python benches/bench_serving.py --only postgres --no-peers ...

Each chunk is held until its own due time (arrival + delay), not after the one before it:
pipelined bytes keep their spacing, so the proxy adds latency, not a cap on throughput.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import selectors
import socket
import time


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    due: collections.deque[tuple[float, bytes]] = collections.deque()
    ready = asyncio.Event()
    done = False

    async def read() -> None:
        nonlocal done
        try:
            while data := await reader.read(65536):
                due.append((time.monotonic() + delay, data))
                ready.set()
        finally:
            done = True
            ready.set()

    async def write() -> None:
        while True:
            await ready.wait()
            ready.clear()
            while due:
                at, data = due.popleft()
                wait = at - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                writer.write(data)
                await writer.drain()
            if done:
                writer.close()
                return

    await asyncio.gather(read(), write(), return_exceptions=True)


async def _serve(listen: int, to: int, delay: float) -> None:
    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        ur, uw = await asyncio.open_connection("127.0.0.1", to)
        for side in (w, uw):  # small messages go out at once (no Nagle on top of the delay)
            side.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        await asyncio.gather(_pump(r, uw, delay), _pump(ur, w, delay), return_exceptions=True)

    server = await asyncio.start_server(handle, "127.0.0.1", listen)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", type=int, required=True, help="port to listen on")
    parser.add_argument("--to", type=int, required=True, help="the server's port")
    parser.add_argument("--delay-ms", type=float, default=0.5, help="added each way")
    args = parser.parse_args()
    # select() takes a timeout in microseconds; epoll and poll round it up to a millisecond,
    # which would turn a 0.5 ms delay into 1 ms or more
    loop = asyncio.SelectorEventLoop(selectors.SelectSelector())
    try:
        loop.run_until_complete(_serve(args.listen, args.to, args.delay_ms / 1000))
    finally:
        loop.close()


if __name__ == "__main__":
    main()
