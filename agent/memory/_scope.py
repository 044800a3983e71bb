"""The scope memory is kept under: who the run is for.

A scope is a digest of the canonical JSON of ``(tenant, principal, conversation_id)`` as the
caller gave them (``None`` and ``""`` differ), so whatever a caller's strings hold (quotes,
``%``, ``_``, NUL, ten kilobytes) only its digest reaches a store. A run with no identity
(or an empty one) is scoped to its own run id: nothing is recalled across runs. The members
of a composition run under the composition's identity and run id.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, NamedTuple

from trackway.engine import thaw

__all__ = ["MemoryScope", "scope_of"]


class MemoryScope(NamedTuple):
    """A scope's key (hex digest) and what it stands for: ``"identity"`` or ``"run"``."""

    key: str
    basis: str


def scope_of(identity: Any, run_id: str) -> MemoryScope:
    """The scope of a run for ``identity`` (the committed identity, or ``None``)."""
    given = thaw(identity) if identity is not None else {}
    fields = given if isinstance(given, Mapping) else {}
    triple = [fields.get("tenant"), fields.get("principal"), fields.get("conversation_id")]
    if all(value is None for value in triple):
        material: list[Any] = ["run", run_id]
        basis = "run"
    else:
        material = ["identity", *triple]
        basis = "identity"
    # ASCII JSON: every character escaped the same way, a lone surrogate included
    canonical = json.dumps(material, ensure_ascii=True, separators=(",", ":"))
    return MemoryScope(hashlib.sha256(canonical.encode("ascii")).hexdigest(), basis)
