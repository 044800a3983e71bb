"""``Agent.create(model="openai:gpt-4o-mini")``: a provider picked from the model's prefix.

As the vendors' SDKs do, the key and the base URL come from the environment:
``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` and ``ANTHROPIC_API_KEY`` / ``ANTHROPIC_BASE_URL``.
A key set in the environment goes to a base URL set in the environment (both are the
caller's own configuration); a base URL given in code gets no environment key (pass
``api_key=`` to ``openai(...)``), as the providers themselves rule.
"""

from __future__ import annotations

import os

from ..messages._errors import AgentBuildError
from ._provider import Provider

__all__ = ["PREFIXES", "provider_for"]

PREFIXES = ("openai", "anthropic")


def provider_for(model: str) -> Provider:
    """The provider a ``"vendor:model"`` string names, configured from the environment."""
    from ._anthropic import anthropic
    from ._openai import openai

    vendor, sep, name = model.partition(":")
    if not sep or not name or vendor not in PREFIXES:
        raise AgentBuildError(
            f"Agent.create(model={model!r}) without provider=: name the model as "
            f"'vendor:model' with a vendor of {', '.join(PREFIXES)} (e.g. 'openai:gpt-4o-mini'),"
            " or pass provider=openai(...), anthropic(...), mock(...) or your own"
        )
    prefix = vendor.upper()
    base_url = os.environ.get(f"{prefix}_BASE_URL") or None
    key = os.environ.get(f"{prefix}_API_KEY") if base_url is not None else None
    make = openai if vendor == "openai" else anthropic
    if base_url is None:
        return make(name)  # the vendor's own host: the provider reads the key itself
    return make(name, base_url=base_url, api_key=key)
