"""The one loader of persisted documents: checkpoints, snapshots, conversations, recordings.

Every document trackway writes is JSON with a ``format`` field naming its kind and version
(``trackway.checkpoint/2``). :func:`load_document` parses the bytes once, picks the reader
registered for that format (readers of older versions upgrade to the current shape) and
turns every way a document can be wrong into one :class:`DocumentError` naming the
document, the field and the source — never a bare ``KeyError`` or ``ValueError``.
Field shapes are checked by pydantic (:func:`check_document`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import orjson

from ._errors import DocumentError
from ._values import MAX_DEPTH

__all__ = ["check_document", "load_document", "parse_json", "unencodable"]

_T = TypeVar("_T")


def parse_json(
    data: bytes | str,
    *,
    document: str,
    source: str | None = None,
    error: type[DocumentError] = DocumentError,
) -> Any:
    """``orjson.loads`` with a :class:`DocumentError` that says which document is not JSON,
    or holds an integer beyond 64 bits (orjson would read it as a float, changing it)."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        why = (
            f"it is nested deeper than the 1024 levels JSON is read to, so it holds a value "
            f"nested deeper than {MAX_DEPTH} levels, which trackway never writes"
            if "depth limit exceeded" in str(exc)
            else f"invalid JSON ({exc})"
        )
        raise _error(error, f"not a trackway {document}: {why}", document, None, source) from None
    raw = data.encode() if isinstance(data, str) else data
    if _LONG_DIGITS.search(raw):  # rare: check the integers exactly, with the slow parser
        try:
            json.loads(raw, parse_int=_int64)
        except ValueError as exc:
            raise _error(error, f"corrupt {document}: {exc}", document, None, source) from None
    return doc


def unencodable(what: str, exc: Exception) -> str:
    """Why ``what``, a value read from a document, cannot be kept: the log holds every value
    as orjson writes it, and orjson writes nothing nested deeper than ``MAX_DEPTH`` levels
    (nor does trackway: such a write is refused with ``StateValueError``)."""
    if "Recursion limit" in str(exc):
        return (
            f"{what} is nested deeper than {MAX_DEPTH} levels of lists and objects; trackway "
            "never writes such a value (it refuses it at the write), so the document was "
            "changed after it was written"
        )
    return f"{what} cannot be written as JSON again ({exc})"


_LONG_DIGITS = re.compile(rb"\d{20,}")
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1


def _int64(text: str) -> int:
    value = int(text)
    if not _INT_MIN <= value <= _INT_MAX:
        raise ValueError(
            f"the integer {text[:30]}{'...' if len(text) > 30 else ''} does not fit in 64 bits; "
            "trackway never writes one, so the document was changed"
        )
    return value


def load_document(
    data: bytes | str | Mapping[str, Any],
    *,
    document: str,
    readers: Mapping[str, Callable[[dict[str, Any]], _T]],
    source: str | None = None,
    error: type[DocumentError] = DocumentError,
) -> _T:
    """Read a document of kind ``document`` with the reader registered for its format.

    ``readers`` maps each format this version reads (``"trackway.snapshot/1"``) to a
    function from the parsed JSON object to the loaded value; ``error`` is the
    :class:`DocumentError` subclass raised for this kind.
    """
    doc = (
        data
        if isinstance(data, Mapping)
        else parse_json(data, document=document, source=source, error=error)
    )
    if not isinstance(doc, dict):
        raise _error(
            error,
            f"not a trackway {document}: expected a JSON object, got {type(doc).__name__}",
            document,
            None,
            source,
        )
    found = doc.get("format")
    reader = readers.get(found) if isinstance(found, str) else None
    if reader is None:
        known = ", ".join(repr(f) for f in readers)
        raise _error(
            error,
            f"not a trackway {document} this version reads: its format is {found!r}; this "
            f"version reads {known}. A newer trackway may have written it: upgrade to read it.",
            document,
            "format",
            source,
        )
    try:
        return reader(doc)
    except DocumentError as exc:
        if exc.source is None and source is not None:
            exc.source = source
            exc.args = (f"{source}: {exc.args[0]}", *exc.args[1:])
        raise


def check_document(
    shape: Any,
    doc: Any,
    *,
    document: str,
    where: str = "",
    source: str | None = None,
    error: type[DocumentError] = DocumentError,
) -> Any:
    """``doc`` checked against ``shape`` (a pydantic model, TypedDict or type) by pydantic;
    a mismatch raises ``error`` naming the first bad field (``commits.3.ops.0.kind``)."""
    from pydantic import TypeAdapter, ValidationError

    adapter = _adapter(shape, TypeAdapter)
    try:
        return adapter.validate_python(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        parts = [where] if where else []
        parts.extend(str(p) for p in first["loc"])
        field = ".".join(parts) or None
        if first["type"] == "missing":
            problem = f"the field {field} is missing"
        else:
            got = repr(first.get("input"))
            got = got if len(got) <= 60 else got[:57] + "..."
            problem = f"{field or 'the document'}: {first['msg']} (got {got})"
        raise _error(error, f"corrupt {document}: {problem}", document, field, source) from None


_ADAPTERS: dict[Any, Any] = {}


def _adapter(shape: Any, factory: Any) -> Any:
    adapter = _ADAPTERS.get(shape)
    if adapter is None:
        adapter = _ADAPTERS[shape] = factory(shape)
    return adapter


def _error(
    cls: type[DocumentError], message: str, document: str, field: str | None, source: str | None
) -> DocumentError:
    text = f"{source}: {message}" if source else message
    return cls(text, document=document, field=field, source=source)
