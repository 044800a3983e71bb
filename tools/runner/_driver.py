"""The program a local session's interpreter runs: it sets its rlimits (soft = hard, before
any code; not in a ``preexec_fn``, which is unsafe in the agent's worker thread), says it
is ready, then reads framed code blocks on fd 0 and executes each in one namespace (so
variables survive between calls), writing a framed reply per block on the control
descriptor. The code's own stdout and stderr are the process's, read by the parent with a
cap. A frame is a 4-byte big-endian length and a JSON document."""

from __future__ import annotations

import json
import struct

__all__ = ["DRIVER", "frame", "unframe_length"]

DRIVER = r"""
import json, os, resource, struct, sys, traceback

def _main(control_fd, limits):
    for name, value in limits.items():
        resource.setrlimit(getattr(resource, name), (value, value))
    inbox = os.fdopen(os.dup(0), "rb", buffering=0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    outbox = os.fdopen(control_fd, "wb", buffering=0)
    me = os.getpid()
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}

    def send(document):
        data = json.dumps(document).encode()
        outbox.write(struct.pack(">I", len(data)) + data)

    send({"ready": True})  # the code's time limit starts now, not at the exec

    def read(n):
        got = b""
        while len(got) < n:
            part = inbox.read(n - len(got))
            if not part:
                return None
            got += part
        return got

    while True:
        head = read(4)
        if head is None:
            return
        body = read(struct.unpack(">I", head)[0])
        if body is None:
            return
        request = json.loads(body)
        os.environ["TRACKWAY_STAGED_INPUTS"] = json.dumps(request["staged"])
        reply = {"status": "ok", "exit_code": 0, "error": None}
        try:
            exec(compile(request["code"], "<code>", "exec"), namespace)
        except SystemExit as exc:
            code = exc.code
            if code is None or isinstance(code, int):
                reply = {"status": "exit", "exit_code": code or 0, "error": None}
            else:
                print(code, file=sys.stderr)
                reply = {"status": "exit", "exit_code": 1, "error": None}
        except BaseException as exc:
            reply = {"status": "error", "exit_code": 1, "error": type(exc).__name__}
            try:
                traceback.print_exception(type(exc), exc, exc.__traceback__.tb_next)
            except BaseException:
                pass
        if os.getpid() != me:  # a process the code forked reached the end of its block
            os._exit(0)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        send(reply)

_main(int(sys.argv[1]), json.loads(sys.argv[2]))
"""


def frame(document: dict[str, object]) -> bytes:
    """``document`` as one frame."""
    data = json.dumps(document).encode()
    return struct.pack(">I", len(data)) + data


def unframe_length(head: bytes | bytearray) -> int:
    """The body length a frame's 4-byte head announces."""
    length: int = struct.unpack(">I", head)[0]
    return length
