"""A support agent whose behaviour is declared, not coded: three skills on rails, a denial
playbook a tool pushes, and a classifier that narrows the tools each call is served.

Run it: ``python examples/support_skills.py``. Offline: a scripted stand-in for the model
(the ``mock`` provider) answers the way an LLM would, and two scripted classifiers
(``mock_classifier``) stand in for a small, fast model:

- three skills, ``refunds``, ``shipping`` and ``account``, each a body of instructions and
  one or two tools over an in-memory table of orders and accounts;
- a skill graph with ``strictness="rails"``: only the author's code moves the cursor. A
  refund denied by ``issue_refund`` routes to ``account`` (``on_tool_status="denied"``); an
  order that ``lookup_order`` finds still in transit proposes ``shipping`` (a typed effect);
  the model's own ``read_skill`` is refused. A classifier picks each turn's entry skill, and
  when it fails the cold start (the first entry) takes over;
- ``issue_refund`` pushes the ``denial-playbook`` instruction into the next call
  (``require_instruction``);
- ``.tool_choice(classifier=..., serve={"top": 3})``: each call is served the classifier's
  top three tools and the doors.

The script runs two turns. For each it prints the answer, how the skill cursor moved
(``skill_proposals``), the tool-choice rows, checks that every request the model was sent
is rebuilt from the record (``served_at(agent, k).hash`` against the receipt of call k),
and replays the turn from its snapshot alone: no agent, no model, no classifier.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from trackway import (
    LLMRequest,
    Snapshot,
    ToolContext,
    define_tool,
    mock,
    receipts,
    replay,
    served_at,
)
from trackway.agent import (
    Agent,
    ClassifierError,
    ClassifyRequest,
    classifier_scorer,
    define_instruction,
    define_skill,
    mock_classifier,
    propose_transition,
    require_instruction,
    route,
    skill_graph,
)

REFUND_WINDOW_DAYS = 30
ORDERS: dict[str, dict[str, Any]] = {
    "A1": {"customer": "ana", "item": "kettle", "amount": 39.0, "state": "delivered", "days": 45},
    "B2": {
        "customer": "ana",
        "item": "teapot",
        "amount": 24.0,
        "state": "in transit",
        "carrier": "Parcelnet",
        "last_scan": "Lyon hub",
        "due": "2026-10-02",
    },
}
ACCOUNTS: dict[str, dict[str, Any]] = {
    "ana": {"email": "ana@example.com", "store_credit": 0.0, "orders": ["A1", "B2"]},
}


# -- the tools: plain functions over the tables ------------------------------------------


def lookup_order(args: dict[str, Any], ctx: ToolContext) -> Any:
    order = ORDERS.get(args["order"])
    if order is None:
        return {"content": f"No order {args['order']}.", "effects": [], "status": "absent"}
    summary = {"order": args["order"], **order}
    if order["state"] == "in transit":  # not a refund yet: ask the graph to move to shipping
        return {
            "content": summary,
            "effects": [propose_transition("shipping", "the order has not arrived")],
        }
    return summary


def issue_refund(args: dict[str, Any], ctx: ToolContext) -> Any:
    order = ORDERS[args["order"]]
    if order["days"] > REFUND_WINDOW_DAYS:
        return {
            "content": f"Refused: delivered {order['days']} days ago; refunds are accepted "
            f"within {REFUND_WINDOW_DAYS} days of delivery.",
            "effects": [require_instruction("denial-playbook")],  # served to the next call
            "status": "denied",
        }
    order["state"] = "refunded"
    return {"refunded": order["amount"], "order": args["order"]}


def track_parcel(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    order = ORDERS[args["order"]]
    return {key: order[key] for key in ("carrier", "last_scan", "due")}


def account_summary(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return {"customer": args["customer"], **ACCOUNTS[args["customer"]]}


def add_store_credit(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    account = ACCOUNTS[args["customer"]]
    account["store_credit"] += args["amount"]
    return {"customer": args["customer"], "store_credit": account["store_credit"]}


def _schema(**fields: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: {"type": kind} for name, kind in fields.items()},
        "required": list(fields),
        "additionalProperties": False,
    }


LOOKUP = define_tool(
    name="lookup_order",
    description="Look an order up: the item, the amount, and whether it was delivered.",
    input_schema=_schema(order="string"),
    execute=lookup_order,
)
REFUND = define_tool(
    name="issue_refund",
    description="Refund an order to the customer's card, within the refund window.",
    input_schema=_schema(order="string"),
    execute=issue_refund,
)
TRACK = define_tool(
    name="track_parcel",
    description="Where a parcel is: the carrier, its last scan and when it is due.",
    input_schema=_schema(order="string"),
    execute=track_parcel,
)
SUMMARY = define_tool(
    name="account_summary",
    description="A customer's account: email, store credit and orders.",
    input_schema=_schema(customer="string"),
    execute=account_summary,
)
CREDIT = define_tool(
    name="add_store_credit",
    description="Add store credit to a customer's account.",
    input_schema=_schema(customer="string", amount="number"),
    execute=add_store_credit,
)


# -- the declarations ----------------------------------------------------------------------

REFUNDS = define_skill(
    id="refunds",
    title="Refunds",
    body="Look the order up before refunding it. Refund only within the refund window.",
    tools=[LOOKUP, REFUND],
)
SHIPPING = define_skill(
    id="shipping",
    title="Shipping",
    body="Track the parcel and give the carrier, the last scan and the due date.",
    tools=[TRACK],
)
ACCOUNT = define_skill(
    id="account",
    title="Account",
    body="Read the account before changing it. Store credit is added only when the customer "
    "accepts it.",
    tools=[SUMMARY, CREDIT],
)
PLAYBOOK = define_instruction(
    id="denial-playbook",
    prompt="A refund was just denied. Name the policy that applies, say you are sorry, and "
    "offer store credit for the order's amount. Do not promise an exception.",
    active_when=lambda state: False,  # served only when a tool requires it
)

ENTRY_SCORES = {  # what the entry classifier would say to the first turn's message
    "ranked": [["refunds", 0.92], ["account", 0.05], ["shipping", 0.03]],
    "chosen": "refunds",
    "usage": {"input_tokens": 61, "output_tokens": 9},
    "latency_ms": 38.0,
}
OVERLOADED = ClassifierError("the classifier's model is overloaded", status=529, retryable=True)
OWNER = {t.name: s.id for s in (REFUNDS, SHIPPING, ACCOUNT) for t in s.tools}


def rank_tools(request: ClassifyRequest) -> dict[str, Any]:
    """Stands in for a small model ranking the tools: the active skill's tools first, then
    the others by the words their description shares with the person's message."""
    skill = request.state.get("skill")
    words = set(str(request.state["message"]).lower().replace("?", " ").split())
    scored = []
    for criterion in request.criteria:
        shared = len(words & set(criterion.description.lower().split()))
        own = OWNER.get(criterion.name) == skill
        scored.append([criterion.name, round((0.8 if own else 0.1) + 0.05 * shared, 2)])
    scored.sort(key=lambda pair: -pair[1])
    return {"ranked": scored, "chosen": scored[0][0], "usage": {"input_tokens": 120}}


def calls(*items: tuple[str, str, dict[str, Any]], say: str = "") -> dict[str, Any]:
    return {"content": say, "tool_calls": [{"id": i, "name": n, "args": a} for i, n, a in items]}


TURNS = [
    (
        "Hi, it's Ana. The kettle from order A1 stopped working, can I get a refund?",
        [
            calls(("c1", "lookup_order", {"order": "A1"}), say="Let me look at that order."),
            calls(("c2", "issue_refund", {"order": "A1"})),
            calls(("c3", "account_summary", {"customer": "ana"})),
            "I'm sorry, Ana: order A1 was delivered 45 days ago, and refunds are accepted "
            "within 30 days of delivery, so I can't refund the kettle. I can add $39.00 of "
            "store credit to your account instead. Shall I?",
        ],
    ),
    (
        "Where is my teapot, order B2? It hasn't arrived.",
        [
            calls(("c4", "read_skill", {"id": "shipping"})),
            calls(("c5", "lookup_order", {"order": "B2"})),
            calls(("c6", "track_parcel", {"order": "B2"})),
            "Your teapot (B2) is with Parcelnet: last scanned at the Lyon hub, due on 2026-10-02.",
        ],
    ),
]


def build() -> Agent:
    script = [reply for _, replies in TURNS for reply in replies]
    graph = skill_graph(
        route("refunds", "account", on_tool_return="issue_refund", on_tool_status="denied"),
        route("refunds", "shipping"),  # an edge a proposal may take (no condition: no move)
        entry=["refunds", "shipping", "account"],  # the first is the cold start
        scorer=classifier_scorer(mock_classifier([ENTRY_SCORES, OVERLOADED], name="entry")),
        strictness="rails",
    )
    return (
        Agent.create(provider=mock(replies=script), model="support-model")
        .system("You are the support desk of a small shop. Be brief and exact.")
        .skills([REFUNDS, SHIPPING, ACCOUNT])
        .skill_graph(graph)
        .instruction(PLAYBOOK)
        .tool_choice(classifier=mock_classifier(rank_tools, name="tools"), serve={"top": 3})
        .build()
    )


# -- the turns, the law and the replay -----------------------------------------------------


@dataclass
class Turn:
    message: str
    answer: str
    snapshot: Snapshot
    exact: list[bool]
    replayed: bool


def converse() -> list[Turn]:
    """Both turns on one agent, each checked against the law and replayed hermetically."""
    agent = build()
    done: list[Turn] = []
    conversation = None
    for message, _ in TURNS:
        answer = agent.run_sync(message, continue_from=conversation)
        assert isinstance(answer, str), answer
        conversation = agent.checkpoint()
        snap = agent.snapshot()
        exact = [
            served_at(agent, k).hash == receipt["request_hash"]
            for k, receipt in enumerate(receipts(agent), start=1)
        ]
        alone = replay(snap)  # no agent: no model, no classifier, no tools, no code
        done.append(Turn(message, answer, snap, exact, alone.state["final_answer"] == answer))
    return done


def _pieces(request: LLMRequest) -> str:
    """The skill body and the instructions a request's system prompt carries."""
    system = request.system or ""
    served = [s.id for s in (REFUNDS, SHIPPING, ACCOUNT) if f"## Skill: {s.title}" in system]
    served += [f"+{PLAYBOOK.id}"] if PLAYBOOK.prompt in system else []
    return " ".join(served) or "no skill"


def show(n: int, turn: Turn) -> None:
    state = turn.snapshot.state
    print(f"Turn {n}: {turn.message}")
    print(f"Answer: {turn.answer}")
    (entry,) = state["skill_entry"]
    ranking = ", ".join(f"{r['id']} {r['score']:g}" for r in entry["ranking"])
    how = "cold start" if entry.get("cold_start") else f"ranked {ranking}"
    print(f"entry: {entry['chosen']} (scorer {entry['scorer']}: {how})")
    moves = [
        f"call {p['k']} {p['source']} -> {p['target']} {p['verdict']}"
        for p in state["skill_proposals"]
    ]
    print(f"skill_proposals: {'; '.join(moves)}")
    print("calls [skill body +leased instruction served], the classifier's top 3, the tools")
    print("served besides the doors, and what the model called:")
    picks = {r["k"]: r for r in state["tool_choices"] if r["kind"] != "outcome"}
    for k in range(1, len(turn.exact) + 1):
        row = picks[k]
        ranked = ", ".join(f"{r['name']} {r['score']:g}" for r in row.get("ranked", ())[:3])
        served = [name for name in row["served"] if name in OWNER]
        did = [f"{r['name']}: {r['status']}" for r in state["tool_results"] if r["iteration"] == k]
        print(
            f"  call {k} [{_pieces(served_at(turn.snapshot, k))}] ranked {ranked}; served "
            f"{len(served)} of {len(row['offered'])}: {', '.join(served)} -> "
            f"{', '.join(did) or 'answered'}"
        )
    for r in state["tool_results"]:
        if r["name"] == "read_skill":
            print(f"  read_skill refused: {_read(turn.snapshot, r['id'])}")
    print(
        f"law: {sum(turn.exact)} of {len(turn.exact)} requests rebuilt from the record match "
        "their receipts"
    )
    print(f"replayed from the snapshot alone: {turn.replayed}")


def _read(snap: Snapshot, call_id: str) -> str:
    """What the model read for the call ``call_id`` (its tool message)."""
    for message in snap.state["history"]:
        if message.get("tool_call_id") == call_id:
            return str(message["content"])
    return "?"


def main() -> int:
    turns = converse()
    for n, turn in enumerate(turns, start=1):
        if n > 1:
            print()
        show(n, turn)
    ok = all(all(t.exact) and t.replayed for t in turns)
    if not ok:
        print("the record does not rebuild what was sent", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
