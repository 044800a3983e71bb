"""An assistant that remembers a person's preferences across runs, in separate processes.

Run it: ``python examples/memory_assistant.py``. Offline: a scripted stand-in for the model
(the ``mock`` provider) answers from what it is served, as a model would:

1. this process runs the first turn for Ana at Acme: she says how she takes her coffee and
   what to call her. After the answer, ``memory-write`` keeps the turn (the ``recent``
   memory) and the facts ``extract`` read from it (the ``facts`` memory) in the SQLite file;
2. the script starts itself again, as a new process, for the second turn: a fresh agent
   on the same file recalls Ana's memory before the turn (``memory-recall``) and serves it
   after the system prompt, so the model knows her order;
3. a third process asks the same thing for Ana at another tenant, Globex: memory is scoped
   by (tenant, principal, conversation id), so nothing is recalled and the model says it
   does not know.

Each process checks that every request it sent is rebuilt from its record (``served_at``)
and replays its run from the recording alone (no store, no ``extract`` call).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from trackway import LLMRequest, SqliteStore, mock, receipts, replay, served_at
from trackway.agent import Agent, MemoryTurn, define_memory, load_recording, save_recording

ANA = {"tenant": "acme", "principal": "ana", "conversation_id": "assistant"}
ANA_ELSEWHERE = {"tenant": "globex", "principal": "ana", "conversation_id": "assistant"}


def extract(turn: MemoryTurn) -> dict[str, str]:
    """The facts a turn states: "I take my coffee X" and "call me Y" (a real assistant might
    ask a small model here; whatever it returns is kept per key, the latest winning)."""
    facts = {}
    coffee = re.search(r"I take my coffee ([^.]+)", turn.user)
    if coffee:
        facts["coffee"] = coffee.group(1)
    name = re.search(r"call me (\w+)", turn.user)
    if name:
        facts["name"] = name.group(1)
    return facts


def model(request: LLMRequest) -> str:
    """The stand-in model: it answers from the facts it is served, or says it has none."""
    system = request.system or ""
    asked = request.messages[-1].content or ""
    if "coffee" in asked and "?" not in asked:
        return "Noted: I will remember how you take your coffee."
    coffee = re.search(r"- coffee: (.+)", system)
    name = re.search(r"- name: (.+)", system)
    if coffee is None:
        return "I don't know how you take your coffee yet: tell me and I will remember."
    return f"{coffee.group(1).capitalize()}, {name.group(1) if name else 'friend'}."


def assistant(db: Path) -> Agent:
    return (
        Agent.create(provider=mock(respond=model), model="mock", store=SqliteStore(db))
        .system("You are a personal assistant. Use what you remember about the person.")
        .memory(
            define_memory("recent", turns=4),
            define_memory("facts", extract=extract, max_facts=20),
        )
        .build()
    )


def turn(db: Path, message: str, identity: dict[str, str], label: str) -> str:
    """One turn in this process; prints what was recalled and the answer, checks the law
    and replays the run from its recording."""
    agent = assistant(db)
    answer = agent.run_sync(message, identity=identity)
    snap = agent.snapshot()
    recalled = {row["id"]: row["entries"] for row in snap.state["memory_recall"]}
    print(f"[{label}] {identity['tenant']}/{identity['principal']}: {message}")
    print(f"[{label}] recalled: {recalled}")
    print(f"[{label}] answer: {answer}")
    law = all(served_at(snap, k).hash == r["request_hash"] for k, r in enumerate(receipts(snap), 1))
    path = save_recording(agent, db.with_name(f"{label}.jsonl"))
    replayed = replay(load_recording(path))  # no agent, no store, no extract
    print(f"[{label}] served_at matches every receipt: {law}; replayed: {replayed.status}")
    return answer


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, help="the SQLite file (default: a new one)")
    ap.add_argument("--turn", choices=["first", "second", "elsewhere"], default=None)
    args = ap.parse_args()
    if args.turn == "second":
        turn(args.db, "How do I take my coffee?", ANA, "second")
        return 0
    if args.turn == "elsewhere":
        turn(args.db, "How do I take my coffee?", ANA_ELSEWHERE, "elsewhere")
        return 0
    db = args.db or Path(tempfile.mkdtemp()) / "assistant.db"
    turn(db, "I take my coffee black with one sugar. Please call me Ana.", ANA, "first")
    for which in ("second", "elsewhere"):  # each a new process on the same file
        done = subprocess.run(
            [sys.executable, __file__, "--db", str(db), "--turn", which],
            capture_output=True,
            text=True,
            check=False,
        )
        print(done.stdout, end="")
        if done.returncode != 0:
            print(done.stderr, file=sys.stderr)
            return done.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
