"""Typed answers, for the agent: ``run_typed`` (a run whose input says the caller asked for
the model, so its resume answers typed too, in any process), ``parse_output`` and
``parse_output_async`` (an answer string judged against the output schema, the second with
the fallback chain). A part of :class:`~._agent.Agent`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from trackway.engine import Executor, RunResult
from trackway.tools import Identity

from ..context._config import AgentConfig
from ..loop._inputs import run_input
from ..messages._conversation import Conversation
from ..messages._errors import AgentBuildError
from ..messages._paused import Paused
from ..output._chain import TYPED_INPUT, parse_chained, typed_value
from ..output._verdict import schema_error, verdict

__all__ = ["TypedAnswers"]


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
        return typed_value(self._output_model("run_typed"), state)
