"""A backup desk agent whose answers carry the limits its tools declared.

Run it: ``python examples/backup_desk.py``. Offline: a scripted stand-in for the model (the
``mock`` provider) asks for the tools the way an LLM would. The desk has three tools:

- ``backup_runs`` returns rows with ``described_result``, a verdict with ``coverage`` or,
  when nothing matched, ``absent``; each says what it checked and what it cannot see, and
  the period its read covered;
- ``search_logs`` has a default nobody chose (``ask_or_assume``): a left-out look-back is
  filled by the tool's rule, the model is told, and the answer admits it;
- ``rerun_backup`` is offered by a tool provider only once a failed run was seen, and holds
  a connection per run (a tool session) that closes when the run ends.

With ``.limits_travel_with_the_answer()`` the answer ends with a block composed from the
record: the model cannot drop it. The script prints the answer, the record's
``coverage_declared`` rows and the session events, then replays the turn from its recording
without the model or the tools.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trackway import (
    Agent,
    ToolContext,
    absent,
    coverage,
    define_tool,
    described_result,
    gated_tools,
    mock,
    replay,
    tool_session_key,
)

EXPORT = {
    "taken_at": "2026-09-26T02:00:00Z",
    "holds_from": "2026-08-27T02:00:00Z",
    "runs": [
        {"vm": "vm-01", "day": "2026-09-25", "ok": True},
        {"vm": "vm-01", "day": "2026-09-26", "ok": False},
    ],
}
GROUND = {
    "checked": ["every backup job in the nightly export"],
    "cannot_cover": [{"what": "PPDM jobs", "why": "not collected on this install"}],
}
QUERIED = {"from": "2026-09-25T00:00:00Z", "to": "2026-09-26T10:00:00Z"}


def backup_runs(args: dict[str, Any], ctx: ToolContext) -> Any:
    runs = [r for r in EXPORT["runs"] if r["vm"] == args["vm"]]  # type: ignore[index]
    period = {"queried": QUERIED, "held": {"from": EXPORT["holds_from"], "to": EXPORT["taken_at"]}}
    if not runs:
        return absent(what=f"backup runs for {args['vm']}", period=period, **GROUND)
    if args.get("summary"):
        ok = sum(r["ok"] for r in runs)
        return coverage(f"{ok} of {len(runs)} runs succeeded", period=period, **GROUND)
    return described_result(
        facts=[{"vm": r["vm"], "day": r["day"], "ok": r["ok"]} for r in runs],
        provenance={"measured_at": EXPORT["taken_at"], "source": "nightly backup export"},
        coverage=GROUND,
        period=period,
    )


def search_logs(args: dict[str, Any], ctx: ToolContext) -> Any:
    return {"service": args["service"], "window": args["window"], "errors": 0}


OPEN: dict[str, str] = {}
CLOSED: list[str] = []


def rerun_backup(args: dict[str, Any], ctx: ToolContext) -> str:
    key = tool_session_key(ctx, "run")
    if key is None:
        raise RuntimeError("rerun_backup holds a connection per run and this call has no run")
    connection = OPEN.setdefault(key, f"scheduler-connection-{len(OPEN) + 1}")
    ctx.on_teardown(lambda: CLOSED.append(OPEN.pop(key)), scope="run")
    return f"re-run of {args['vm']} queued on {connection}"


def saw_a_failure(state: Mapping[str, Any]) -> bool:
    """Offer the re-run tool once a failed backup has been read."""
    return any('"ok":false' in m.get("content", "") for m in state["history"])


TOOLS = [
    define_tool(
        name="backup_runs",
        description="Backup runs for one VM, or a one-line verdict with summary: true.",
        input_schema={
            "type": "object",
            "properties": {"vm": {"type": "string"}, "summary": {"type": "boolean"}},
            "required": ["vm"],
        },
        execute=backup_runs,
    ),
    define_tool(
        name="search_logs",
        description="Error lines for one service over a look-back window.",
        input_schema={
            "type": "object",
            "properties": {
                "service": {"type": "string"},
                "window": {"type": "string", "enum": ["1h", "2h", "24h"]},
            },
            "required": ["service", "window"],
        },
        execute=search_logs,
        ask_or_assume={"window": {"assume": "2h"}},
    ),
]
RERUN = define_tool(
    name="rerun_backup",
    description="Queue a re-run of a VM's backup.",
    input_schema={"type": "object", "properties": {"vm": {"type": "string"}}, "required": ["vm"]},
    execute=rerun_backup,
)


def calls(*items: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"id": i, "name": n, "args": a} for i, n, a in items]}


def build() -> Agent:
    script = [
        calls(("c1", "backup_runs", {"vm": "vm-01"}), ("c2", "backup_runs", {"vm": "vm-02"})),
        calls(("c3", "search_logs", {"service": "backup-agent"})),
        calls(("c4", "rerun_backup", {"vm": "vm-01"})),
        "vm-01's backup failed last night and a re-run is queued; vm-02 has no runs.",
    ]
    return (
        Agent.create(provider=mock(replies=script), model="small-model")
        .tools(TOOLS)
        .tools_from(gated_tools(saw_a_failure, RERUN))
        .limits_travel_with_the_answer()
        .build()
    )


def main() -> str:
    agent = build()
    sessions: list[str] = []
    agent.on("tools.*", lambda e: sessions.append(e.name) if "session" in e.name else None)
    answer = agent.run_sync("Did last night's backups work?")
    print(answer)
    print()
    for row in agent.snapshot().state["coverage_declared"]:
        print(f"{row['tool']} ({row['id']}): {row['source']}, period {row['verdict']}")
    print("session events:", ", ".join(sessions), "| closed:", ", ".join(CLOSED))
    replayed = replay(agent.snapshot())  # no model, no tools: the record alone
    print("replayed the same answer:", replayed.state["final_answer"] == answer)
    return answer


if __name__ == "__main__":
    main()
