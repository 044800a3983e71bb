"""``trackway replay``: rebuild the model requests of a recording and check their receipts.

Offline: nothing is sent. Any recording reads — the one format, the formats before it, a
snapshot's JSON — and a recording without model calls (a chart's run) says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from trackway.engine import Snapshot, TrackwayError

from ._cli_out import EXIT_MISMATCH, EXIT_UNREADABLE, EXIT_USAGE, CommandFailed, Out, safe

if TYPE_CHECKING:
    from trackway.agent import LLMRequest
    from trackway.agent.providers._http import HTTPProvider

__all__ = ["load_for_replay", "replay_calls"]


def load_for_replay(recording: Path) -> tuple[Snapshot, list[dict[str, Any]]]:
    """The recording's snapshot and its receipts, or a failure naming the file."""
    from trackway.agent import load_recording, receipts

    if not recording.exists():
        raise CommandFailed(
            f"no recording at {recording}; save one with save_recording(agent, path) or "
            "stream one with jsonl(path)"
        )
    try:
        snap = load_recording(recording)
        return snap, receipts(snap)
    except (TrackwayError, ValueError) as exc:
        raise CommandFailed(safe(exc)) from None


def replay_calls(out: Out, recording: Path, call: int | None, wire: bool) -> int:
    """With ``call``: print request ``call`` rebuilt, and check it against its receipt.
    Without: check every call, with progress, and print one row per call."""
    from trackway.agent import served_at

    snap, made = load_for_replay(recording)
    if not made:
        if call is not None:
            raise CommandFailed(
                f"--call {call}: {recording} holds no model calls (a chart's run of "
                f"{len(snap)} commits); `trackway show` or `trackway view` reads it",
                EXIT_USAGE,
            )
        out.line(f"{recording}: no model calls to rebuild (a run of {len(snap)} commits)")
        return 0
    if call is not None and not 1 <= call <= len(made):
        raise CommandFailed(
            f"--call {call}: the recording has {len(made)} model "
            f"call{'' if len(made) == 1 else 's'}, numbered from 1",
            EXIT_USAGE,
        )
    if call is None:
        return _check_all(out, snap, made)
    try:
        request = served_at(snap, call)
    except (TrackwayError, ValueError) as exc:
        raise CommandFailed(safe(exc)) from None
    receipt = made[call - 1]
    expected = receipt["request_hash"]
    same = request.hash == expected
    if wire:
        return _wire(out, request, receipt, call, same)
    out.line(
        orjson.dumps(
            request.model_dump(mode="json", exclude_none=True), option=orjson.OPT_INDENT_2
        ).decode()
    )
    out.line(f"request {call}: sha256 {request.hash}")
    out.line(
        f"receipt {call}: sha256 {expected}  ->  {'match' if same else 'MISMATCH'}",
        style="green" if same else "bold red",
    )
    return 0 if same else EXIT_MISMATCH


def _check_all(out: Out, snap: Snapshot, made: list[dict[str, Any]]) -> int:
    from trackway.agent import served_at

    rows: list[list[object]] = []
    mismatches = 0
    for k in out.progress(list(range(1, len(made) + 1)), f"rebuilding {len(made)} requests"):
        try:
            request = served_at(snap, k)
        except (TrackwayError, ValueError) as exc:
            raise CommandFailed(f"call {k}: {safe(exc)}") from None
        same = request.hash == made[k - 1]["request_hash"]
        mismatches += not same
        member = made[k - 1].get("member", "")
        rows.append([k, member or "-", len(request.messages), request.hash[:16], _verdict(same)])
    out.table(
        [
            ("call", "right"),
            ("member", "left"),
            ("messages", "right"),
            ("request sha256", "left"),
            ("receipt", "left"),
        ],
        rows,
    )
    if mismatches:
        out.error(f"{mismatches} of {len(made)} rebuilt requests do not match their receipts")
        return EXIT_MISMATCH
    out.line(f"all {len(made)} rebuilt requests match their receipts", style="green")
    return 0


def _verdict(same: bool) -> str:
    return "match" if same else "MISMATCH"


def _wire(out: Out, request: LLMRequest, receipt: dict[str, Any], call: int, same: bool) -> int:
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
        raise CommandFailed(f"call {call} {why}; drop --wire to see the request")
    base_url = str(via["base_url"])
    provider: HTTPProvider
    if via.get("provider") == "openai":
        provider = openai(request.model, base_url=base_url, api_key="")
    elif via.get("provider") == "anthropic":
        default = via.get("default_max_tokens", 1024)
        provider = anthropic(request.model, base_url=base_url, api_key="", max_tokens=default)
    else:
        raise CommandFailed(
            f"call {call} went to provider {via.get('provider')!r}: no wire format known",
            EXIT_UNREADABLE,
        )
    body = provider.wire(request, stream=bool(via.get("stream")))
    out.line(f"POST {provider.base_url}{provider.path}  (stream: {bool(via.get('stream'))})")
    out.line(body.decode())
    if not same:
        out.error(f"request {call} does not match its receipt: MISMATCH")
        return EXIT_MISMATCH
    return 0
