"""The cost of a ``system_prompt_cache_policy`` function per call, as the history grows.

One agent runs ``--calls`` tool calls against the mock (one result of ``--chars`` each), three
ways: no caching, ``system_prompt_cache_policy="always"``, and a function that flips its
answer every call (each call's request is hashed under the other prefix). It reports the
median wall time of the run per call in the first and the last tenth of the calls: the
function keeps a call O(new messages) when the two medians stay level, as they do without it.

    .venv/bin/python benches/bench_cache_policy.py [--calls 400] [--chars 4000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
from typing import Any

from _common import clock, fresh_heap, print_table

from trackway import tool
from trackway.agent import Agent, CacheCall, mock


def flipping(call: CacheCall) -> str:
    """A different answer every call: the worst case for the running hashes."""
    return "always" if call.k % 2 else "never"


def run_once(calls: int, chars: int, policy: Any) -> list[float]:
    """Stamps (seconds) at each model call of one run."""
    stamps: list[float] = []

    @tool
    def look(q: str) -> str:
        """Look something up."""
        return q * chars

    def respond(request: Any) -> dict[str, Any]:
        stamps.append(clock())
        n = len(stamps)
        if n > calls:
            return {"content": "done"}
        return {"tool_calls": [{"id": f"c{n}", "name": "look", "args": {"q": "x"}}]}

    options = {} if policy is None else {"system_prompt_cache_policy": policy}
    agent = (
        Agent.create(provider=mock(respond=respond), model="m", max_iterations=calls + 1, **options)
        .system("Be brief.")
        .tool(look)
        .build()
    )
    fresh_heap()
    agent.run_sync("go")
    return stamps


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--chars", type=int, default=4000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rows = []
    for label, policy in (("none", None), ("'always'", "always"), ("function", flipping)):
        first, last = [], []
        for _ in range(args.repeat):
            stamps = run_once(args.calls, args.chars, policy)
            gaps = [b - a for a, b in itertools.pairwise(stamps)]
            tenth = max(1, len(gaps) // 10)
            first.append(statistics.median(gaps[:tenth]))
            last.append(statistics.median(gaps[-tenth:]))
        a, b = statistics.median(first) * 1e3, statistics.median(last) * 1e3
        rows.append([label, f"{a:.3f}", f"{b:.3f}", f"{b / a:.2f}"])
    print_table(
        f"system_prompt_cache_policy, {args.calls} calls",
        ["cache policy", "ms/call first tenth", "ms/call last tenth", "last/first"],
        rows,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
