"""What a typed agent decided at build, beyond its model and retries: the strategy (the
native one's response format, checked against the provider) and the fallback chain (the
fallback, the canned value validated there and then). ``None`` on the agent's
configuration when neither is asked for, so nothing is recorded and nothing changes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from ..messages._errors import AgentBuildError, OutputSchemaError
from ._native import native_format, schema_name
from ._verdict import value_verdict

__all__ = ["STRATEGIES", "Attempt", "FallbackSource", "TypedPlan", "canned_value", "typed_plan"]

STRATEGIES = ("instruct", "native")

Attempt = tuple[str, Any]
"""What one ask of the fallback tier came to: ``("returned", json_value)`` (to be judged),
``("raised", text)`` or ``("refused", text)`` (not a value the chain can judge)."""

FallbackSource = Callable[[OutputSchemaError, str], Awaitable[Attempt]]
"""The fallback tier: the user's function, asked live, or a replay's recorded rows."""


@dataclass(frozen=True)
class TypedPlan:
    """The typed answer's strategy and fallback chain (``cfg.typed``)."""

    model: type[BaseModel]
    strategy: str = "instruct"
    response_format: dict[str, Any] | None = None
    fallback: FallbackSource | None = None
    canned: Any = None
    """The canned value as JSON (``model_dump(mode="json")``), validated at build."""

    @property
    def native(self) -> bool:
        return self.strategy == "native"

    @property
    def chained(self) -> bool:
        """A tier exists past the primary one (``run_typed`` may reach it; ``run`` never)."""
        return self.fallback is not None or self.canned is not None

    def settle(self, settings: dict[str, Any]) -> None:
        """Record in a run's ``settings`` what the plan changes: the native response format
        (what every call is served) and that a fallback chain stands (what ``run_typed``
        reaches). A ``configure()`` that chose its own response format is refused."""
        if self.native:
            if "response_format" in settings:
                raise AgentBuildError(
                    "configure() returned response_format, which output_schema(..., "
                    "strategy='native') sets itself; leave response_format out of configure()"
                )
            settings["response_format"] = self.response_format
            settings["output_strategy"] = "native"
        if self.chained:
            settings["output_fallback"] = {
                "fallback": self.fallback is not None,
                "canned": self.canned,
            }


def canned_value(model: type[BaseModel], canned: Any) -> Any:
    """``canned`` (an instance of ``model`` or a dict) as JSON, validated now: a value that
    does not match is refused at build, never served."""
    if isinstance(canned, BaseModel):
        canned = canned.model_dump(mode="json")
    if not isinstance(canned, Mapping):
        raise AgentBuildError(
            f"output_fallback(canned={canned!r}): give a {model.__name__} instance or a dict "
            "of its fields"
        )
    found, value = value_verdict(model, dict(canned))
    if found is not None:
        raise AgentBuildError(
            f"output_fallback(canned=...) does not match {model.__name__}: {found.error}; a "
            "canned answer is served as it is, so it must be valid when the agent is built"
        )
    return value


def typed_plan(
    model: type[BaseModel],
    strategy: str,
    fallback: FallbackSource | None,
    canned: Any,
    *,
    provider: object,
    options: Mapping[str, Any],
    tools: Iterable[str],
) -> TypedPlan | None:
    """The plan for ``model`` under ``strategy`` with the fallback chain given, checked
    against the provider and the request options; ``None`` when there is nothing past the
    default (instruct, no chain)."""
    if strategy == "instruct" and fallback is None and canned is None:
        return None
    response_format = None
    if strategy == "native":
        name = getattr(provider, "name", type(provider).__name__)
        kind = getattr(provider, "native_output", None)
        if kind not in ("response_format", "forced-tool"):
            raise AgentBuildError(
                f"output_schema(..., strategy='native'): provider {name!r} cannot ask for "
                "structured output itself (it declares no native_output); use openai(...), "
                "anthropic(...) or mock(...), or strategy='instruct'"
            )
        if options.get("response_format") is not None:
            raise AgentBuildError(
                "output_schema(..., strategy='native') sets the response format itself; drop "
                "response_format= from Agent.create"
            )
        if kind == "forced-tool" and options.get("tool_choice") not in (None, "required"):
            raise AgentBuildError(
                f"output_schema(..., strategy='native') on {name!r} is a forced tool call, so "
                f"tool_choice={options['tool_choice']!r} cannot be kept; drop tool_choice="
            )
        if kind == "forced-tool" and schema_name(model) in set(tools):
            raise AgentBuildError(
                f"output_schema(..., strategy='native') on {name!r} answers through a tool "
                f"named {schema_name(model)!r}, like a tool of the agent; rename one of them"
            )
        response_format = native_format(model)
    return TypedPlan(model, strategy, response_format, fallback, canned)
