"""Artifacts in recordings. A recording always refers to its artifacts by ticket and hash
(the ``artifacts`` flags of its ``tool_results`` rows); ``save_recording(...,
artifacts="embed")`` also writes each placed or redeemed artifact's bytes once per hash, as
``{"type": "artifact", ...}`` lines after the run (a reader of recordings skips lines of a
type it does not read), and :func:`recorded_artifacts` gives them back, checked against
their hashes. Replay and ``served_at`` need neither: the tickets are in the history."""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path
from typing import Any

import orjson

from trackway.engine import DocumentError, Snapshot, thaw
from trackway.tools.artifacts import ArtifactScope

from ..messages._errors import ArtifactsEmbedError
from ._plan import scope_of

__all__ = ["embed_artifacts", "recorded_artifacts", "tickets_of"]


def tickets_of(snap: Snapshot) -> list[dict[str, Any]]:
    """Every ticket the run placed or redeemed, once per hash, in the order first met."""
    seen: dict[str, dict[str, Any]] = {}
    for row in thaw(snap.state.get("tool_results") or []):
        flag = row.get("artifacts") or {}
        for ticket in [*flag.get("redeemed", ()), *([flag["placed"]] if "placed" in flag else [])]:
            seen.setdefault(ticket["sha256"], {k: v for k, v in ticket.items() if k != "arg"})
    return list(seen.values())


def embed_artifacts(snap: Snapshot, path: Path, store: Any) -> int:
    """Append the bytes of every ticket of ``snap`` to the recording at ``path`` (read from
    ``store`` under the run's scope); returns how many were written."""
    if store is None:
        raise ArtifactsEmbedError(
            "save_recording(..., artifacts='embed') needs the artifact store the run used: "
            "save the agent itself, or pass store=..."
        )
    state = snap.state
    scope: ArtifactScope = scope_of(state.get("identity"), state.get("session_id"), snap.run_id)
    lines = []
    for ticket in tickets_of(snap):
        found = store.get(ticket["ref"], scope)
        if found is None or found[0].sha256 != ticket["sha256"]:
            raise ArtifactsEmbedError(
                f"artifact {ticket['ref']} ({ticket['kind']}) is not in {store!r} under the "
                f"run's scope {scope}: pass the store the run placed it in, or save with "
                "artifacts='refer' (hashes only)"
            )
        lines.append(
            orjson.dumps(
                {
                    "type": "artifact",
                    "run_id": snap.run_id,
                    **ticket,
                    "data": base64.b64encode(found[1]).decode("ascii"),
                }
            )
            + b"\n"
        )
    with open(path, "ab") as f:
        f.write(b"".join(lines))
        f.flush()
        os.fsync(f.fileno())
    return len(lines)


def recorded_artifacts(path: str | os.PathLike[str]) -> dict[str, tuple[dict[str, Any], bytes]]:
    """The artifacts a recording embeds, by sha256: each ticket's fields (``ref``, ``kind``,
    ``size``, ``media_type``) and its bytes, checked against the hash (``{}`` for a recording
    saved with ``artifacts="refer"``). Put them in a store to redeem them again."""
    out: dict[str, tuple[dict[str, Any], bytes]] = {}
    for number, raw in enumerate(Path(path).read_bytes().splitlines(), start=1):
        if b'"type":"artifact"' not in raw:
            continue
        line = orjson.loads(raw)
        data = base64.b64decode(line.pop("data"))
        if hashlib.sha256(data).hexdigest() != line.get("sha256"):
            raise DocumentError(
                f"{path}: line {number}: the artifact's bytes do not match its sha256 (the "
                "recording was changed)",
                document="recording",
                source=str(path),
            )
        line.pop("type")
        line.pop("run_id", None)
        out[line["sha256"]] = (line, data)
    return out
