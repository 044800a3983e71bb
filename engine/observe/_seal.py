"""Sealing: what a redaction policy hides, kept at rest encrypted under a key the workers hold.

Redaction keeps hidden values out of every retained surface, so a store alone cannot resume
a redacted run's pause by id, recover it after its process died, or hold a queued run's
input. A store given a :class:`Seal` keeps, beside each redacted row, the real value sealed
with AES-256-GCM (the ``seal`` extra: ``cryptography``): the run's input, each commit the
policy changed, the real checkpoint, the answer a claim used, and the queue's input and
answer. Only the executor's resume and recovery paths and the worker open them; ``load``,
``load_checkpoint``, ``trackway show`` and recordings stay redacted. Each sealed value is
bound to its place (its run, commit or checkpoint), so one cannot be moved to another row.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Sequence
from typing import Any

from ..core._errors import ConfigurationError, SealError

__all__ = ["MAGIC", "Seal", "check_seal", "is_sealed", "sealed_text", "text_sealed"]

MAGIC = b"tws1"
"""How every sealed value starts (no JSON document starts so): version 1."""
_KEY_ID = 8
_NONCE = 12


def is_sealed(data: bytes) -> bool:
    return data[:4] == MAGIC


def _key_bytes(key: str | bytes) -> bytes:
    if isinstance(key, str):
        try:
            raw = base64.urlsafe_b64decode(key + "=" * (-len(key) % 4))
        except ValueError:
            raw = b""
    elif isinstance(key, (bytes, bytearray)):
        raw = bytes(key)
    else:
        raise ConfigurationError(f"Seal(key) takes a str or bytes key, got {type(key).__name__}")
    if len(raw) != 32:
        raise ConfigurationError(
            "Seal(key): a seal key is 32 random bytes, or their URL-safe base64 as "
            "Seal.new_key() (or `trackway seal-key`) makes it; this one is "
            f"{len(raw)} bytes long"
        )
    return raw


def _key_id(raw: bytes) -> bytes:
    return hashlib.sha256(b"trackway-seal-key-id" + raw).digest()[:_KEY_ID]


class Seal:
    """A key that seals hidden values at rest: ``PostgresStore(dsn, seal=Seal(key))``.

    ``key``: 32 random bytes, or their URL-safe base64 (``Seal.new_key()``); keep it where
    the workers read it (``trackway worker`` reads ``TRACKWAY_SEAL_KEY``). ``previous``:
    keys values may still be sealed under, after a rotation; new values are sealed under
    ``key``. Lose every key and the sealed values are gone: the redacted record stays.
    """

    __slots__ = ("_aead", "_id", "_previous")

    def __init__(self, key: str | bytes, *, previous: Sequence[str | bytes] = ()) -> None:
        try:
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        except ImportError as exc:  # pragma: no cover - the seal extra is in dev
            raise ConfigurationError(
                "Seal needs the cryptography package: pip install 'trackway[seal]'"
            ) from exc
        if isinstance(previous, (str, bytes)):
            raise ConfigurationError("Seal(previous=...) takes a list of keys")
        raw = _key_bytes(key)
        self._id = _key_id(raw)
        self._aead = AESGCM(raw)
        self._previous: dict[bytes, Any] = {}
        for old in previous:
            old_raw = _key_bytes(old)
            self._previous[_key_id(old_raw)] = AESGCM(old_raw)

    def __repr__(self) -> str:
        return f"<Seal key {self._id.hex()}>"  # the key's id, never the key

    @staticmethod
    def new_key() -> str:
        """A fresh random key, URL-safe base64 (keep it secret, and the same on every worker)."""
        return base64.urlsafe_b64encode(os.urandom(32)).decode().rstrip("=")

    def seal(self, data: bytes, place: str) -> bytes:
        """``data`` encrypted and bound to ``place`` (which row it belongs to)."""
        nonce = os.urandom(_NONCE)
        sealed: bytes = self._aead.encrypt(nonce, data, place.encode())
        return MAGIC + self._id + nonce + sealed

    def open(self, blob: bytes, place: str) -> bytes:
        """The data ``seal(data, place)`` sealed; :class:`SealError` when it cannot be."""
        from cryptography.exceptions import InvalidTag

        if not is_sealed(blob) or len(blob) < 4 + _KEY_ID + _NONCE + 16:
            raise SealError(f"{place}: not a sealed value")
        key_id = blob[4 : 4 + _KEY_ID]
        aead = self._aead if key_id == self._id else self._previous.get(key_id)
        if aead is None:
            raise SealError(
                f"{place} was sealed under another key (id {key_id.hex()}; this seal's key is "
                f"{self._id.hex()}): give the store that key, or list it in "
                "Seal(key, previous=[...])"
            )
        nonce = blob[4 + _KEY_ID : 4 + _KEY_ID + _NONCE]
        try:
            opened: bytes = aead.decrypt(nonce, blob[4 + _KEY_ID + _NONCE :], place.encode())
        except InvalidTag:
            raise SealError(
                f"{place}: the sealed value does not open: it was altered, or moved here from "
                "another row"
            ) from None
        return opened


def check_seal(seal: object) -> Seal | None:
    if seal is not None and not isinstance(seal, Seal):
        raise ConfigurationError(
            f"seal= takes a Seal(key) (Seal.new_key() makes a key), got {type(seal).__name__}"
        )
    return seal


def sealed_text(blob: bytes) -> str:
    """A sealed value as JSON text (inside a commit document)."""
    return base64.b64encode(blob).decode()


def text_sealed(text: str) -> bytes:
    return base64.b64decode(text)
