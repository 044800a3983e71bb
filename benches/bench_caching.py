"""Prompt caching on a real server: a 10-turn conversation, turn by turn.

An agent talks to an OpenAI-compatible llama.cpp server (``TRACKWAY_TEST_LLAMA_URL``, or
``--url``) for ``--turns`` turns (``follow_up``), twice: once as trackway serves it (a
byte-stable prefix: every call's body starts with the previous call's messages, byte for
byte), and once with a system prompt that changes every turn (a moving piece before the
whole conversation, which defeats a server's prefix cache). For each call it reports what
the server reported (``prompt_tokens``, the cached tokens of ``prompt_tokens_details`` and
llama.cpp's ``timings`` ``cache_n``/``prompt_n`` when the server sends them; ``–`` when it
does not), the wall time of the call, and how many bytes of the request body's messages the
previous call had already sent (the prefix the server can reuse).

Prints a table per conversation and a summary, and writes
``benches/results/bench_caching.json``. With no server reachable it says so and exits 0.

    .venv/bin/python benches/bench_caching.py [--url URL] [--turns 10] [--max-tokens 24]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

import httpx2
import orjson
from _common import clock, print_table, write_json

from trackway.agent import Agent, openai

QUESTIONS = [
    "Name a prime number below 20.",
    "And one above 20?",
    "What is 7 times 8?",
    "Name a colour of the sky.",
    "Name a planet.",
    "What is the capital of France?",
    "Name a fruit.",
    "What is 12 plus 30?",
    "Name an ocean.",
    "Say goodbye in one word.",
]
SYSTEM = (
    "You are a terse assistant. Answer in at most one short sentence. "
    "Never explain unless asked. Prefer exact figures. " * 4
)


class Tap(httpx2.AsyncBaseTransport):
    """The real network, keeping each request body, its raw response and its wall time."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        inner = httpx2.AsyncHTTPTransport(limits=httpx2.Limits(max_keepalive_connections=0))
        started = clock()
        response = await inner.handle_async_request(request)
        raw = await response.aread()
        self.calls.append({"body": request.content, "response": raw, "s": clock() - started})
        return httpx2.Response(response.status_code, headers=response.headers, content=raw)


def shared_prefix(a: bytes, b: bytes) -> int:
    """How many leading bytes ``a`` and ``b`` share."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def conversation(url: str, turns: int, max_tokens: int, moving: bool) -> list[dict[str, Any]]:
    """Run ``turns`` turns; one row per model call, with what the server reported."""
    tap = Tap()
    provider = openai("smollm2", base_url=url, transport=tap, timeout=120.0, api_key="none")
    rows: list[dict[str, Any]] = []
    agent = None
    for turn in range(1, turns + 1):
        system = f"Turn {turn} at {time.time_ns()}. {SYSTEM}" if moving else SYSTEM
        built = (
            Agent.create(
                provider=provider,
                model="smollm2",
                max_tokens=max_tokens,
                temperature=0.0,
                stream=False,
                cache_strategy="conversation",  # recorded; the OpenAI body stays as it is
                extra_body={"cache_prompt": True},  # llama.cpp's own switch (its default)
            )
            .system(system)
            .build()
        )
        question = QUESTIONS[(turn - 1) % len(QUESTIONS)]
        if agent is None:
            built.run_sync(question)
        else:
            built.run_sync(question, continue_from=agent.checkpoint())
        agent = built
    previous = b""
    for turn, call in enumerate(tap.calls, 1):
        body = orjson.loads(call["body"])
        messages = orjson.dumps(body["messages"])
        data = orjson.loads(call["response"])
        usage = data.get("usage") or {}
        details = usage.get("prompt_tokens_details") or {}
        timings = data.get("timings") or {}
        rows.append(
            {
                "turn": turn,
                "messages_bytes": len(messages),
                "reused_bytes": shared_prefix(previous, messages),
                "prompt_tokens": usage.get("prompt_tokens"),
                "cached_tokens": details.get("cached_tokens", timings.get("cache_n")),
                "prompt_n": timings.get("prompt_n"),
                "prompt_ms": timings.get("prompt_ms"),
                "call_ms": round(call["s"] * 1000, 1),
            }
        )
        previous = messages
    return rows


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=os.environ.get("TRACKWAY_TEST_LLAMA_URL"))
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--max-tokens", type=int, default=24)
    parser.add_argument("--quick", action="store_true", help="3 turns")
    args, _ = parser.parse_known_args(argv)
    url = args.url or "http://127.0.0.1:18080/v1"
    try:
        httpx2.get(f"{url}/models", timeout=5.0).raise_for_status()
    except httpx2.HTTPError as exc:
        print(f"bench_caching: no server at {url} ({exc}); nothing measured")
        return 0
    turns = 3 if args.quick else args.turns
    runs = {}
    for name, moving in (("stable", False), ("moving", True)):
        rows = conversation(url, turns, args.max_tokens, moving)
        runs[name] = rows
        headers = list(rows[0])
        print_table(
            f"{name} prefix: {turns} turns on {url}",
            headers,
            [[r[h] for h in headers] for r in rows],
        )
    summary = []
    for name, rows in runs.items():
        later = rows[1:] or rows
        summary.append(
            {
                "conversation": name,
                "first_call_ms": rows[0]["call_ms"],
                "median_later_call_ms": statistics.median(r["call_ms"] for r in later),
                "later_reused_share": round(
                    sum(r["reused_bytes"] for r in later)
                    / max(1, sum(r["messages_bytes"] for r in later)),
                    3,
                ),
                "server_reports_cache": "yes"
                if any(r["cached_tokens"] is not None for r in rows)
                else "no",
            }
        )
    headers = list(summary[0])
    print_table("Summary", headers, [[s[h] for h in headers] for s in summary])
    path = write_json(
        "bench_caching", {"url": url, "turns": turns, "runs": runs, "summary": summary}
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
