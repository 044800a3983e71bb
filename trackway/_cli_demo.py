"""``trackway demo``: a flowchart and an agent, run offline on the embedded SQLite store."""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

from trackway.engine import Executor, SqliteStore, causal_chain
from trackway.recorders import jsonl, load_recording, narrative

from ._cli_out import CommandFailed, Out
from ._demo import demo_agent, demo_chart

__all__ = ["run_demo"]


def run_demo(out: Out, db: Path) -> int:
    """Run the loan chart and the weather agent into ``db``; print their narratives, the
    files written and the next commands to try (each works as printed)."""
    chart = demo_chart()
    out.line(chart.describe())
    out.line()
    db.parent.mkdir(parents=True, exist_ok=True)
    folder = db.parent
    recording = folder / "recording.jsonl"
    recording.unlink(missing_ok=True)  # one run per demo: the viewer shows this one
    story = narrative()
    store = SqliteStore(db)
    try:
        result = Executor(
            chart, store=store, recorders=[story, jsonl(recording, chart=chart)]
        ).run_sync({"application": {"name": "Ada Lovelace", "amount": 18_000, "income": 64_000}})
        snap = store.load(result.run_id)  # read back from the store, not from memory
        if snap != result.snapshot or load_recording(recording, result.run_id) != snap:
            raise CommandFailed("the stored run or the recording differs from the run")
        out.line(f"Run {result.run_id}: {result.status}, {len(snap)} commits", style="bold")
        out.line()
        out.line(story.text(result.run_id))
        route = next(c.seq for c in snap.history() if c.stage_id == "route")
        before = {k: snap.state_at(route - 1)[k] for k in ("credit_score", "debt_to_income")}
        out.line()
        out.line(f"Time travel: just before Route (state_at({route - 1})): {before}")
        out.line(f"Why 'decision'? (causal trace)\n{causal_chain(snap, 'decision').render()}")
        out.line()
        out.line(f"Final decision: {result.state['decision']}", style="bold")
        agent_path, agent_run = _demo_agent(out, folder, store)
    finally:
        store.close()
    exe = _command()
    out.line()
    out.line(f"Store: {db}\nRecordings: {recording}, {agent_path}")
    out.line("Next, try:", style="bold")
    for line in (
        [exe, "runs", "--store", str(db)],
        [exe, "show", result.run_id, "--store", str(db)],
        [exe, "show", agent_run, "--store", str(db), "--detail", "full"],
        [exe, "replay", str(agent_path), "--call", "2"],
        [exe, "view", str(recording), "-o", str(folder / "trace.html")],
        [exe, "view", str(agent_path), "-o", str(folder / "agent-trace.html")],
    ):
        out.line("  " + shlex.join(line))
    return 0


def _demo_agent(out: Out, folder: Path, store: SqliteStore) -> tuple[Path, str]:
    """The agent half: a turn kept in the store, its narrative, one request rebuilt exactly."""
    from trackway.agent import receipts, save_recording, served_at

    story = narrative()
    agent = demo_agent((story,), store=store)
    out.line()
    out.line("--- An agent is a flowchart too ---", style="bold")
    answer = agent.run_sync("Weather in Paris?")
    out.line(story.text())  # one line per step; the stages underneath: show --detail full
    out.line(
        f"({agent.commit_count()} commits, one per stage of the agent's chart: "
        "`show ... --detail full` below tells each, read by read)"
    )
    path = save_recording(agent, folder / "agent-recording.jsonl")
    rebuilt = served_at(path, 2)
    same = rebuilt.hash == receipts(path)[1]["request_hash"]
    out.line(f"Answer: {answer}")
    out.line(
        f"Request 2 rebuilt from the recording alone: {len(rebuilt.messages)} messages, "
        f"hash matches the receipt: {same}"
    )
    return path, agent.snapshot().run_id


def _command() -> str:
    """How to call this command again from here (it may live in a venv not on PATH)."""
    here = Path(sys.argv[0])
    if shutil.which("trackway") == str(here.resolve()) or here.name != "trackway":
        return "trackway"
    try:
        return str(here.relative_to(Path.cwd()))
    except ValueError:
        return str(here)
