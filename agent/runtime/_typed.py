"""Typed answers: on the builder, ``.output_schema(Model, retries=, strategy=)`` and
``.output_fallback(fallback=, canned=)``, checked at ``build()`` into the plan the stages
read (``cfg.typed``); on the agent, ``run_typed`` (a run whose input says the caller asked
for the model, so its resume answers typed too, in any process), ``parse_output`` and
``parse_output_async`` (an answer string judged against the output schema, the second with
the fallback chain). Parts of :class:`~._builder.AgentBuilder` and :class:`~._agent.Agent`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from pydantic import BaseModel

from trackway.engine import Executor, RunResult
from trackway.engine.core._keywords import checked_keywords
from trackway.tools import Identity

from ..context._config import AgentConfig
from ..loop._inputs import run_input
from ..messages._conversation import Conversation
from ..messages._errors import AgentBuildError
from ..messages._paused import Paused
from ..output._chain import TYPED_INPUT, live_source, parse_chained, typed_value
from ..output._plan import STRATEGIES, FallbackSource, TypedPlan, canned_value, typed_plan
from ..output._verdict import schema_error, verdict
from ..time._layer import check_clock

__all__ = ["TypedAnswers", "TypedBuilding"]

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

    def output_schema(
        self, model: type[_M], *, retries: int = 2, strategy: str = "instruct"
    ) -> Self:
        """Answers must be JSON matching ``model``; a failing answer is re-asked ``retries``
        times with the validator's message.

        ``strategy="instruct"`` (the default): your prompt tells the model the shape, and
        what comes back is judged; ``"native"`` also asks the provider for the schema
        itself: OpenAI's structured outputs (``response_format`` ``json_schema``,
        ``strict``), Anthropic's forced tool whose input is the answer. Under ``"native"`` a
        refusal, a cut at ``max_tokens`` or a full context window fails the answer even when
        its text parses (``stop_reason`` in ``output_contract_unmet()``)."""
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

    for _method in (output_schema, output_fallback):  # named as the builder users call
        _method.__qualname__ = f"AgentBuilder.{_method.__name__}"
    output_schema = checked_keywords(output_schema)
    output_fallback = checked_keywords(output_fallback)
    del _method

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


class TypedAnswers:
    """``run_typed``, ``parse_output`` and ``parse_output_async`` (mixed into ``Agent``)."""

    _cfg: AgentConfig

    if TYPE_CHECKING:  # the agent's drive (Agent defines it)

        async def _drive(
            self,
            start: Callable[[Executor], Awaitable[RunResult]],
            kept: list[RunResult] | None = None,
        ) -> str | Paused: ...

    def _output_model(self, where: str) -> type[BaseModel]:
        model = self._cfg.output_model
        if model is None:
            raise AgentBuildError(
                f"{where} needs an output schema: add .output_schema(Model) to the builder "
                "(Agent.create(...).output_schema(Model).build())"
            )
        return model

    def parse_output(self, raw: str) -> BaseModel:
        """``raw`` (an answer, e.g. what ``run`` returned) parsed into the output schema's
        model. :class:`OutputSchemaError` (``raw_output``, ``stage``, ``error``, ``path``)
        when it does not parse; never the fallback chain (``parse_output_async`` engages
        it). Without an output schema, :class:`AgentBuildError`."""
        model = self._output_model("parse_output")
        found = verdict(model, raw)
        if found is not None:
            raise schema_error(model, raw, found)
        return model.model_validate_json(raw)

    async def parse_output_async(self, raw: str) -> BaseModel:
        """``parse_output``, and when it fails, the fallback chain of ``.output_fallback()``
        (the fallback, judged again, then the canned value); :class:`OutputSchemaError`
        (with ``chain``, the tiers tried) when nothing valid comes of it. Nothing is
        recorded: no run is made."""
        model = self._output_model("parse_output_async")
        return await parse_chained(model, self._cfg.typed, raw)

    async def run_typed(
        self,
        message: str | Mapping[str, Any],
        *,
        identity: Identity | Mapping[str, Any] | None = None,
        session_id: str | None = None,
        continue_from: Conversation | None = None,
        timeout: float | None = None,
    ) -> BaseModel | Paused:
        """Run and return the answer parsed into the output schema's model, or
        :class:`Paused` when the run waits for a person (then ``resume`` of that run returns
        the model, in this process or another). When the answer fails the schema after the
        retries: the fallback chain of ``.output_fallback()``, each step committed, else
        :class:`OutputContractError` (an :class:`OutputSchemaError` with the run's report)."""
        self._output_model("run_typed")
        initial = run_input(message, continue_from, identity, session_id)
        check_clock(self._cfg.time, initial.get("time"), "run")  # .time()
        initial[TYPED_INPUT] = True  # in the run's state: a resume answers typed too
        kept: list[RunResult] = []
        outcome = await self._drive(
            lambda ex: ex.run(initial, timeout=timeout, raise_on_error=False), kept
        )
        typed = self._typed(outcome, kept[0].state)
        assert not isinstance(typed, str)  # the run asked for a typed answer
        return typed

    def _typed(self, outcome: str | Paused, state: Mapping[str, Any]) -> str | BaseModel | Paused:
        """A run's outcome as its caller asked for it: the model when the run input says
        the answer is typed (``run_typed``, and any resume of it), else as it is."""
        if isinstance(outcome, Paused) or not state.get(TYPED_INPUT):
            return outcome
        if "final_answer" not in state:  # ended without an answer (its question dropped)
            return outcome
        return typed_value(self._output_model("run_typed"), state)
