"""Judging an answer against the output schema: which half failed (the JSON or the model),
the validator's message as the run quotes it, the failing field, and, under the native
strategy, the provider's stop that fails an answer even when its text parses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ..messages._errors import OutputSchemaError

__all__ = [
    "NATIVE_STOPS",
    "Judged",
    "Verdict",
    "schema_error",
    "stage_of",
    "value_verdict",
    "verdict",
]

NATIVE_STOPS = {
    "refusal": "the model refused to answer in the schema",
    "max_tokens": "the answer was cut at max_tokens before it was complete",
    "model_context_window_exceeded": "the context window filled before the answer was complete",
    "content_filter": "the provider's content filter stopped the answer",
}
"""The provider stops that fail a native answer, even one whose text parses, and why."""


@dataclass(frozen=True)
class Verdict:
    """Why an answer is not the model: ``stage`` (``"json-parse"``, ``"schema-validate"``
    or ``"stop-reason"``), ``error`` (``"loc: msg"``, as the retry quotes it), ``path`` (the
    failing field, dotted), ``stop_reason`` (native: the provider's stop that failed it)."""

    stage: str
    error: str
    path: str | None = None
    stop_reason: str | None = None

    def fields(self) -> dict[str, Any]:
        """The verdict as a record's fields (``path`` and ``stop_reason`` when set)."""
        out: dict[str, Any] = {"stage": self.stage, "error": self.error}
        if self.path is not None:
            out["path"] = self.path
        if self.stop_reason is not None:
            out["stop_reason"] = self.stop_reason
        return out


class Judged(BaseModel):
    """An output model whose verdicts are looked up rather than computed: the base of a
    replay's stand-in, built from a recording that kept each verdict (judging is a pure
    function of the text, so the record can answer for the validator's code). Its
    instances take any fields (``run_typed`` in a replay returns the answer's JSON)."""

    model_config = ConfigDict(extra="allow")

    @classmethod
    def judged_text(cls, text: str, where: str | None = None) -> Verdict | None:
        """The verdict the recording kept for the answer ``text`` (judged in the stage
        ``where``); a text it never judged is a divergence."""
        raise NotImplementedError

    @classmethod
    def judged_value(cls, value: Any) -> tuple[Verdict | None, Any]:
        """What :func:`value_verdict` returned for ``value`` when the recording judged it."""
        raise NotImplementedError


def verdict(model: type[BaseModel], text: str) -> Verdict | None:
    """``None`` when ``text`` is JSON matching ``model``; else the first issue pydantic
    reports (the one the retry quotes)."""
    if issubclass(model, Judged):
        return model.judged_text(text)
    try:
        model.model_validate_json(text)
    except ValidationError as exc:
        return _first_issue(exc)
    return None


def value_verdict(model: type[BaseModel], value: Any) -> tuple[Verdict | None, Any]:
    """Judge a value a fallback tier gave (a JSON text, or a dict): the verdict, and the
    valid value as JSON (``model_dump(mode="json")``) when it matches."""
    if issubclass(model, Judged):
        return model.judged_value(value)
    try:
        parsed = (
            model.model_validate_json(value)
            if isinstance(value, str)
            else model.model_validate(value)
        )
    except ValidationError as exc:
        return _first_issue(exc), None
    return None, parsed.model_dump(mode="json")


def _first_issue(exc: ValidationError) -> Verdict:
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in first["loc"])
    stage = "json-parse" if first["type"] == "json_invalid" else "schema-validate"
    return Verdict(stage, f"{loc + ': ' if loc else ''}{first['msg']}", loc or None)


def stage_of(error: str) -> str:
    """The stage of an error recorded before the stage was (a JSON error says so first)."""
    return "json-parse" if error.startswith("Invalid JSON") else "schema-validate"


def schema_error(model: type[BaseModel], raw: str, found: Verdict) -> OutputSchemaError:
    """The :class:`OutputSchemaError` for ``raw`` failing ``model`` as ``found`` says."""
    return OutputSchemaError(
        f"the answer does not parse into {model.__name__} ({found.stage}): {found.error}",
        raw_output=raw,
        stage=found.stage,
        error=found.error,
        path=found.path,
    )
