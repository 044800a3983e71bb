"""The code tool in an agent (mock model, real subprocesses): one interpreter per run or per
conversation through tool sessions, closed when its scope ends; hostile code (a fork bomb,
an endless loop, 1 GB of output, memory exhaustion, reading the parent's environment, a
write outside the work dir) ends as a tool failure or a plain result, and the agent's run
and the test process carry on."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from tests.law import assert_law
from trackway.agent import Agent, load_recording, mock, replay
from trackway.engine import RunTimeoutError, thaw
from trackway.tools import code_runner_tool, local_code_runner, tool_sessions_of
from trackway.tools.define._sessions import key_hash

SMALL = {"time_limit": 10.0, "memory_limit": 256 * 2**20, "output_limit": 300}


def code_calls(*codes: str) -> list[dict[str, Any]]:
    return [
        {"tool_calls": [{"id": f"c{i}", "name": "run_code", "args": {"code": code}}]}
        for i, code in enumerate(codes, start=1)
    ]


def agent_with(tool: Any, replies: list[Any]) -> Agent:
    return Agent.create(provider=mock(replies=replies), model="m").tool(tool).build()


def tool_texts(agent: Agent) -> list[str]:
    history = agent.snapshot().state["history"]
    return [m["content"] for m in history if m["role"] == "tool"]


def statuses(agent: Agent) -> list[str]:
    return [row["status"] for row in agent.snapshot().state["tool_results"]]


def test_calls_of_one_run_share_an_interpreter_closed_when_the_run_ends() -> None:
    t = code_runner_tool(runner=local_code_runner(**SMALL))
    agent = agent_with(t, [*code_calls("total = 40", "print(total + 2)"), {"content": "42"}])
    heard: list[tuple[str, Any]] = []
    agent.on("tools.*", lambda e: heard.append((e.name, e.payload)))
    assert agent.run_sync("sum") == "42"
    assert tool_texts(agent)[1].startswith("exit status: 0 (ok)\nstdout:\n42")
    assert [n for n, _ in heard if "session" in n] == [
        "tools.session_started",
        "tools.session_reused",
        "tools.session_closed",
    ]
    assert tool_sessions_of(t) == {}  # the run ended: its interpreter was stopped
    assert_law(agent)


def test_one_interpreter_per_conversation_until_the_host_closes_it() -> None:
    t = code_runner_tool(runner=local_code_runner(**SMALL), scope="session")
    replies = [*code_calls("seen = ['a']"), "one"]
    replies += [*code_calls("seen.append('b'); print(seen)"), "two"]
    agent = agent_with(t, replies)
    who = {"principal": "ana"}
    agent.run_sync("first", session_id="s1", identity=who)
    agent.run_sync("second", session_id="s1", identity=who)
    assert "['a', 'b']" in tool_texts(agent)[-1]
    live = tool_sessions_of(t)
    assert list(live) == [key_hash("t=_/p=ana/s=s1")]  # hashed: no raw identity
    workdir = live[key_hash("t=_/p=ana/s=s1")].workdir  # type: ignore[attr-defined]
    assert agent.close_tool_sessions_sync(session_id="s1") == 1
    assert tool_sessions_of(t) == {} and not os.path.exists(workdir)


def test_a_conversation_whose_interpreter_was_closed_is_told_its_state_is_gone() -> None:
    t = code_runner_tool(runner=local_code_runner(**SMALL), scope="session")
    replies = [*code_calls("seen = 1"), "one", *code_calls("print('seen' in globals())"), "two"]
    agent = agent_with(t, replies)
    agent.run_sync("first", session_id="s1")
    assert agent.close_tool_sessions_sync(session_id="s1") == 1  # or an idle sweep, eviction
    agent.run_sync("second", session_id="s1")
    text = tool_texts(agent)[-1]
    assert text.startswith("note: a fresh interpreter ran this code") and "False" in text
    assert agent.close_tool_sessions_sync(session_id="s1") == 1


def test_a_session_scope_without_a_session_id_fails_the_call_not_the_run() -> None:
    t = code_runner_tool(runner=local_code_runner(**SMALL), scope="session")
    agent = agent_with(t, [*code_calls("print(1)"), {"content": "ok"}])
    assert agent.run_sync("go") == "ok"
    assert "needs a session_id" in tool_texts(agent)[0] and statuses(agent) == ["failure"]


def test_a_killed_interpreter_fails_the_call_and_the_next_call_starts_fresh() -> None:
    t = code_runner_tool(runner=local_code_runner(**{**SMALL, "time_limit": 1.0}))
    codes = ("kept = 1", "while True: pass", "print('kept' in globals())")
    agent = agent_with(t, [*code_calls(*codes), {"content": "done"}])
    assert agent.run_sync("go") == "done"
    texts = tool_texts(agent)
    assert texts[1].startswith("Error: run_code failed: CodeRunFailedError: the code ran past")
    assert "note: a fresh interpreter ran this code" in texts[2] and "False" in texts[2]
    assert statuses(agent) == ["success", "failure", "success"]


# -- hostile code ---------------------------------------------------------------------------


def hostile(code: str, **limits: Any) -> tuple[Agent, str]:
    t = code_runner_tool(runner=local_code_runner(**{**SMALL, **limits}))
    agent = agent_with(t, [*code_calls(code), {"content": "survived"}])
    assert agent.run_sync("go") == "survived"  # the run completes
    return agent, tool_texts(agent)[0]


def _group_members(pgid: int, wait: float = 5.0) -> list[int]:
    """Live (not zombie) processes of process group ``pgid``, once they are gone or after
    ``wait`` seconds (a SIGKILL is delivered at once, but a process takes a moment to die)."""
    end = time.monotonic() + wait
    while (members := _members(pgid)) and time.monotonic() < end:
        time.sleep(0.05)
    return members


def _members(pgid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                out.append(int(entry))
    return out


def test_a_fork_bomb_stalls_at_the_process_limit_and_dies_with_its_group() -> None:
    limits: dict[str, Any] = {"time_limit": 1.0, "max_processes": 12}
    if os.getuid() == 0:  # the kernel does not apply RLIMIT_NPROC to root
        python = shutil.which("python3", path="/usr/bin:/bin")
        if python is None:
            pytest.skip("running as root needs a python3 another user may run, for user=")
        limits |= {"user": 65534, "python": python}
    t = code_runner_tool(runner=local_code_runner(**{**SMALL, **limits}))
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    replies = [*code_calls("import os; print(os.getpgrp())", bomb), {"content": "survived"}]
    agent = agent_with(t, replies)
    assert agent.run_sync("go") == "survived"
    texts = tool_texts(agent)
    pgid = int(texts[0].split("stdout:\n")[1].split("\n")[0])
    assert "time limit of 1 s" in texts[1] and statuses(agent) == ["success", "failure"]
    assert _group_members(pgid) == []  # every forked process was killed with the group


def test_an_endless_loop_is_killed_at_the_time_limit() -> None:
    agent, text = hostile("while True: pass", time_limit=0.5)
    assert "the code ran past the time limit of 0.5 s and was killed" in text
    assert statuses(agent) == ["failure"]


def test_a_gigabyte_of_output_is_drained_to_the_limit_then_killed() -> None:
    code = "import sys\nfor _ in range(1024):\n    sys.stdout.write('x' * 2**20)"
    agent, text = hostile(code, drain_limit=8 * 2**20)
    assert f"wrote more than {8 * 2**20} bytes of output" in text
    assert "stdout before it ended (" in text and "bytes cut …]" in text and len(text) < 2000
    assert statuses(agent) == ["failure"]


def test_memory_exhaustion_is_a_failure_naming_the_limit() -> None:
    code = "hog = []\nwhile True:\n    hog.append(bytearray(16 * 2**20))"
    agent, text = hostile(code)
    assert "the code ran out of memory (limit 256 MiB)" in text
    assert statuses(agent) == ["failure"]


def test_the_parents_environment_is_not_passed_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACKWAY_TEST_SECRET", "hunter2-in-the-parent")
    _, text = hostile("import os; print(os.environ.get('TRACKWAY_TEST_SECRET'), len(os.environ))")
    assert "stdout:\nNone 5" in text and "hunter2" not in text


def test_the_parents_proc_environ_is_closed_to_another_user() -> None:
    """As the same user the code could read ``/proc/<parent>/environ`` (the docs say so);
    run as another user (``user=``) it cannot."""
    python = shutil.which("python3", path="/usr/bin:/bin")
    if os.getuid() != 0 or python is None:
        pytest.skip("needs root (to run the code as another user) and a system python3")
    code = (
        "import os\ntry:\n    open(f'/proc/{os.getppid()}/environ', 'rb').read()\n"
        "except OSError as e:\n    print(type(e).__name__)"
    )
    _, text = hostile(code, user=65534, python=python)
    assert "stdout:\nPermissionError" in text


def test_a_write_outside_the_work_dir_is_not_confined(tmp_path: Path) -> None:
    """The local runner's only file-system limits are its work dir (as cwd and HOME) and
    RLIMIT_FSIZE: a write elsewhere that the user may make succeeds (documented)."""
    target = tmp_path / "outside.txt"
    _, text = hostile(f"open({str(target)!r}, 'w').write('escaped')")
    assert text.startswith("exit status: 0 (ok)") and target.read_text() == "escaped"
    _, big = hostile("open('big.bin', 'wb').write(b'0' * 2**21)", file_size_limit=2**20)
    assert "OSError: [Errno 27] File too large" in big


def test_a_recording_with_code_runs_from_this_version_loads_and_replays() -> None:
    """A recording kept from this version (tests/agent/fixtures/recording-code-runner-v1.jsonl:
    state kept across calls, cut output, a traceback, a loop killed at the time limit, the
    fresh interpreter's note) rebuilds every request and replays with no agent, no runner
    and no subprocess."""
    loaded = load_recording(Path(__file__).parent / "fixtures" / "recording-code-runner-v1.jsonl")
    assert assert_law(loaded) == 7
    state = thaw(loaded.state)
    assert [r["status"] for r in state["tool_results"]] == ["success"] * 4 + ["failure", "success"]
    texts = [m["content"] for m in state["history"] if m["role"] == "tool"]
    assert texts[1] == "exit status: 0 (ok)\nstdout:\n12\nstderr: (empty)"
    assert "[… 138 of 201 bytes cut …]" in texts[2] and texts[3].endswith("ValueError: no rows")
    assert "CodeRunFailedError: the code ran past the time limit of 0.5 s" in texts[4]
    assert texts[5].startswith("note: a fresh interpreter ran this code")
    replayed = replay(loaded)
    assert [c.stage_path for c in replayed.history()] == [c.stage_path for c in loaded.history()]
    assert thaw(replayed.state)["final_answer"] == "The total was 12; the loop was stopped."


def test_a_timed_out_run_kills_the_running_code_and_closes_its_session() -> None:
    t = code_runner_tool(runner=local_code_runner(**{**SMALL, "time_limit": 30.0}))
    replies = [*code_calls("import os; print(os.getpgrp())", "while True: pass"), "never"]
    agent = agent_with(t, replies)
    groups: list[int] = []

    def note_group(event: Any) -> None:  # the interpreter's pid leads its process group
        if event.name == "tools.session_reused":
            for session in tool_sessions_of(t).values():
                groups.append(session._proc.pid)  # type: ignore[attr-defined]

    agent.on("tools.*", note_group)
    started = time.monotonic()
    with pytest.raises(RunTimeoutError):
        agent.run_sync("go", timeout=1.5)
    assert time.monotonic() - started < 10  # not the code's 30 s limit
    assert tool_sessions_of(t) == {}  # the run's session was closed
    assert groups and all(_group_members(pgid) == [] for pgid in groups)
