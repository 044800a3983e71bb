"""The part of the agent's builder that asks for typed answers: ``.output_schema(Model,
retries=, strategy=)`` and ``.output_fallback(fallback=, canned=)``, checked at ``build()``
into the plan the stages read (``cfg.typed``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Self, TypeVar

from pydantic import BaseModel

from trackway.engine.core._keywords import checked_keywords

from ..messages._errors import AgentBuildError
from ..output._chain import live_source
from ..output._plan import STRATEGIES, FallbackSource, TypedPlan, canned_value, typed_plan

__all__ = ["TypedBuilding"]

_M = TypeVar("_M", bound=BaseModel)

_UNSET: Any = object()


class TypedBuilding:
    """``.output_schema()`` and ``.output_fallback()``."""

    _output: tuple[type[BaseModel], int] | None
    _strategy: str
    _fallback: tuple[Callable[..., Any] | None, Any] | None
    _fallback_source: FallbackSource | None

    def _take_typed_options(self) -> None:
        self._output = None
        self._strategy = "instruct"
        self._fallback = None
        self._fallback_source = None  # a replay's: the recorded rows, not the function

    @checked_keywords
    def output_schema(
        self, model: type[_M], *, retries: int = 2, strategy: str = "instruct"
    ) -> Self:
        """Answers must be JSON matching ``model``; a failing answer is re-asked ``retries``
        times with the validator's message.

        ``strategy="instruct"`` (the default) asks in words and judges what comes back;
        ``"native"`` also asks the provider for the schema itself: OpenAI's structured
        outputs (``response_format`` ``json_schema``, ``strict``), Anthropic's forced tool
        whose input is the answer. Under ``"native"`` a refusal, a cut at ``max_tokens`` or a
        full context window fails the answer even when its text parses (``stop_reason`` in
        ``output_contract_unmet()``)."""
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise AgentBuildError("output_schema(...) takes a pydantic BaseModel subclass")
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise AgentBuildError(f"output_schema(retries={retries!r}): use a whole number >= 0")
        if strategy not in STRATEGIES:
            raise AgentBuildError(
                f"output_schema(strategy={strategy!r}): use 'instruct' (ask in words, judge "
                "the answer) or 'native' (the provider's own structured output)"
            )
        self._output = (model, retries)
        self._strategy = strategy
        return self

    @checked_keywords
    def output_fallback(
        self, *, fallback: Callable[..., Any] | None = None, canned: Any = _UNSET
    ) -> Self:
        """When the answer fails the output schema after the retries, ``run_typed`` (and
        ``parse_output_async``) degrade instead of raising: ``fallback(error, raw)`` (``def``
        or ``async def``; ``error`` is the :class:`OutputSchemaError`, ``raw`` the answer)
        returns the model, a dict or JSON text, judged again; then ``canned``, an instance
        or a dict, validated now (a bad one is refused here). ``run`` never reaches these
        tiers. Each step of a run's chain is committed (``output_fallback``)."""
        if fallback is not None and not callable(fallback):
            raise AgentBuildError(
                f"output_fallback(fallback={fallback!r}): give a function (error, raw) -> "
                "the model, a dict or a JSON str"
            )
        if fallback is None and canned is _UNSET:
            raise AgentBuildError(
                "output_fallback() needs fallback=fn(error, raw), canned=<a valid answer>, or both"
            )
        if self._fallback is not None:
            raise AgentBuildError("an agent has one fallback chain: output_fallback(...) twice")
        self._fallback = (fallback, None if canned is _UNSET else canned)
        return self

    def _typed_plan(
        self, provider: object, options: Mapping[str, Any], tools: Iterable[str]
    ) -> TypedPlan | None:
        """The typed plan ``build()`` puts on the configuration (checked here)."""
        if self._output is None:
            if self._fallback is not None:
                raise AgentBuildError(
                    "output_fallback(...) degrades a typed answer: add .output_schema(Model)"
                )
            return None
        model = self._output[0]
        fallback, canned = self._fallback or (None, None)
        source = self._fallback_source
        if source is None and fallback is not None:
            source = live_source(model, fallback)
        value = None if self._fallback is None or canned is None else canned_value(model, canned)
        if self._fallback is not None and canned is None and fallback is None:
            raise AgentBuildError("output_fallback(canned=None): give a valid answer")
        return typed_plan(
            model, self._strategy, source, value, provider=provider, options=options, tools=tools
        )
