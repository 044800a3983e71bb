"""Prompt caching: which cache breakpoints a call asks for, and how each vendor is told.

``Agent.create(system_prompt_cache_policy=, cache_strategy=, caching_disabled=)`` is
decided once, where it is given, into the request option ``cache``: the ordered breakpoints
(``"tools"``, ``"system"``, ``"messages"``) every call of the run asks for. ``seed`` commits
it to ``settings``; ``assemble`` carries it into the request (and so into its hash and
``served_at``) and the receipt records it per call. Anthropic gets ``cache_control``
markers there (at most 3 of the API's 4 breakpoints); OpenAI and compatible servers cache
an unchanged prefix by themselves, so their body is left as it is: byte-stable.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..messages._errors import AgentBuildError, CachePolicyError, ReplayDivergence

__all__ = [
    "BREAKPOINTS",
    "CACHE_POLICIES",
    "CACHE_STRATEGIES",
    "MAX_BREAKPOINTS",
    "CacheCall",
    "CachePolicy",
    "CacheWarning",
    "check_cache",
    "decide_cache",
    "mark_anthropic",
    "take_cache_options",
    "warn_moving_pieces",
]

BREAKPOINTS = ("tools", "system", "messages")
"""Where a breakpoint can stand, in the order the vendor's prefix is read."""
MAX_BREAKPOINTS = 4
"""Anthropic's limit on ``cache_control`` blocks in one request."""
CACHE_POLICIES = ("always", "never")
CACHE_STRATEGIES: dict[str, tuple[str, ...]] = {
    "prefix": ("tools", "system"),
    "conversation": ("tools", "system", "messages"),
}
"""``prefix`` caches the tools and the system prompt; ``conversation`` also moves a
breakpoint onto the last message, so each turn reads the previous turns from the cache."""

_EPHEMERAL = {"type": "ephemeral"}


class CacheWarning(UserWarning):
    """A piece that changes from call to call sits before a cache breakpoint, so the
    cached prefix is rewritten instead of read."""


@dataclass(frozen=True, slots=True)
class CacheCall:
    """What a ``system_prompt_cache_policy`` function is told about one model call: all of
    it at hand before the call (nothing that costs a pass over the history)."""

    k: int
    """The call's number in the run, from 1 (the receipt's ``k``)."""
    iteration: int
    model: str
    wrap_up: bool
    """True on the wrap-up call (the tools are withheld; the prefix differs anyway)."""
    system_prompt: str | None
    """The system prompt as committed (pieces that skills or memory add are not in it)."""
    messages: int
    """How many messages the history holds."""


CachePolicy = Callable[[CacheCall], str]
"""A function deciding, call by call, whether the system prompt carries a breakpoint."""


def decide_cache(policy: CachePolicy, call: CacheCall) -> str:
    """``policy``'s answer for ``call`` (``"always"`` or ``"never"``); a raise or any other
    answer is a :class:`CachePolicyError` naming the function, the call and the fix."""
    name = getattr(policy, "__qualname__", repr(policy))
    try:
        said = policy(call)
    except ReplayDivergence:  # a replay's check of the function: said as it is
        raise
    except Exception as exc:
        raise CachePolicyError(
            f"system_prompt_cache_policy {name} raised {type(exc).__name__}: {exc} at call "
            f"{call.k} (iteration {call.iteration}); make it return 'always' or 'never' for "
            "every call"
        ) from exc
    if said not in CACHE_POLICIES or not isinstance(said, str):
        raise CachePolicyError(
            f"system_prompt_cache_policy {name} returned {said!r} at call {call.k} "
            f"(iteration {call.iteration}); return 'always' (mark the system prompt) or "
            "'never'"
        )
    return said


def take_cache_options(options: dict[str, Any]) -> CachePolicy | None:
    """Replace the caching arguments of ``Agent.create`` in ``options`` by the ``cache``
    request option they decide (left unset when none is given: nothing changes). A function
    policy is handed back: ``cache`` then holds the breakpoints of a call it answers
    ``"always"`` for."""
    names = ("system_prompt_cache_policy", "cache_strategy", "caching_disabled")
    given = {name: options.pop(name) for name in names if name in options}
    if not given:
        return None
    if options.get("cache") is not None:
        raise AgentBuildError(
            "Agent.create: cache= and the caching arguments were both given; use one "
            "(system_prompt_cache_policy=, cache_strategy=, caching_disabled=)"
        )
    policy = given.get("system_prompt_cache_policy", "always")
    function = policy if callable(policy) else None
    if function is not None:
        if given.get("caching_disabled"):
            raise AgentBuildError(
                "Agent.create: caching_disabled=True and a system_prompt_cache_policy "
                "function were both given: the function would never be asked; drop one"
            )
        policy = "always"
    if policy not in CACHE_POLICIES:
        raise AgentBuildError(
            f"Agent.create: system_prompt_cache_policy={policy!r}: use 'always' (mark the "
            "system prompt) or 'never'"
        )
    strategy = given.get("cache_strategy", "prefix")
    if strategy not in CACHE_STRATEGIES:
        raise AgentBuildError(
            f"Agent.create: cache_strategy={strategy!r}: use "
            + " or ".join(repr(s) for s in CACHE_STRATEGIES)
        )
    disabled = given.get("caching_disabled", False)
    if not isinstance(disabled, bool):
        raise AgentBuildError(f"Agent.create: caching_disabled={disabled!r}: use True or False")
    chosen = () if disabled else CACHE_STRATEGIES[strategy]
    options["cache"] = [b for b in chosen if policy == "always" or b != "system"]
    return function


def check_cache(value: Any, where: str) -> list[str]:
    """The ``cache`` option checked: a list of distinct breakpoints from :data:`BREAKPOINTS`
    (an empty list records that no marker is sent)."""
    if (
        not isinstance(value, list | tuple)
        or not all(isinstance(b, str) and b in BREAKPOINTS for b in value)
        or len(set(value)) != len(value)
        or len(value) > MAX_BREAKPOINTS
    ):
        raise AgentBuildError(
            f"{where}cache={value!r}: use a list of distinct breakpoints from "
            f"{list(BREAKPOINTS)} (e.g. ['tools', 'system']), or the caching arguments"
        )
    return [b for b in BREAKPOINTS if b in value]  # one canonical order: byte-stable


def warn_moving_pieces(cache: Any, *, tools_move: bool, system_moves: bool) -> None:
    """Warn (once per agent built) when a breakpoint stands after a piece that changes per
    call: the findings enum in the tool schemas, or system pieces and recalled memory."""
    if not cache:
        return
    moving = []
    if tools_move and cache:  # every breakpoint comes after the tools
        moving.append("the tool schemas change per call (findings())")
    if system_moves and any(b in cache for b in ("system", "messages")):
        moving.append("the system prompt changes per turn (skills or memory)")
    if moving:
        warnings.warn(
            f"cache={list(cache)}: {'; '.join(moving)}, and it sits before a cache "
            "breakpoint, so the cached prefix is written again instead of read; drop the "
            "feature or the breakpoint (cache_strategy=, caching_disabled=True)",
            CacheWarning,
            stacklevel=3,
        )


def mark_anthropic(body: dict[str, Any], cache: tuple[str, ...]) -> None:
    """Put ``cache_control`` markers on ``body`` (a Messages API body) where ``cache`` asks."""
    if "tools" in cache and body.get("tools"):
        body["tools"] = [*body["tools"][:-1], {**body["tools"][-1], "cache_control": _EPHEMERAL}]
    if "system" in cache and body.get("system"):
        body["system"] = [{"type": "text", "text": body["system"], "cache_control": _EPHEMERAL}]
    messages = body.get("messages")
    if "messages" in cache and messages:
        last = messages[-1]
        content = last["content"]
        if isinstance(content, str):
            blocks = [{"type": "text", "text": content, "cache_control": _EPHEMERAL}]
        else:
            blocks = [*content[:-1], {**content[-1], "cache_control": _EPHEMERAL}]
        body["messages"] = [*messages[:-1], {**last, "content": blocks}]
