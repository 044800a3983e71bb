"""What a call cost and how it was made, as the receipts and ``usage_total`` record it.

A provider that does not report usage (llama.cpp's server ignores
``stream_options.include_usage``) is recorded as such: its receipt's ``usage`` is ``None``
and :class:`RunUsage` counts it in ``unreported_calls``, never as zero tokens, so a total
is known to be complete only when that count is 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict

from trackway.engine.core._values import encode_value

__all__ = ["RunUsage", "run_usage", "safe_url", "usage_reported", "via"]


class RunUsage(BaseModel):
    """Token use of a run's model calls, as the providers reported it.

    ``unreported_calls`` counts calls whose provider did not report input or output tokens:
    their tokens are not in the sums, so the sums are a floor unless it is 0 (``complete``).
    """

    model_config = ConfigDict(frozen=True)

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    calls: int = 0
    unreported_calls: int = 0

    @property
    def complete(self) -> bool:
        """Every call reported its tokens (the sums are the whole use)."""
        return self.unreported_calls == 0


def usage_reported(usage: Mapping[str, Any] | None) -> bool:
    """Whether a call's provider reported both its input and its output tokens."""
    return bool(usage) and all(
        usage.get(key) is not None  # type: ignore[union-attr]
        for key in ("input_tokens", "output_tokens")
    )


def run_usage(receipts: Iterable[Mapping[str, Any]]) -> RunUsage:
    """The token use of the calls whose receipts are given (O(calls), read once at the end)."""
    totals = {
        "input_tokens": 0,
        "output_tokens": 0,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "calls": 0,
        "unreported_calls": 0,
    }
    for receipt in receipts:
        usage = receipt.get("usage") or {}
        totals["calls"] += 1
        if not usage_reported(usage):
            totals["unreported_calls"] += 1
        for key in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"):
            totals[key] += usage.get(key) or 0
    return RunUsage(**totals)


def safe_url(url: str) -> str:
    """``url`` without credentials: no user or password, no query, no fragment."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    netloc = host if parts.port is None else f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def via(provider: object, streamed: bool) -> dict[str, Any] | None:
    """How a call was made, for its receipt: the provider's kind, where it was sent (base URL
    without credentials) and whether it was streamed. A provider's ``describe_call`` may say
    ``None`` (a replay of a recording made before receipts said this)."""
    describe = getattr(provider, "describe_call", None)
    if callable(describe):
        described = describe(streamed)
        if not isinstance(described, dict):
            return None
        # the provider's own dict, checked and copied once as state values are: the
        # receipt holding it is then plain JSON (see ``call-llm``)
        return cast(
            "dict[str, Any]",
            encode_value(described, "via", "call-llm", "what describe_call() returned")[1],
        )
    out: dict[str, Any] = {"provider": str(getattr(provider, "name", type(provider).__name__))}
    base_url = getattr(provider, "base_url", None)
    if isinstance(base_url, str):
        out["base_url"] = safe_url(base_url)
    out["stream"] = streamed
    return out
