"""A SQL store's sealed copies, opened: what the resume and recovery paths of a store given
``seal=Seal(key)`` read where a redaction policy left markers (see ``_seal``)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import orjson

from ..core._errors import SealError
from ..observe._seal import Seal, text_sealed
from ._checkpoint import Checkpoint

__all__ = ["SealedRows"]


class SealedRows:
    """Opening the sealed copies a SQL store keeps beside its redacted rows (mixed into
    :class:`~._sqlstore.SqlRunStore`; ``load`` and the other public reads never call it)."""

    seal: Seal | None = None
    """Seals what a redaction policy hides beside its redacted rows (``seal=``)."""
    _P: str
    _read_tx: Callable[[], AbstractContextManager[Any]]

    def _open(self, blob: bytes, place: str) -> bytes:
        if self.seal is None:
            raise SealError(
                f"{self!r}: {place} is sealed, and this store was given no seal: open it with "
                "seal=Seal(<the key its workers hold>)"
            )
        return self.seal.open(blob, place)

    def _open_doc(self, doc: bytes, run_id: str, seq: int) -> bytes:
        """A commit document, replaced by the real one it carries sealed, if any."""
        if b'"sealed":' not in doc:
            return doc
        sealed = orjson.loads(doc).get("sealed")
        if not isinstance(sealed, str):
            return doc
        return self._open(text_sealed(sealed), f"commit:{run_id}:{seq}")

    def _opened_checkpoint(self, checkpoint_id: str) -> Checkpoint | None:
        """The real checkpoint sealed beside the masked one, if the store keeps it."""
        real = self._opened_column("sealed", "checkpoint", checkpoint_id)
        return None if real is None else Checkpoint.from_json(real)

    def _opened_answer(self, checkpoint_id: str) -> bytes | None:
        """The real answer a claim of ``checkpoint_id`` sealed, if any."""
        return self._opened_column("sealed_answer", "answer", checkpoint_id)

    def _opened_column(self, column: str, kind: str, checkpoint_id: str) -> bytes | None:
        """A checkpoint row's sealed ``column``, opened (``None`` where it holds none)."""
        with self._read_tx() as db:
            row = db.execute(
                f"SELECT {column} FROM trackway_checkpoints WHERE checkpoint_id = {self._P}",
                (checkpoint_id,),
            ).fetchone()
        if row is None or row[0] is None:
            return None
        return self._open(bytes(row[0]), f"{kind}:{checkpoint_id}")
