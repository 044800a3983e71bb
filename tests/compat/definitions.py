"""The charts, agents and composition the compatibility fixtures were written with.

``make_fixtures.py`` ran them at commit 3ad18f4 (trackway 0.1.0) to write
``v0_1_0_3ad18f4/``; ``test_previous_version.py`` builds them again with the current code to
load, resume, continue and replay what that commit wrote. A resume checks the chart's
fingerprint and a replay checks every commit, so these definitions are FROZEN: change one and
the fixtures no longer match it (write a new fixture folder instead).

Only the public names of ``trackway.engine``, ``trackway.agent``, ``trackway.tools`` and
``trackway.recorders`` are used, so the definitions survive moves of private modules.
"""

from __future__ import annotations

from typing import Any

from trackway.agent import Agent, Conditional, LLMCall, Sequence, mock
from trackway.engine import (
    FlowChart,
    Rule,
    RunStore,
    Scope,
    decide,
    flow_chart,
)
from trackway.tools import Tool, ask_human, define_tool

# The executor's key for the checkpoint kept as a JSON file (a store is not its proof).
CHECKPOINT_KEY = "trackway compat fixtures v0.1.0 (not a secret)"

# -- the engine chart: a decider, a parallel fork, a subflow, and a stage that pauses ------


def _receive(scope: Scope) -> None:
    order = scope["order"]
    scope["amount"] = order["amount"]
    scope["items"] = list(order["items"])


def _check_stock(scope: Scope) -> None:
    scope["in_stock"] = len(scope["items"]) <= 3


def _check_fraud(scope: Scope) -> None:
    scope["fraud_score"] = 7 if scope["amount"] > 100 else 1


def _route(scope: Scope) -> Any:
    return decide(scope, [Rule({"amount": {"gt": 100}}, "review", label="Large order")], "auto")


def _approve_small(scope: Scope) -> None:
    scope["approved"] = True


def _ask_manager(scope: Scope) -> None:
    scope["asked"] = True
    scope.pause({"question": "Approve this order?", "amount": scope["amount"]})


def _take_answer(scope: Scope, value: Any) -> None:
    scope["approved"] = value == "approve"


def _pack(scope: Scope) -> None:
    scope["label"] = f"parcel of {scope['count']} for {scope['weight']}"


def _settle(scope: Scope) -> None:
    scope["status"] = "shipped" if scope["approved"] else "held"


def shipping_chart() -> FlowChart:
    """The chart mounted as the ``ship`` subflow, on its own state."""
    return flow_chart("Pack", _pack, id="pack").build(name="shipping", chart_id="shipping")


def order_chart() -> FlowChart:
    """Receive an order, check it in two parallel branches, route it (a large one waits for
    a manager's answer), ship it through a subflow, settle it."""
    return (
        flow_chart("Receive", _receive, id="receive")
        .fork("Checks", {"stock": _check_stock, "fraud": _check_fraud}, id="checks")
        .decider("Route", _route, id="route")
        .branch("auto", "Approve small", _approve_small, id="approve-small")
        .branch("review", "Ask manager", _ask_manager, id="ask-manager", on_resume=_take_answer)
        .default("auto")
        .end()
        .subflow(
            "Ship",
            shipping_chart(),
            id="ship",
            input={"weight": "amount", "count": "item_count"},
            output={"parcel": "label"},
        )
        .then("Settle", _settle, id="settle")
        .build(name="order", chart_id="order")
    )


def order_input(amount: int) -> dict[str, Any]:
    return {"order": {"amount": amount, "items": ["pen", "ink"]}, "item_count": 2}


SMALL_ORDER = 40  # routed "auto": the run ends
LARGE_ORDER = 250  # routed "review": the run pauses at ask-manager
ANSWER = "approve"

# -- the agents ---------------------------------------------------------------------------

WEATHER = define_tool(
    name="weather",
    description="Current weather for a city.",
    input_schema={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
    execute=lambda args, ctx: f"{args['city']}: sunny, 22C",
)

WEATHER_SCRIPT: list[Any] = [
    {
        "tool_calls": [{"id": "w1", "name": "weather", "args": {"city": "Paris"}}],
        "usage": {"input_tokens": 40, "output_tokens": 9},
    },
    {"content": "Sunny in Paris, 22C.", "usage": {"input_tokens": 61, "output_tokens": 7}},
]
WEATHER_QUESTION = "Weather in Paris?"


def weather_agent(replies: list[Any], recorders: tuple[object, ...] = ()) -> Agent:
    """A tool-calling agent on a scripted ``mock`` provider."""
    builder = (
        Agent.create(provider=mock(replies=replies), model="mock", temperature=0.2, name="weather")
        .system("You answer weather questions.")
        .tool(WEATHER)
    )
    for recorder in recorders:
        builder = builder.recorder(recorder)
    return builder.build()


def chat_agent(replies: list[Any]) -> Agent:
    """A plain agent whose conversation is kept (``agent.checkpoint()``) and continued."""
    return Agent.create(provider=mock(replies=replies), model="mock", name="chat").build()


CHAT_FIRST = ("Where is Paris?", "Paris is in France.")
CHAT_NEXT = ("How many people live there?", "About 2.1 million.")

REFUND: Tool = define_tool(
    name="refund",
    description="Refund an order.",
    input_schema={
        "type": "object",
        "properties": {"order": {"type": "string"}, "amount": {"type": "number"}},
        "required": ["order", "amount"],
    },
    execute=lambda args, ctx: f"refunded {args['amount']} on {args['order']}",
)


def _call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": name, "args": args}]}


# Before the pause (what the fixture's run was given), and after the person's answer.
SUPPORT_BEFORE: list[Any] = [_call("a1", "ask_human", {"question": "Which order?"})]
SUPPORT_AFTER: list[Any] = [
    _call("r1", "refund", {"order": "A-42", "amount": 30}),
    "Order A-42 is refunded.",
]
SUPPORT_MESSAGE = "Refund my last order"
SUPPORT_ANSWER = "A-42"


def support_agent(replies: list[Any], store: RunStore | None) -> Agent:
    """An agent that asks the person (``ask_human``) before it refunds, kept in a store."""
    return (
        Agent.create(provider=mock(replies=replies), model="mock", name="support", store=store)
        .system("You handle refunds.")
        .tool(ask_human())
        .tool(REFUND)
        .build()
    )


# -- the composition: a sequence whose second step is a conditional -------------------------


def _is_long(message: str, state: Any) -> bool:
    return len(message) > 40


def article(replies: dict[str, list[Any]]) -> Agent:
    """Research, then write: a long brief goes to the ``long`` writer, else ``short``."""

    def llm(member: str, system: str) -> Agent:
        provider = mock(replies=replies.get(member, []))
        built: Agent = LLMCall.create(provider=provider, model="small", system=system).build()
        return built

    write = (
        Conditional.create(name="write")
        .when(_is_long, "long", llm("long", "Write three paragraphs."))
        .otherwise("short", llm("short", "Write one sentence."))
        .build()
    )
    return (
        Sequence.create(name="article")
        .step("research", llm("research", "List the facts."))
        .step("write", write)
        .build()
    )


ARTICLE_REPLIES: dict[str, list[Any]] = {
    "research": ["Air scatters short (blue) wavelengths of sunlight most: Rayleigh scattering."],
    "long": ["The sky is blue because air scatters blue light most."],
}
ARTICLE_MESSAGE = "Why is the sky blue?"
