"""The generated events page (docs/guide/events.md), written from the registry.

``python -m trackway.agent.events docs/guide/events.md`` writes it; a test fails when the
page in the repository is not what this renders.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from ._registry import EventSpec, event_catalogue

__all__ = ["REGENERATE", "render_events_page"]

REGENERATE = "python -m trackway.agent.events docs/guide/events.md"
"""The command that writes the page."""

_INTRO = """\
# Events

<!-- Generated from the registry in trackway/agent/events/ by `{regenerate}`:
edit the registry (or the text in trackway/agent/events/_docs.py), not this page. -->

Every event trackway emits is registered in one catalogue, `trackway.agent.EVENTS`: its name
(`domain.what`), its domain, its payload as a `TypedDict`, and a one-line summary. This page
is generated from that catalogue, and a test fails when an emitted name is not in it (a scan
of the source, and a run of real agents whose events are checked).

Listen with `agent.on(pattern, fn)`: an exact name, `"domain.*"` or `"*"` (see
[Events](agent.md#events)). Every event is also kept in the commit of the stage that emitted
it, so a recording holds them all. Most payloads carry ids, enums and counts; those that
carry what the conversation says (`stream.*`, `agent.turn_start`, `agent.turn_end`,
`agent.paused`, `agent.resumed`, ...) are hidden by
[`conversation_redaction`](agent.md#redacting-the-conversation).

Inside a composition, a listener also hears `member` (the member's path) on each event's
payload; the commit keeps the payload without it.

```python
from trackway.agent import EVENTS, event_catalogue

spec = EVENTS["tools.gate"]
print(spec.domain, sorted(spec.required))
print(len(event_catalogue()) == len(EVENTS))
```

```text
tools ['decision', 'id', 'name', 'why']
True
```

## Checking a run's events

`EventAudit` hears every event of the runs it is attached to (`.recorder(audit)`,
`agent.attach(audit)`, or `agent.on("*", audit)`) and checks each against the catalogue: the
name registered, every required key present, no key the `TypedDict` does not name. Name your
own events in `allow` (exact names or patterns): they are heard, not checked. `check()`
raises `AssertionError` listing what did not fit; `check_events(commit.events)` checks events
read back from a log. The checks run only where a test asks: the agent never reads the
catalogue when it emits. In a pytest session, the `event_audit` fixture (trackway's pytest
plugin) is an `EventAudit` checked when the test ends.

```python
from trackway import Agent, define_tool, mock
from trackway.agent import EventAudit

lookup = define_tool(
    name="lookup",
    description="Look a word up.",
    input_schema={{"type": "object", "properties": {{"word": {{"type": "string"}}}}}},
    execute=lambda args, ctx: f"{{args['word']}}: a small bird",
)
provider = mock(
    replies=[
        {{"tool_calls": [{{"id": "c1", "name": "lookup", "args": {{"word": "wren"}}}}]}},
        "A wren is a small bird.",
    ]
)
audit = EventAudit(allow=["app.*"])
agent = Agent.create(provider=provider, model="m-1").tool(lookup).recorder(audit).build()
agent.run_sync("What is a wren?")
audit.check()
print(audit.heard[:3])
```

```text
['agent.turn_start', 'agent.iteration_start', 'stream.llm_start']
```

## Adding an event

A `TypedDict` of the payload and one line, in the module of its domain under
`trackway/agent/events/`:

```python
# doctest: skip
class Conflict(TypedDict):
    id: str
    other: str

event("findings.conflict", Conflict, "Two facts the answer stood on disagree.")
```

Then run `{regenerate}`. A payload key that is not always there is `NotRequired`; an event
whose payload also quotes a record (a tool's statement, a pending question) says whose keys
those are with `extra=`.

## The catalogue

In each table, `key?` is a key the payload may leave out, and *+ ...* names the record whose
own keys the payload also carries.

"""

_COVERAGE = """\
## The seeds' domains

The reference library fires 124 typed events across 27 domains; its taxonomy page is not
among the seeds, which name 31 events in 8 domains (`agentfootprint.<domain>.<name>`) and
mention a ninth, `context`. Each is below with what trackway does. The domains trackway has
and the seeds do not name (`cost`, `credential`, `memory`, `middleware`, `skill`, `time`,
`composition`) are in the catalogue above.

| Seed domain | Seed events | trackway |
| --- | --- | --- |
"""

_COVERAGE_ROWS: tuple[tuple[str, str, str], ...] = (
    (
        "agent",
        "budget_exhausted, iteration_end, turn_end",
        "covered, same names (and `turn_start`, `iteration_start`, `paused`, `resumed`, ...)",
    ),
    (
        "stream",
        "llm_start, token, tool_start, tool_progress, tool_end",
        "covered, same names (and `llm_end`)",
    ),
    (
        "tools",
        "absent, answered_off_wire, coverage_declared, effect, repeated_call, result_refused, "
        "session_started, session_reused, session_closed, session_close_failed",
        "covered, same names",
    ),
    ("tool_choice", "picked, outcome, failed", "covered, same names"),
    ("validation", "args_invalid", "covered"),
    ("artifacts", "refused", "covered (and `placed`, `place_failed`, `resolved`)"),
    (
        "context",
        "(the window's record)",
        "covered: `context.window`, and `context.ledger_facts` for the window's hold of "
        "declared facts",
    ),
    ("findings", "declared, standing", "covered"),
    (
        "findings",
        "argument",
        "covered under trackway's name `tools.argument_filled` (names the argument a tool's "
        "rule filled, never its value)",
    ),
    (
        "findings",
        "period",
        "covered: `findings.period` per call whose result declared a period (or owed one: "
        "`undeclared`), the verdict word only; the verdict is kept on the result's "
        "`coverage_declared` row (or its `tool_results` row), not as a separate findings row",
    ),
    (
        "findings",
        "contingent, judged, judge_failed",
        "covered, same names (and `findings.conflict`; `findings.standing` carries `agrees` "
        "once a judgment of the result exists)",
    ),
    ("ontology", "served", "covered"),
)

_COVERAGE_END = """
The seeds' other 18 domains are not named in the seeds, so there is nothing to port them
from; a behaviour trackway has is in the catalogue above, under its own domain.
"""


def render_events_page() -> str:
    """The page, from the registry: the hand-written parts, then one section per domain."""
    specs = event_catalogue()
    domains: dict[str, list[EventSpec]] = {}
    for spec in specs:
        domains.setdefault(spec.domain, []).append(spec)
    out = [_INTRO.format(regenerate=REGENERATE)]
    out.append(f"{len(specs)} events in {len(domains)} domains:\n")
    out.append(", ".join(f"[`{d}`](#the-{d}-events) ({len(s)})" for d, s in domains.items()))
    out.append("\n")
    for domain, group in domains.items():
        out.append(
            f"\n### The `{domain}` events\n\n| Event | Payload | Summary |\n| --- | --- | --- |\n"
        )
        for spec in group:
            out.append(f"| `{spec.name}` | {_payload_text(spec)} | {spec.summary} |\n")
    out.append("\n")
    out.append(_COVERAGE)
    for domain, seeds, ours in _COVERAGE_ROWS:
        named = ", ".join(f"`{n.strip()}`" if n[:1] != "(" else n for n in seeds.split(","))
        out.append(f"| `{domain}` | {named} | {ours} |\n")
    out.append(_COVERAGE_END)
    return "".join(out)


def _payload_text(spec: EventSpec) -> str:
    hints = typing.get_type_hints(spec.payload)
    parts = []
    for key in hints:
        mark = "?" if key in spec.optional else ""
        parts.append(f"`{key}{mark}: {_type_text(hints[key])}`")
    if spec.extra:
        parts.append(f"*+ {spec.extra}*")
    return ", ".join(parts).replace("|", "\\|")


def _type_text(tp: Any) -> str:
    """A type as the page spells it: ``int``, ``str | None``, ``list[str]``, ``Any``."""
    if tp is type(None):
        return "None"
    if tp is Any:
        return "Any"
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (types.UnionType, typing.Union):
        return " | ".join(_type_text(a) for a in args)
    if origin is typing.Literal:
        return " | ".join(repr(a).replace("'", '"') for a in args)
    if origin is not None and args:
        name = getattr(origin, "__name__", str(origin))
        return f"{name}[{', '.join(_type_text(a) for a in args)}]"
    if typing.is_typeddict(tp):
        return (
            "{"
            + ", ".join(f"{k}: {_type_text(v)}" for k, v in typing.get_type_hints(tp).items())
            + "}"
        )
    return getattr(tp, "__name__", str(tp))
