"""The artifact store port, its in-memory and run-store implementations, and what every
implementation shares: minting refs, checking what is put, and decoding data by media type.

A ref is ``art_`` and 22 url-safe characters from :mod:`secrets` (128 bits): never derived
from the content, so knowing a hash (a recording holds them) never lets anyone guess a ref.
The same bytes put again under one scope and kind return the ticket already minted (one
ticket per content: a tool called twice with the same large result yields one ref).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

import orjson

from trackway.engine.stores._artifact_rows import ArtifactRow, ArtifactRows, ArtifactTables

from ._meta import ARTIFACT_REF_PREFIX, ArtifactMeta, ArtifactScope

__all__ = [
    "ARTIFACT_LIST_LIMIT",
    "ArtifactStore",
    "MemoryArtifacts",
    "RunStoreArtifacts",
    "artifact_value",
    "checked_put",
    "is_ref",
    "meta_of",
    "mint",
]

ARTIFACT_LIST_LIMIT = 20
"""How many tickets ``list`` returns by default (newest first)."""
_REF = re.compile(r"art_[A-Za-z0-9_-]{22}")


@runtime_checkable
class ArtifactStore(Protocol):
    """Where artifacts are kept: anything with these four methods. Every lookup takes the
    scope: a ref minted under one scope is unknown under any other."""

    def put(self, data: bytes, *, kind: str, media_type: str, scope: ArtifactScope) -> ArtifactMeta:
        """Keep ``data`` and return its ticket (the existing one for the same bytes, kind
        and scope)."""
        ...

    def head(self, ref: str, scope: ArtifactScope) -> ArtifactMeta | None:
        """The ticket of ``ref`` under ``scope``, without its bytes (``None``: no such ref
        in this scope)."""
        ...

    def get(self, ref: str, scope: ArtifactScope) -> tuple[ArtifactMeta, bytes] | None:
        """The ticket and bytes of ``ref`` under ``scope`` (``None``: no such ref here)."""
        ...

    def list(
        self, scope: ArtifactScope, kind: str | None = None, limit: int = ARTIFACT_LIST_LIMIT
    ) -> list[ArtifactMeta]:
        """The live tickets of ``scope`` (of ``kind`` if given), newest first, at most
        ``limit``."""
        ...


def is_ref(value: object) -> bool:
    """Whether ``value`` is shaped like a ref (``art_`` and 22 url-safe characters)."""
    return isinstance(value, str) and _REF.fullmatch(value) is not None


def mint(data: bytes, kind: str, media_type: str, scope: ArtifactScope) -> ArtifactMeta:
    """A new ticket for ``data`` (a fresh random ref, the bytes' sha256 and size, now)."""
    created = datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
    return ArtifactMeta(
        ref=ARTIFACT_REF_PREFIX + secrets.token_urlsafe(16),
        kind=kind,
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
        media_type=media_type,
        created=created,
        scope=scope,
    )


def checked_put(data: object, kind: object, media_type: object, scope: object) -> None:
    """Refuse, naming the argument, what no store can keep faithfully."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"put(data=...) takes bytes, not {type(data).__name__}; encode it first")
    if not isinstance(kind, str) or not kind.strip():
        raise ValueError(
            f"put(kind={kind!r}): name the kind (a non-empty str, e.g. 'dataset/rows')"
        )
    if not isinstance(media_type, str) or "/" not in media_type:
        raise ValueError(f"put(media_type={media_type!r}): use a media type, e.g. 'text/csv'")
    if not isinstance(scope, ArtifactScope):
        raise TypeError(f"put(scope=...) takes an ArtifactScope, not {type(scope).__name__}")


def artifact_value(meta: ArtifactMeta, data: bytes) -> Any:
    """The data a ``wants`` argument receives: ``application/json`` decoded (JSON values),
    ``text/*`` as str, anything else as the bytes themselves."""
    media = meta.media_type.split(";", 1)[0].strip().lower()
    if media == "application/json" or media.endswith("+json"):
        return orjson.loads(data)
    if media.startswith("text/"):
        return data.decode("utf-8")
    return bytes(data)


def meta_of(row: ArtifactRow) -> ArtifactMeta:
    """The ticket a stored row describes."""
    scope = ArtifactScope(row.tenant, row.principal, row.conversation)
    return ArtifactMeta(row.ref, row.kind, row.sha256, row.size, row.media_type, row.created, scope)


def _parts(scope: ArtifactScope) -> tuple[str | None, str | None, str | None]:
    return scope.tenant, scope.principal, scope.conversation


class RunStoreArtifacts:
    """Artifacts kept in a run store's ``trackway_artifacts`` table: ``SqliteStore``,
    ``PostgresStore`` or ``MemoryStore`` (the runs and their artifacts in one place, one
    backup)."""

    def __init__(self, store: object) -> None:
        if not isinstance(store, ArtifactRows):
            raise TypeError(
                f"RunStoreArtifacts({store!r}): the store keeps no artifacts (it has no "
                "artifact_put, artifact_get, artifact_list); use SqliteStore, PostgresStore "
                "or MemoryStore, or FolderArtifacts(path)"
            )
        self.store = store

    def __repr__(self) -> str:
        return f"RunStoreArtifacts({self.store!r})"

    def put(self, data: bytes, *, kind: str, media_type: str, scope: ArtifactScope) -> ArtifactMeta:
        checked_put(data, kind, media_type, scope)
        meta = mint(bytes(data), kind, media_type, scope)
        row = ArtifactRow(
            meta.ref, kind, meta.sha256, meta.size, media_type, *_parts(scope), meta.created
        )
        return meta_of(self.store.artifact_put(row, bytes(data)))

    def head(self, ref: str, scope: ArtifactScope) -> ArtifactMeta | None:
        if not is_ref(ref):
            return None
        found = self.store.artifact_get(ref, _parts(scope), False)
        return None if found is None else meta_of(found[0])

    def get(self, ref: str, scope: ArtifactScope) -> tuple[ArtifactMeta, bytes] | None:
        if not is_ref(ref):
            return None
        found = self.store.artifact_get(ref, _parts(scope), True)
        if found is None:
            return None
        row, data = found
        assert data is not None
        return meta_of(row), data

    def list(
        self, scope: ArtifactScope, kind: str | None = None, limit: int = ARTIFACT_LIST_LIMIT
    ) -> list[ArtifactMeta]:
        return [meta_of(r) for r in self.store.artifact_list(_parts(scope), kind, limit)]


class _Tables(ArtifactTables):
    def __init__(self) -> None:
        import threading

        self._lock = threading.Lock()
        self._init_artifacts()


class MemoryArtifacts(RunStoreArtifacts):
    """Artifacts in this process's memory (tests, notebooks): nothing survives the
    process."""

    def __init__(self) -> None:
        super().__init__(_Tables())

    def __repr__(self) -> str:
        return "MemoryArtifacts()"
