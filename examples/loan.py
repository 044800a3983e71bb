"""A loan application as a flowchart: every decision is explained from the commit log.

Run it: ``python examples/loan.py``. The tests run it too (examples are tests).
"""

from __future__ import annotations

from typing import Any

from trackway import Executor, FlowChart, Rule, RunResult, Scope, decide, flow_chart


def receive(scope: Scope) -> None:
    application = scope["application"]
    scope["applicant"] = application["name"]
    scope["amount"] = application["amount"]
    scope["income"] = application["income"]


def pull_credit(scope: Scope) -> None:
    # A stand-in for a bureau call: a deterministic score from the applicant's name.
    scope["credit_score"] = 580 + sum(map(ord, scope["applicant"])) % 250


def assess(scope: Scope) -> None:
    ratio = scope["amount"] / scope["income"]
    scope["debt_to_income"] = round(ratio, 3)
    scope["risk_tier"] = "high" if ratio > 0.5 or scope["credit_score"] < 620 else "low"


def route(scope: Scope) -> Any:
    return decide(
        scope,
        [
            Rule({"risk_tier": "high"}, "reject", label="High risk"),
            Rule(
                {"credit_score": {"gte": 700}, "debt_to_income": {"lt": 0.3}},
                "approve",
                label="Strong credit, low debt",
            ),
        ],
        default="review",
    )


def approve(scope: Scope) -> None:
    scope["decision"] = "approved"


def reject(scope: Scope) -> None:
    scope["decision"] = "rejected"


def review(scope: Scope) -> None:
    scope["decision"] = "manual review"


def notify(scope: Scope) -> None:
    scope.append("outbox", f"{scope['applicant']}: your application was {scope['decision']}")


def build_chart() -> FlowChart:
    return (
        flow_chart("Receive", receive, id="receive", description="Take the application")
        .then("Pull credit", pull_credit, id="pull-credit", description="Score the applicant")
        .then("Assess", assess, id="assess", description="Debt-to-income and risk tier")
        .decider("Route", route, id="route", description="Pick an outcome by rule")
        .branch("approve", "Approve", approve)
        .branch("reject", "Reject", reject)
        .branch("review", "Review", review)
        .end()
        .then("Notify", notify, id="notify", description="Tell the applicant")
        .build(name="Loan application")
    )


def run(application: dict[str, Any]) -> RunResult:
    return Executor(build_chart()).run_sync({"application": application})


def main() -> None:
    result = run({"name": "Ada Lovelace", "amount": 12_000, "income": 60_000})
    print("Loan application:")
    for commit in result.snapshot.history():
        writes = ", ".join(f"{op.key}={op.value!r}" for op in commit.ops) or "-"
        print(f"  {commit.seq}. {commit.stage_name:<12} read {list(commit.reads)} wrote {writes}")
        if commit.detail and "decision" in commit.detail:
            ev = commit.detail["decision"]
            print(f"     chose {ev['chosen']!r}" + (" (default)" if ev.get("default") else ""))
    print(f"decision: {result.state['decision']}")


if __name__ == "__main__":
    main()
