"""Resume the checkpoint file of the compatibility fixtures in a process of its own, as a
second process would: ``python -m tests.compat.resume_checkpoint BACKEND PATH ANSWER``.

A checkpoint kept without a store resumes once per process (the claim is held in the
process), so each run of the test resumes it in a fresh one. Prints the result as JSON:
its status, run id, final state and log.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import orjson

from tests.compat import definitions as d
from trackway.engine import Executor, RunResult, thaw


async def _resume(data: bytes, answer: str) -> RunResult:
    executor = Executor(d.order_chart(), checkpoint_key=d.CHECKPOINT_KEY)
    return await executor.resume(data, answer)


def main(backend: str, path: str, answer: str) -> None:
    result = anyio.run(_resume, Path(path).read_bytes(), answer, backend=backend)
    log = [[c.stage_path, c.kind, c.outcome] for c in result.snapshot.history()]
    print(
        orjson.dumps(
            {
                "status": result.status,
                "run_id": result.run_id,
                "state": thaw(result.state),
                "log": log,
            }
        ).decode()
    )


if __name__ == "__main__":
    main(*sys.argv[1:4])
