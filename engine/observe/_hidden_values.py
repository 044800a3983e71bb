"""Values a running stage marked as hidden (``scope.hide_value(text)``, an agent tool's
``ctx.redact(value)``): every retained surface masks each occurrence inside strings, from
the moment the value is marked. The values themselves are held by the run only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

__all__ = ["HiddenValues"]


class HiddenValues:
    """The texts one run hides, longest first (so a value inside another is masked whole)."""

    __slots__ = ("_marker", "_needles", "_texts")

    def __init__(self, marker: str) -> None:
        self._marker = marker
        self._texts: list[str] = []
        self._needles: list[bytes] = []  # each text as it appears inside encoded JSON

    def add(self, text: str) -> None:
        if text in self._texts:
            return
        self._texts.append(text)
        self._texts.sort(key=len, reverse=True)
        self._needles = [orjson.dumps(t)[1:-1] for t in self._texts]

    def __len__(self) -> int:
        return len(self._texts)

    def found_in(self, data: bytes) -> bool:
        """Whether encoded JSON ``data`` holds any hidden text (a cheap test before a walk)."""
        return any(n in data for n in self._needles)

    def mask(self, value: Any) -> Any:
        """``value`` with every hidden text in its strings (keys too) masked; the same object
        when none is in it."""
        if isinstance(value, str):
            out = value
            for text in self._texts:
                if text in out:
                    out = out.replace(text, self._marker)
            return out
        if isinstance(value, Mapping):
            items = {self.mask(k): self.mask(v) for k, v in value.items()}
            same = all(k in value and value[k] is v for k, v in items.items())
            return value if same and len(items) == len(value) else items
        if isinstance(value, (list, tuple)):
            masked = [self.mask(v) for v in value]
            return value if all(a is b for a, b in zip(masked, value, strict=True)) else masked
        return value
