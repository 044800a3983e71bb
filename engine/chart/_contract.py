"""Declared input and output schemas: validation at the run's edges and self-description.

A schema is a pydantic model class or a JSON Schema dict (draft 2020-12, checked with
``jsonschema``). Input is validated before the first stage runs, also when no input is
given; output (the run's final state) is validated when the run ends.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import jsonschema
from pydantic import BaseModel, ValidationError

from ..core._errors import (
    ChartBuildError,
    InputValidationError,
    OutputValidationError,
    StateValueError,
)
from ..core._values import thaw

if TYPE_CHECKING:
    from ._chart import FlowChart

__all__ = [
    "Schema",
    "SchemaIssue",
    "check_input",
    "check_output",
    "check_schema",
    "json_schema",
    "validate",
]

Schema = type[BaseModel] | Mapping[str, Any]


def check_schema(schema: Any, what: str) -> Schema | None:
    """Accept a pydantic model class or a valid JSON Schema; refuse anything else at build."""
    if schema is None:
        return None
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema
    if isinstance(schema, Mapping):
        try:
            jsonschema.Draft202012Validator.check_schema(dict(schema))
        except jsonschema.SchemaError as exc:
            raise ChartBuildError(f"{what} is not a valid JSON Schema: {exc.message}") from None
        return schema
    raise ChartBuildError(
        f"{what} takes a pydantic BaseModel subclass or a JSON Schema dict, got {schema!r}"
    )


def json_schema(schema: Schema) -> dict[str, Any]:
    """The JSON Schema of a declared schema."""
    if isinstance(schema, type):
        return schema.model_json_schema()
    return dict(schema)


SchemaIssue = dict[str, str]


def validate(
    schema: Schema, value: Any, hidden: Callable[[str], bool] | None = None
) -> list[SchemaIssue]:
    """Every way ``value`` fails ``schema``, as ``{"path", "message"}`` dicts (empty: valid).

    ``hidden(path)`` says which paths hold values the redaction policy hides: their
    messages name the rule that failed, never the value.
    """
    issues: list[tuple[str, str, str]] = []  # path, message, the rule that failed
    if isinstance(schema, type):
        try:
            schema.model_validate(value)
        except ValidationError as exc:
            issues = [
                (".".join(str(p) for p in e["loc"]) or "(root)", e["msg"], e["type"])
                for e in exc.errors()
            ]
    else:
        validator = jsonschema.Draft202012Validator(dict(schema))
        issues = [
            (".".join(str(p) for p in e.absolute_path) or "(root)", e.message, str(e.validator))
            for e in sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        ]
    return [
        {
            "path": path,
            "message": f"fails the schema's {rule!r} rule (the value is hidden by the "
            "redaction policy)"
            if hidden is not None and hidden(path)
            else message,
        }
        for path, message, rule in issues
    ]


def _listed(issues: list[SchemaIssue]) -> str:
    return "; ".join(f"{i['path']}: {i['message']}" for i in issues[:5])


def check_input(
    chart: FlowChart,
    input: Mapping[str, Any] | None,
    hidden: Callable[[str], bool] | None = None,
) -> None:
    """Refuse a run input that fails the chart's input schema, before anything runs."""
    schema = chart.input_schema
    if schema is None:
        return
    try:
        value = thaw(input) if input is not None else {}
    except TypeError as exc:
        raise StateValueError(
            f"the run input is not JSON ({exc}); state keys are str and values JSON",
            key="<input>",
            stage_path=None,
        ) from None
    issues = validate(schema, value, hidden)
    if issues:
        raise InputValidationError(
            f"the input to chart {chart.id!r} fails its input schema: {_listed(issues)}",
            issues=issues,
        )


def check_output(
    chart: FlowChart, state: Mapping[str, Any], hidden: Callable[[str], bool] | None = None
) -> OutputValidationError | None:
    """The error a final state fails the chart's output schema with (``None``: it passes)."""
    schema = chart.output_schema
    if schema is None:
        return None
    issues = validate(schema, thaw(state), hidden)
    if not issues:
        return None
    return OutputValidationError(
        f"the final state of chart {chart.id!r} fails its output schema: {_listed(issues)}",
        issues=issues,
    )
