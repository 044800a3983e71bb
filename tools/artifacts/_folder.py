"""Artifacts in a folder: one directory per scope, each artifact two files (its bytes and its
ticket as JSON), written to a temporary name and moved into place, so a reader never sees a
half-written artifact.

A scope part becomes one inert path segment: ``=`` and the part percent-encoded (``None`` is
``_``), so ``..``, ``/`` and ``\\`` in a tenant or conversation land as literal names inside
the folder, never a step out of it.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from urllib.parse import quote

import orjson

from ._meta import ArtifactMeta, ArtifactScope
from ._store import ARTIFACT_LIST_LIMIT, checked_put, is_ref, mint

__all__ = ["FolderArtifacts", "scope_segment"]


def scope_segment(part: str | None) -> str:
    """One scope part as one inert directory name."""
    return "_" if part is None else "=" + quote(part, safe="")


class FolderArtifacts:
    """Artifacts kept under ``path`` (made if missing). Several processes may share the
    folder; the same bytes put twice under one scope and kind keep one ticket."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)

    def __repr__(self) -> str:
        return f"FolderArtifacts({str(self.path)!r})"

    def _dir(self, scope: ArtifactScope) -> Path:
        parts = (scope.tenant, scope.principal, scope.conversation)
        return self.path.joinpath(*(scope_segment(p) for p in parts))

    def put(self, data: bytes, *, kind: str, media_type: str, scope: ArtifactScope) -> ArtifactMeta:
        checked_put(data, kind, media_type, scope)
        data = bytes(data)
        meta = mint(data, kind, media_type, scope)
        where = self._dir(scope)
        (where / "by-content").mkdir(parents=True, exist_ok=True)
        content = (
            where / "by-content" / hashlib.sha256(f"{kind}\0{meta.sha256}".encode()).hexdigest()
        )
        if content.is_file():  # kept before: its ticket
            held = self.head(content.read_text("ascii").strip(), scope)
            if held is not None:
                return held
        _write(where / f"{meta.ref}.bin", data)
        _write(where / f"{meta.ref}.json", orjson.dumps(_doc(meta)))
        _write(content, meta.ref.encode("ascii"))
        return meta

    def head(self, ref: str, scope: ArtifactScope) -> ArtifactMeta | None:
        if not is_ref(ref):  # a ref is never a path: nothing else is looked up
            return None
        try:
            doc = orjson.loads((self._dir(scope) / f"{ref}.json").read_bytes())
        except FileNotFoundError:
            return None
        return ArtifactMeta(
            doc["ref"], doc["kind"], doc["sha256"], doc["size"], doc["media_type"],
            doc["created"], scope,
        )  # fmt: skip

    def get(self, ref: str, scope: ArtifactScope) -> tuple[ArtifactMeta, bytes] | None:
        meta = self.head(ref, scope)
        if meta is None:
            return None
        return meta, (self._dir(scope) / f"{ref}.bin").read_bytes()

    def list(
        self, scope: ArtifactScope, kind: str | None = None, limit: int = ARTIFACT_LIST_LIMIT
    ) -> list[ArtifactMeta]:
        where = self._dir(scope)
        if limit <= 0 or not where.is_dir():
            return []
        metas = [self.head(p.stem, scope) for p in where.glob("art_*.json")]
        kept = [m for m in metas if m is not None and (kind is None or m.kind == kind)]
        kept.sort(key=lambda m: (m.created, m.ref), reverse=True)
        return kept[:limit]


def _doc(meta: ArtifactMeta) -> dict[str, object]:
    return {**meta.ticket(), "created": meta.created}


def _write(path: Path, data: bytes) -> None:
    """``data`` at ``path``, whole or not at all."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
