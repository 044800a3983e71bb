"""Examples are tests: each runs as a script, and the CLI demo runs end to end."""

from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

from trackway import SqliteStore, served_at
from trackway.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_loan_example_decides_and_explains(capsys):
    runpy.run_path(str(ROOT / "examples" / "loan.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "decision: manual review" in out and "chose 'review' (default)" in out


def test_loan_example_rejects_high_risk():
    loan = runpy.run_path(str(ROOT / "examples" / "loan.py"))
    result = loan["run"]({"name": "Bo", "amount": 90_000, "income": 60_000})
    assert result.state["decision"] == "rejected"
    route = next(c for c in result.snapshot.history() if c.stage_id == "route")
    assert route.detail["decision"]["rules"][0]["matched"] is True


def test_cli_demo_runs_on_the_sqlite_store_then_lists_and_shows_the_run(tmp_path, capsys):
    db = tmp_path / "runs.db"
    assert main(["demo", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "FlowChart: Loan decision (demo)" in out and "Final decision: approved" in out
    assert "chose Approve because rule 'Good credit, affordable' matched" in out
    assert "Why 'decision'?" in out and "← control: 'approve' chosen by Route" in out
    assert (tmp_path / "recording.jsonl").exists()
    assert "An agent is a flowchart too" in out and "hash matches the receipt: True" in out
    store = SqliteStore(db)
    (info,) = [r for r in store.list_runs() if r.chart_id == "loan-decision"]  # and the agent's run
    snap = store.load(info.run_id)
    store.close()
    assert snap.status == "done" and snap.state["decision"] == "approved"
    assert main(["runs", "--db", str(db)]) == 0
    assert info.run_id in capsys.readouterr().out
    assert main(["show", info.run_id, "--db", str(db)]) == 0
    shown = capsys.readouterr().out
    assert "chose 'approve'" in shown and f"{len(snap)} commits" in shown
    assert "Stage 5: Route — read fraud_flags = []" in shown  # the narrative, from the log
    assert main(["show", "run-nope", "--db", str(db)]) == 1
    assert "no run 'run-nope'" in capsys.readouterr().err


def test_cli_is_installed_as_a_command(tmp_path):
    exe = Path(sys.executable).with_name("trackway")
    db = tmp_path / "runs.db"
    proc = subprocess.run(
        [str(exe), "demo", "--db", str(db)], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert "Store:" in proc.stdout and "Recordings:" in proc.stdout and db.exists()


def test_cli_replay_rebuilds_a_request_and_checks_its_receipt(tmp_path, capsys):
    db = tmp_path / "runs.db"
    assert main(["demo", "--db", str(db)]) == 0
    capsys.readouterr()
    recording = tmp_path / "agent-recording.jsonl"
    assert main(["replay", str(recording), "--call", "2"]) == 0
    out = capsys.readouterr().out
    assert '"role": "tool"' in out and "->  match" in out
    assert main(["replay", str(recording), "--call", "9"]) == 2  # a usage error
    assert "the recording has 2 model calls" in capsys.readouterr().err
    assert main(["replay", str(tmp_path / "missing.json")]) == 1
    assert main(["replay", str(recording), "--wire"]) == 1  # the demo's mock has no wire
    assert "went to provider 'mock', which has no HTTP wire" in capsys.readouterr().err


def test_cli_replay_wire_prints_the_body_and_a_mismatch_exits_3(tmp_path, capsys):
    import httpx2
    import orjson

    from trackway.agent import Agent, openai, save_recording, served_at

    def answer(request: httpx2.Request) -> httpx2.Response:
        body = {"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}]}
        return httpx2.Response(200, json=body)

    provider = openai(
        "m",
        base_url="http://user:pw@127.0.0.1:9/v1",
        api_key="secret-key-123",
        transport=httpx2.MockTransport(answer),
    )
    agent = Agent.create(provider=provider, stream=False, seed=5).build()
    agent.run_sync("hello")
    recording = save_recording(agent, tmp_path / "rec.json")
    assert main(["replay", str(recording), "--wire"]) == 0
    out = capsys.readouterr().out
    head, body = out.splitlines()[:2]
    assert head == "POST http://127.0.0.1:9/v1/chat/completions  (stream: False)"
    assert orjson.loads(body) == provider.body(served_at(agent, 1))
    assert "secret-key-123" not in out and "pw@" not in out
    # a receipt that does not match what the log rebuilds: exit 3
    text = recording.read_bytes().replace(b'"hello"', b'"HELLO"')
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_bytes(text)
    assert main(["replay", str(tampered)]) == 3
    assert "MISMATCH" in capsys.readouterr().out


def test_backup_desk_answer_carries_the_declared_limits(capsys):
    desk = runpy.run_path(str(ROOT / "examples" / "backup_desk.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert out.startswith("vm-01's backup failed last night and a re-run is queued")
    assert "Cannot cover:\n- PPDM jobs — not collected on this install" in out
    assert 'Assumed (a tool\'s rule, not your words):\n- search_logs: window = "2h"' in out
    assert "backup_runs (c2): absent, period partly-held" in out
    assert "closed: scheduler-connection-1" in out and "replayed the same answer: True" in out
    assert desk["OPEN"] == {}  # the run's session was torn down at run end


def test_long_investigation_stays_in_its_window_and_budget(capsys):
    runpy.run_path(str(ROOT / "examples" / "long_investigation.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert out.startswith("The disk filled on node-4 at 02:13 (shard 17).")
    sizes = [
        int(part.split()[1])
        for part in out.split("served bytes by call: ")[1].splitlines()[0].split(", ")
    ]
    assert abs(sizes[-1] - sizes[-2]) < 100  # the request stopped growing
    # what it grew by on the way: the turn the model declared a fact, held in the window
    assert max(sizes[1:]) - min(sizes[1:]) < 400
    assert "facts: ['s17']" in out and "budget $0.05 passed at call 30" in out
    assert "every request rebuilds from the record: True" in out


def test_mcp_desk_serves_and_uses_tools_over_mcp(capsys):
    runpy.run_path(str(ROOT / "examples" / "mcp_desk.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert 'credit_check: {"decision":"approve"}' in out
    assert 'stock: {"code":"X-1","units":12}' in out
    assert "translator was asked: Approved; 12 units left." in out
    assert "inner runs on the record: [('c3', 'agent')]" in out


def test_compositions_example_runs_three_compositions_on_one_record(capsys):
    runpy.run_path(str(ROOT / "examples" / "compositions.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "article: The sky looks blue" in out and "['research', 'write']" in out
    assert "debate: Spaces win" in out and "['pro', 'con', 'judge']" in out
    assert "reflexion: Old pond / a frog jumps in" in out and "['body', 'body']" in out
    assert out.count("rebuilt exactly: True; replayed: True") == 3
    assert out.count("replayed from the record alone: True") == 3


def test_support_skills_moves_on_rails_narrows_the_tools_and_replays(capsys):
    support = runpy.run_path(str(ROOT / "examples" / "support_skills.py"))
    assert support["main"]() == 0
    out = capsys.readouterr().out
    first, second = out.split("\n\nTurn 2: ")
    assert "entry: refunds (scorer classifier:entry: ranked refunds 0.92" in first
    moved = "skill_proposals: call 1 entry -> refunds accepted; call 3 route -> account accepted"
    assert moved in first
    assert "call 2 [refunds] " in first and "-> issue_refund: denied" in first
    assert "call 3 [account +denial-playbook] " in first  # the lease: that call only
    assert "call 4 [account] " in first
    assert "entry: refunds (scorer classifier-unavailable: cold start)" in second
    assert "call 3 tool-proposal -> shipping accepted" in second
    assert "read_skill refused: Skill 'shipping' cannot be taken up by reading it" in second
    assert out.count("served 3 of 5: ") == 8
    assert out.count("law: 4 of 4 requests rebuilt from the record match their receipts") == 2
    assert out.count("replayed from the snapshot alone: True") == 2

    one, two = support["converse"]()
    assert one.answer.startswith("I'm sorry, Ana: order A1 was delivered 45 days ago")
    path = [(p["k"], p["source"], p["target"]) for p in one.snapshot.state["skill_proposals"]]
    assert path == [(1, "entry", "refunds"), (3, "route", "account")]
    path = [(p["k"], p["source"], p["target"]) for p in two.snapshot.state["skill_proposals"]]
    assert path == [(1, "entry", "refunds"), (3, "tool-proposal", "shipping")]
    assert [t.snapshot.state["skill_cursor"]["skill"] for t in (one, two)] == [
        "account",
        "shipping",
    ]
    doors = ["read_skill", "list_skills", "skip_step", "present"]
    for turn in (one, two):
        picks = [r for r in turn.snapshot.state["tool_choices"] if r["kind"] == "pick"]
        assert [r["k"] for r in picks] == [1, 2, 3, 4]
        for k, row in enumerate(picks, start=1):
            top = {r["name"] for r in row["ranked"][:3]}
            assert row["narrowed"] is True and "skip" not in row
            assert set(row["served"]) == top | set(doors)
            sent = [t.name for t in served_at(turn.snapshot, k).tools or ()]
            assert sent == row["served"]  # the row is what the model was sent
        assert all(turn.exact) and len(turn.exact) == 4 and turn.replayed
    # the playbook was pushed into exactly the call after the denial
    playbook = support["PLAYBOOK"].prompt
    pushed = [playbook in (served_at(one.snapshot, k).system or "") for k in range(1, 5)]
    assert pushed == [False, False, True, False]


def test_serve_weather_example_serves_the_agent_and_has_a_conversation(tmp_path, capsys):
    served = runpy.run_path(str(ROOT / "examples" / "serve_weather.py"))
    assert served["main"](["--once", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Open http://127.0.0.1:" in out
    assert "Tools run: 4; stream ended: run.end" in out
    assert "Answer: Paris: sunny, 71.6°F; Oslo: light rain, 48.2°F." in out


def test_patterns_example_runs_a_swarm_a_map_reduce_and_a_tree_on_one_record_each(capsys):
    runpy.run_path(str(ROOT / "examples" / "patterns.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "desk: Refunded the second charge" in out
    assert "composition.handoff {'from': 'triage', 'to': 'billing', 'hop': 1}" in out
    assert "digest: tides: 4 words; winds: 5 words; clouds: 2 words" in out
    assert "['map_0', 'map_1', 'map_2']" in out
    assert "route: cycle" in out and "'candidates': 6, 'kept': 2, 'best': 2" in out
    assert out.count("rebuilt exactly: True; replayed from the record alone: True") == 3
