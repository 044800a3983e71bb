"""The chart ``trackway demo`` runs: parallel checks, a rule-based decision, an audit trail."""

from __future__ import annotations

from typing import Any

from trackway.engine import FlowChart, Rule, Scope, decide, flow_chart


def _intake(scope: Scope) -> None:
    app = scope["application"]
    scope["applicant"] = app["name"]
    scope["amount"] = app["amount"]
    scope["income"] = app["income"]


def _credit(scope: Scope) -> None:
    scope["credit_score"] = 600 + sum(map(ord, scope["applicant"])) % 200


def _fraud(scope: Scope) -> None:
    scope["fraud_flags"] = [] if scope["amount"] < 50_000 else ["large amount"]


def _income(scope: Scope) -> None:
    scope["debt_to_income"] = round(scope["amount"] / scope["income"], 3)


def _route(scope: Scope) -> Any:
    return decide(
        scope,
        [
            Rule(lambda s: bool(s["fraud_flags"]), "review", label="Fraud flags raised"),
            Rule(
                {"credit_score": {"gte": 680}, "debt_to_income": {"lt": 0.4}},
                "approve",
                label="Good credit, affordable",
            ),
        ],
        default="decline",
    )


def _set_decision(value: str) -> Any:
    def stage(scope: Scope) -> None:
        scope["decision"] = value

    return stage


def _notify(scope: Scope) -> None:
    scope.append("outbox", f"Dear {scope['applicant']}, decision: {scope['decision']}.")


def demo_chart() -> FlowChart:
    return (
        flow_chart("Intake", _intake, id="intake", description="Read the application")
        .fork(
            "Checks",
            {
                "credit": ("Credit", _credit),
                "fraud": ("Fraud", _fraud),
                "income": ("Income", _income),
            },
            id="checks",
            description="Three independent checks, in parallel",
        )
        .decider("Route", _route, id="route", description="Decide by rule")
        .branch("approve", "Approve", _set_decision("approved"))
        .branch("review", "Review", _set_decision("manual review"))
        .branch("decline", "Decline", _set_decision("declined"))
        .end()
        .then("Notify", _notify, id="notify", description="Queue the letter")
        .build(name="Loan decision (demo)", chart_id="loan-decision")
    )


def demo_agent(recorders: tuple[object, ...] = (), store: Any = None) -> Any:
    """An offline weather agent: a scripted model (``mock``) that asks for a tool, then answers
    (kept in ``store`` when one is given)."""
    from trackway.agent import Agent, mock
    from trackway.tools import define_tool

    weather = define_tool(
        name="weather",
        description="Current weather for a city.",
        input_schema={
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
        execute=lambda args, ctx: f"{args['city']}: sunny, 22°C",
    )
    model = mock(
        replies=[
            {"tool_calls": [{"id": "c1", "name": "weather", "args": {"city": "Paris"}}]},
            "It is sunny in Paris, 22°C.",
        ]
    )
    builder = (
        Agent.create(provider=model, model="mock", max_iterations=5, name="weather", store=store)
        .system("You answer weather questions.")
        .tool(weather)
    )
    for recorder in recorders:
        builder.recorder(recorder)
    return builder.build()
