from __future__ import annotations

import jsonschema
import pytest
from pydantic import BaseModel

from trackway import Executor, flow_chart
from trackway.engine import ChartBuildError, InputValidationError, OutputValidationError


class LoanIn(BaseModel):
    amount: int
    name: str


class LoanOut(BaseModel):
    decision: str


def decide_stage(s):
    s["decision"] = "approved" if s["amount"] < 100 else "review"


def chart(**schemas):
    return flow_chart("Decide", decide_stage).build(
        name="Loan", description="Decide a loan", **schemas
    )


def test_input_is_validated_before_anything_runs_also_when_absent():
    ex = Executor(chart(input_schema=LoanIn))
    assert ex.run_sync({"amount": 5, "name": "a"}).state["decision"] == "approved"
    with pytest.raises(InputValidationError) as info:
        ex.run_sync({"amount": "lots"})
    paths = {i["path"] for i in info.value.issues}
    assert paths == {"amount", "name"}
    with pytest.raises(InputValidationError, match="name: Field required"):
        ex.run_sync()


def test_json_schema_input_is_checked_with_jsonschema():
    schema = {
        "type": "object",
        "properties": {"amount": {"type": "integer", "minimum": 1}, "name": {"type": "string"}},
        "required": ["amount"],
    }
    ex = Executor(chart(input_schema=schema))
    with pytest.raises(InputValidationError, match="amount: 0 is less than the minimum of 1"):
        ex.run_sync({"amount": 0})
    with pytest.raises(InputValidationError, match="'amount' is a required property"):
        ex.run_sync(None)


def test_output_is_validated_when_the_run_ends_and_the_log_is_kept():
    def wrong(s):
        s["decision"] = 42

    c = flow_chart("Wrong", wrong).build(output_schema=LoanOut)
    with pytest.raises(
        OutputValidationError, match="decision: Input should be a valid string"
    ) as info:
        Executor(c).run_sync()
    assert info.value.snapshot.status == "failed" and len(info.value.snapshot) == 1
    assert Executor(chart(output_schema=LoanOut)).run_sync({"amount": 1}).status == "done"


def test_bad_schemas_fail_at_build():
    with pytest.raises(ChartBuildError, match="not a valid JSON Schema"):
        chart(input_schema={"type": "nonsense"})
    with pytest.raises(ChartBuildError, match="BaseModel subclass or a JSON Schema"):
        chart(output_schema=42)


def test_mcp_tool_and_openapi_describe_the_chart():
    c = chart(input_schema=LoanIn, output_schema=LoanOut)
    tool = c.to_mcp_tool()
    assert tool["name"] == "decide" and tool["description"] == "Decide a loan"
    assert tool["inputSchema"]["required"] == ["amount", "name"]
    assert tool["outputSchema"]["properties"]["decision"]["type"] == "string"
    jsonschema.validate({"amount": 3, "name": "x"}, tool["inputSchema"])
    api = c.to_openapi()
    assert api["openapi"] == "3.1.0"
    op = api["paths"]["/decide/run"]["post"]
    body = op["requestBody"]["content"]["application/json"]["schema"]
    assert body == tool["inputSchema"]
    result = op["responses"]["200"]["content"]["application/json"]["schema"]
    jsonschema.validate({"run_id": "r", "status": "done", "state": {"decision": "ok"}}, result)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"run_id": "r", "status": "done", "state": {}}, result)
    plain = flow_chart("P", decide_stage).build()
    assert plain.to_mcp_tool()["inputSchema"] == {"type": "object"}
    assert "FlowChart: P" in plain.to_mcp_tool()["description"]
