"""The ``trackway`` command line: an offline demo and a look into a run store.

Exit codes: 0 done; 1 the store, run or recording could not be read (the message names the
file and what is wrong); 2 a usage error (a bad option, a call number the recording does not
have); 3 a rebuilt request does not match its receipt (``replay``). Every line printed
has its control characters escaped (``\x1b`` shows as ``\\x1b``): a stored value can never
drive the terminal. ``runs`` and ``show`` open the store read-only and never change it.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import orjson

from trackway.engine import Executor, Snapshot, SqliteStore, TrackwayError, causal_chain
from trackway.recorders import jsonl, load_recording, narrative

from ._demo import demo_agent, demo_chart

if TYPE_CHECKING:
    from trackway.agent import LLMRequest
    from trackway.agent._http import HTTPProvider

__all__ = ["main"]

DEFAULT_DB = Path("trackway-demo") / "runs.db"

# C0 and C1 controls (ESC, BEL, CR, ...) and the bidirectional overrides that reorder text
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    return match.group().encode("unicode_escape").decode("ascii")


def _e(value: object) -> str:
    """A value from a store or a recording, safe to print on one line."""
    return _CONTROL.sub(_escape, str(value)).replace("\n", "\\n").replace("\t", "\\t")


def _say(*parts: object, sep: str = " ", end: str = "\n", file: TextIO | None = None) -> None:
    """Every line this command prints: control characters escaped, newlines kept."""
    text = sep.join(str(p) for p in parts)
    print(_CONTROL.sub(_escape, text), end=end, file=file)


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


def _print_trail(snap: Snapshot) -> None:
    for c in snap.history():
        writes = ", ".join(f"{op.kind} {_e(op.key)}" for op in c.ops) or "no writes"
        frame = f" [in {_e(c.frame)}]" if c.frame else ""
        _say(
            f"  {c.seq:>3}. {_e(c.stage_path):<22} {_e(c.outcome):<8} read "
            f"{[_e(r) for r in c.reads]}; {writes}{frame}"
        )
        decision = (c.detail or {}).get("decision")
        if decision:
            for rule in decision.get("rules", []):
                mark = "matched" if rule.get("matched") else "no match"
                _say(f"         rule {_e(repr(rule.get('label')))}: {mark}")
            chosen = decision.get("chosen", decision.get("selected"))
            _say(f"         chose {_e(repr(chosen))}")


def _demo(db: Path) -> int:
    chart = demo_chart()
    _say(chart.describe(), end="\n\n")
    db.parent.mkdir(parents=True, exist_ok=True)
    recording = db.parent / "recording.jsonl"
    story = narrative()
    store = SqliteStore(db)
    try:
        result = Executor(chart, store=store, recorders=[story, jsonl(recording)]).run_sync(
            {"application": {"name": "Ada Lovelace", "amount": 18_000, "income": 64_000}}
        )
        snap = store.load(result.run_id)  # read back from the store, not from memory
    finally:
        store.close()
    if snap != result.snapshot or load_recording(recording, result.run_id) != snap:
        _say("the stored run or the recording differs from the run", file=sys.stderr)
        return 1
    _say(f"Run {result.run_id}: {result.status}, {len(snap)} commits\n")
    _say(story.text(result.run_id))
    route = next(c.seq for c in snap.history() if c.stage_id == "route")
    before = {k: snap.state_at(route - 1)[k] for k in ("credit_score", "debt_to_income")}
    _say(f"\nTime travel: just before Route (state_at({route - 1})): {before}")
    _say(f"Why 'decision'? (causal trace)\n{causal_chain(snap, 'decision').render()}")
    _say(f"\nFinal decision: {result.state['decision']}")
    folder = db.parent
    _demo_agent(folder)
    _say(f"\nStore: {db}\nRecording: {recording}")
    exe = _command()
    _say(f"Next: {exe} runs --db {db}   |   {exe} show {result.run_id} --db {db}")
    _say(f"      {exe} replay {folder / 'agent-recording.jsonl'} --call 2")
    return 0


def _demo_agent(folder: Path) -> None:
    """The agent half of the demo: a turn, its narrative, and one request rebuilt exactly."""
    from trackway.agent import receipts, save_recording, served_at

    story = narrative()
    agent = demo_agent((story,))
    _say("\n--- An agent is a flowchart too ---")
    answer = agent.run_sync("Weather in Paris?")
    _say(story.text())
    path = save_recording(agent, folder / "agent-recording.jsonl")
    rebuilt = served_at(path, 2)
    same = rebuilt.hash == receipts(path)[1]["request_hash"]
    _say(f"Answer: {answer}")
    _say(
        f"Request 2 rebuilt from the recording alone: {len(rebuilt.messages)} messages, "
        f"hash matches the receipt: {same}"
    )
    _say(f"Agent recording: {path}")


def _command() -> str:
    """How to call this command again from here (it may live in a venv not on PATH)."""
    here = Path(sys.argv[0])
    if shutil.which("trackway") == str(here.resolve()) or here.name != "trackway":
        return "trackway"
    try:
        return str(here.relative_to(Path.cwd()))
    except ValueError:
        return str(here)


EXIT_UNREADABLE = 1
EXIT_USAGE = 2
EXIT_MISMATCH = 3


def _replay(recording: Path, call: int, wire: bool = False) -> int:
    """Print model request ``call`` rebuilt from the recording, and check it against the
    receipt; with ``wire``, print the HTTP body its provider sends for it instead."""
    from trackway.agent import receipts, served_at

    if not recording.exists():
        _say(
            f"no recording at {recording}; save one with save_recording(agent, path)",
            file=sys.stderr,
        )
        return EXIT_UNREADABLE
    try:
        made = receipts(recording)
        if not 1 <= call <= len(made):
            _say(
                f"--call {call}: the recording has {len(made)} model "
                f"call{'' if len(made) == 1 else 's'}, numbered from 1",
                file=sys.stderr,
            )
            return EXIT_USAGE
        request = served_at(recording, call)
    except (TrackwayError, ValueError) as exc:
        _say(_e(exc), file=sys.stderr)
        return EXIT_UNREADABLE
    receipt = made[call - 1]
    expected = receipt["request_hash"]
    same = request.hash == expected
    if wire:
        return _wire(request, receipt, call, same)
    _say(
        orjson.dumps(
            request.model_dump(mode="json", exclude_none=True), option=orjson.OPT_INDENT_2
        ).decode()
    )
    _say(f"request {call}: sha256 {request.hash}")
    _say(f"receipt {call}: sha256 {expected}  ->  {'match' if same else 'MISMATCH'}")
    return 0 if same else EXIT_MISMATCH


def _wire(request: LLMRequest, receipt: dict[str, Any], call: int, same: bool) -> int:
    """The HTTP body the recorded provider sends for ``request`` (no network)."""
    from trackway.agent import anthropic, openai

    via = receipt.get("via")
    if not isinstance(via, dict) or "base_url" not in via:
        kind = via.get("provider") if isinstance(via, dict) else None
        why = (
            f"went to provider {kind!r}, which has no HTTP wire"
            if kind
            else "is not described in its receipt (recorded by an older trackway)"
        )
        _say(f"call {call} {why}; drop --wire to see the request", file=sys.stderr)
        return EXIT_UNREADABLE
    base_url = str(via["base_url"])
    provider: HTTPProvider
    if via.get("provider") == "openai":
        provider = openai(request.model, base_url=base_url, api_key="")
    elif via.get("provider") == "anthropic":
        default = via.get("default_max_tokens", 1024)
        provider = anthropic(request.model, base_url=base_url, api_key="", max_tokens=default)
    else:
        _say(
            f"call {call} went to provider {via.get('provider')!r}: no wire format known",
            file=sys.stderr,
        )
        return EXIT_UNREADABLE
    body = provider.wire(request, stream=bool(via.get("stream")))
    _say(f"POST {provider.base_url}{provider.path}  (stream: {bool(via.get('stream'))})")
    _say(body.decode())
    if not same:
        _say(f"request {call} does not match its receipt: MISMATCH", file=sys.stderr)
        return EXIT_MISMATCH
    return 0


def _runs(db: Path) -> int:
    if not db.exists():
        _say(f"no run store at {db}; run `trackway demo` first or pass --db", file=sys.stderr)
        return 1
    try:
        store = SqliteStore(db, read_only=True)
        try:
            runs = store.list_runs()
        finally:
            store.close()
    except TrackwayError as exc:
        _say(_e(exc), file=sys.stderr)
        return 1
    _say(f"{'run id':<32} {'chart':<10} {'status':<8} {'commits':>7}  started (UTC)")
    for r in runs:
        _say(
            f"{_e(r.run_id):<32} {_e(r.chart_id):<10} {_e(r.status):<8} {r.commit_count:>7}  "
            f"{_when(r.started_at)}"
        )
    return 0


def _show(run_id: str, db: Path) -> int:
    if not db.exists():
        _say(f"no run store at {db}; pass --db", file=sys.stderr)
        return 1
    try:
        store = SqliteStore(db, read_only=True)
        try:
            snap = store.load(run_id)
        finally:
            store.close()
    except TrackwayError as exc:
        _say(_e(exc), file=sys.stderr)
        return 1
    _say(
        f"Run {_e(snap.run_id)} (chart {_e(snap.chart_id)}): {_e(snap.status)}, {len(snap)} commits"
    )
    _print_trail(snap)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="trackway", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in (
        ("demo", "run an offline demo chart on the embedded SQLite store; print its trail"),
        ("runs", "list the runs in a store"),
        ("show", "print one run's commit log"),
    ):
        cmd = sub.add_parser(name, help=text)
        if name == "show":
            cmd.add_argument("run_id")
        cmd.add_argument(
            "--db",
            type=Path,
            default=DEFAULT_DB,
            help=f"the SQLite run store (default: {DEFAULT_DB})",
        )
    replay = sub.add_parser(
        "replay", help="rebuild model request K of an agent recording and check its receipt"
    )
    replay.add_argument("recording", type=Path, help="a file written by save_recording")
    replay.add_argument("--call", type=int, default=1, help="which model call (1-based)")
    replay.add_argument(
        "--wire",
        action="store_true",
        help="print the HTTP body the recorded provider sends for that request",
    )
    args = parser.parse_args(argv)
    if args.command == "replay":
        return _replay(args.recording, args.call, args.wire)
    if args.command == "demo":
        return _demo(args.db)
    if args.command == "runs":
        return _runs(args.db)
    return _show(args.run_id, args.db)


if __name__ == "__main__":
    sys.exit(main())
