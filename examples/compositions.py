"""Three compositions on one record: a researcher then a writer, a debate with a judge, and
a reflexion loop.

Run it: ``python examples/compositions.py``. Offline: every model is scripted (``mock``).
Each composition is one chart whose members are isolated subflows, so each run is one
commit log: the script prints each answer, which member made each model call (from the
receipts), checks that every request rebuilds from the record with the hash its receipt
committed, and replays each composition without a model: with the composition, and from
its record alone.
"""

from __future__ import annotations

from trackway import (
    Agent,
    LLMCall,
    Loop,
    Parallel,
    Sequence,
    mock,
    receipts,
    replay,
    served_at,
)


def llm(system: str, *replies: str) -> Agent:
    return LLMCall.create(
        provider=mock(replies=list(replies)), model="small", system=system
    ).build()


def article() -> Agent:
    return (
        Sequence.create(name="article")
        .step(
            "research",
            llm("List the facts.", "Rayleigh scattering; shorter wavelengths scatter more."),
        )
        .step(
            "write",
            llm(
                "Write one sentence.",
                "The sky looks blue because air scatters short blue wavelengths most.",
            ),
        )
        .build()
    )


def debate() -> Agent:
    return (
        Parallel.create(name="debate")
        .branch("pro", llm("Argue for.", "Tabs: one character per level."))
        .branch("con", llm("Argue against.", "Spaces: the same everywhere."))
        .merge(llm("Judge the debate.", "Spaces win: consistency beats brevity."))
        .build()
    )


def reflexion() -> Agent:
    drafts = llm(
        "Write, then revise your last draft; say APPROVED when it is good.",
        "Old pond / a frog",
        "Old pond / a frog jumps in / the sound of water APPROVED",
    )
    return (
        Loop.create(drafts, name="reflexion")
        .until(lambda answer, round: "APPROVED" in answer)
        .max_rounds(3)
        .build()
    )


def show(title: str, runner: Agent, message: str) -> None:
    answer = runner.run_sync(message)
    snap = runner.snapshot()
    calls = receipts(snap)
    exact = all(served_at(snap, k).hash == r["request_hash"] for k, r in enumerate(calls, 1))
    replayed = replay(snap, runner).state["final_answer"] == answer
    alone = replay(snap).state["final_answer"] == answer  # no composition: the record alone
    print(f"{title}: {answer}")
    members = [r["member"] for r in calls]
    print(f"  calls by member: {members}; rebuilt exactly: {exact}; replayed: {replayed}")
    print(f"  replayed from the record alone: {alone}")


def main() -> None:
    show("article", article(), "Why is the sky blue?")
    show("debate", debate(), "Tabs or spaces?")
    show("reflexion", reflexion(), "A haiku about a pond.")


if __name__ == "__main__":
    main()
