"""The part of the agent's builder that guards the turn's doors: ``.middleware(act(...))``
and its short forms ``.input_middleware``, ``.message_middleware`` and ``.tool_middleware``,
and ``.credentials(...)`` for the tools that need them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Self

from ..messages._errors import AgentBuildError
from ..middleware._links import Middleware, act

__all__ = ["MiddlewareBuilding"]


class MiddlewareBuilding:
    """``.middleware()``, ``.input_middleware()``, ``.message_middleware()`` and
    ``.tool_middleware()``: links in the order given (a tool's after-tool links walk back)."""

    _middleware: list[Middleware]
    _credentials: Callable[..., Any] | Mapping[str, str] | None

    def _take_middleware_options(self) -> None:
        self._middleware = []
        self._credentials = None

    def credentials(self, provider: Callable[..., Any] | Mapping[str, str]) -> Self:
        """Where the tools' credentials come from (``define_tool(needs=[...])``):
        ``provider(name, identity)`` returns the value (``def`` or ``async def``; the
        identity is the run's, or ``None``), or a mapping of names to values. A value is
        asked for only for a call the person consented to, handed to that call's
        ``ctx.credential(name)`` and written nowhere."""
        if not callable(provider) and not isinstance(provider, Mapping):
            raise AgentBuildError(
                f"credentials({provider!r}): give a function (name, identity) -> str, or a "
                "mapping of credential names to values"
            )
        self._credentials = provider
        return self

    def _checked_credentials(self, tools: Mapping[str, Any]) -> Any:
        """The credentials source, once every tool that needs one has it."""
        needing = sorted(n for n, t in tools.items() if getattr(t, "needs", ()))
        if needing and self._credentials is None:
            raise AgentBuildError(
                f"tools {needing} need credentials (define_tool(needs=...)), and the agent "
                "has no .credentials(provider): add one, e.g. .credentials(lambda name, "
                "identity: vault.get(identity, name))"
            )
        return self._credentials

    def middleware(self, *links: Middleware) -> Self:
        """Stand links (``act(input=..., before_tool=..., after_tool=..., output=...)``) at
        the turn's doors, after those already added. Each decision is recorded in
        ``middleware_decisions``; a replay reads them and runs no link."""
        for link in links:
            if not isinstance(link, Middleware):
                raise AgentBuildError(
                    f"middleware(...) takes act(...) links, got {link!r}; e.g. "
                    ".middleware(act(output=rule))"
                )
            taken = [m.name for m in self._middleware]
            if link.name in taken:
                raise AgentBuildError(
                    f"two middleware links are named {link.name!r}; the record tells them apart "
                    f"by name: give one another, e.g. act(name='{link.name}-2', ...)"
                )
            self._middleware.append(link)
        return self

    def input_middleware(self, fn: Callable[..., Any], *, name: str | None = None) -> Self:
        """A link that admits, rewrites (``allow(new_text)``) or refuses (``deny(reason)``)
        each new turn's message, ``continue_from`` turns included."""
        return self.middleware(act(name=name, input=fn))

    def message_middleware(self, fn: Callable[..., Any], *, name: str | None = None) -> Self:
        """A link on the conversation's messages: the person's message as it comes in and
        the answer as it goes out (``fn(message, ctx)``; ``message["role"]`` says which)."""
        return self.middleware(act(name=name, input=fn, output=fn))

    def tool_middleware(
        self,
        fn: Callable[..., Any] | None = None,
        *,
        after: Callable[..., Any] | None = None,
        name: str | None = None,
    ) -> Self:
        """A link around every tool call: ``fn(call, ctx)`` after the arguments are checked
        and before fills, questions to a person, credentials and the run (``allow(args,
        reason, from_=...)``, ``deny(reason)``, ``ask(question)``); ``after(call, result,
        ctx)`` before the model reads the result (``withhold(reason)``, ``scrub(fn)``)."""
        if fn is None and after is None:
            raise AgentBuildError(
                "tool_middleware() was given no function: pass fn (before the call) and/or "
                "after= (before the model reads the result)"
            )
        return self.middleware(act(name=name, before_tool=fn, after_tool=after))
