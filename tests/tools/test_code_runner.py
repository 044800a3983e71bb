"""The code runner's port and local runner, with real subprocesses: one interpreter per
session (state survives, a killed one is replaced and says so), limits as data, capped
output, an environment built from nothing, staged inputs as inert file names, and the tool
built over them (called by hand, outside an agent)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from trackway.tools import (
    STAGED_INPUTS_ENV,
    CodeInput,
    CodeInputsNotStagedError,
    CodeRunFailedError,
    CodeRunResult,
    LocalCodeSession,
    ToolContext,
    ToolDefinitionError,
    can_stage_code_inputs,
    code_runner_tool,
    local_code_runner,
    tool_sessions_of,
)
from trackway.tools.artifacts._meta import ArtifactMeta, ArtifactScope
from trackway.tools.runner._port import inert_segment
from trackway.tools.runner._streams import Capture

FAST = {"time_limit": 3.0, "memory_limit": 256 * 2**20, "output_limit": 200}


@pytest.fixture
def session() -> Iterator[LocalCodeSession]:
    s = local_code_runner(**FAST).open_session()
    yield s
    s.stop()


def test_state_survives_between_runs_of_one_session(session: LocalCodeSession) -> None:
    first = session.run("x = 20\nprint('set')")
    second = session.run("print(x + 22)")
    assert (first.status, first.stdout) == ("ok", "set\n")
    assert (second.status, second.stdout, second.state_lost) == ("ok", "42\n", False)
    assert session.interpreters == 1


def test_code_that_raises_is_a_result_with_its_traceback(session: LocalCodeSession) -> None:
    out = session.run("def f():\n    raise ValueError('no rows')\nf()")
    assert (out.status, out.error, out.exit_code, out.limit) == ("error", "ValueError", 1, None)
    assert 'File "<code>", line 2, in f' in out.stderr and "ValueError: no rows" in out.stderr
    assert "_main" not in out.stderr  # the driver's own frames are not shown
    assert session.run("print('still here')").stdout == "still here\n"


def test_sys_exit_reports_its_status_and_keeps_the_interpreter(session: LocalCodeSession) -> None:
    session.run("y = 1")
    out = session.run("import sys; sys.exit(3)")
    assert (out.status, out.exit_code) == ("exit", 3)
    assert session.run("print(y)").stdout == "1\n"


def test_a_timeout_kills_the_interpreter_and_the_next_run_says_state_was_lost() -> None:
    s = local_code_runner(**{**FAST, "time_limit": 0.5}).open_session()
    try:
        s.run("x = 1")
        out = s.run("print('started', flush=True)\nwhile True: pass")
        assert (out.status, out.limit, out.state_lost) == ("killed", "time", True)
        assert out.stdout == "started\n" and "time limit of 0.5 s" in out.detail
        after = s.run("print('x' in globals())")
        assert (after.stdout, after.state_lost) == ("False\n", True)
        assert s.interpreters == 2
    finally:
        s.stop()


def test_output_past_the_limit_is_counted_not_kept(session: LocalCodeSession) -> None:
    out = session.run("import sys\nsys.stdout.write('a' * 5000)\nsys.stderr.write('b' * 300)")
    assert out.status == "ok"
    assert out.stdout == "a" * 100 + "\n[… 4800 of 5000 bytes cut …]\n" + "a" * 100
    assert out.stderr == "b" * 100 + "\n[… 100 of 300 bytes cut …]\n" + "b" * 100
    assert (out.stdout_bytes, out.stderr_bytes) == (5000, 300)
    assert out.stdout_cut and out.stderr_cut


def test_a_cut_never_splits_a_character() -> None:
    s = local_code_runner(**{**FAST, "output_limit": 9}).open_session()
    try:
        out = s.run("print('é' * 50, end='')")  # 100 bytes, cut at odd offsets
        assert "\ufffd" not in out.stdout
        assert out.stdout == "éé\n[… 92 of 100 bytes cut …]\néé"
    finally:
        s.stop()


def test_a_cut_stream_keeps_its_end(session: LocalCodeSession) -> None:
    out = session.run("for i in range(500):\n    print(i)\nraise KeyError('last words')")
    assert out.stdout.startswith("0\n1\n") and out.stdout.endswith("498\n499\n")
    assert out.stderr.endswith("KeyError: 'last words'\n") and out.stdout_cut
    small = session.run("print('short')")
    assert (small.stdout, small.stdout_cut) == ("short\n", False)


def test_an_output_flood_past_the_drain_limit_is_killed() -> None:
    s = local_code_runner(**FAST, drain_limit=2**20).open_session()
    try:
        out = s.run("import sys\nwhile True: sys.stdout.write('z' * 65536)")
        assert (out.status, out.limit) == ("killed", "output")
        assert out.stdout_bytes > 2**20 and out.stdout_cut
        assert f"bytes cut …]\n{'z' * 100}" in out.stdout and len(out.stdout) < 300
    finally:
        s.stop()


def test_the_environment_is_built_from_nothing(
    session: LocalCodeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRACKWAY_TEST_SECRET", "hunter2")
    out = session.run("import os, json; print(json.dumps(dict(os.environ)))")
    env = json.loads(out.stdout)
    assert sorted(env) == ["HOME", "LANG", "LC_ALL", "TMPDIR", STAGED_INPUTS_ENV]
    assert env["HOME"] == env["TMPDIR"] == session.workdir
    assert "hunter2" not in out.stdout


def test_the_limits_are_set_before_the_code_runs() -> None:
    runner = local_code_runner(**FAST, file_size_limit=2**20, max_processes=7, cpu_limit=30)
    s = runner.open_session()
    try:
        code = (
            "import resource as r\n"
            "print([r.getrlimit(getattr(r, n)) for n in "
            "('RLIMIT_AS', 'RLIMIT_FSIZE', 'RLIMIT_CPU', 'RLIMIT_CORE')])\n"
            "print(r.getrlimit(r.RLIMIT_NPROC)[0] >= 7)"
        )
        out = s.run(code)
        mem = 256 * 2**20
        assert out.stdout == f"[({mem}, {mem}), (1048576, 1048576), (30, 30), (0, 0)]\nTrue\n"
    finally:
        s.stop()


def test_the_work_dir_is_private_fresh_and_removed_by_stop() -> None:
    runner = local_code_runner(**FAST)
    a, b = runner.open_session(), runner.open_session()
    try:
        assert a.workdir != b.workdir and os.stat(a.workdir).st_mode & 0o777 == 0o700
        out = a.run("import os\nopen('made.txt', 'w').write('hi')\nprint(os.getcwd())")
        assert out.stdout.strip() == a.workdir and out.files == ("made.txt",)
        assert b.run("import os; print(os.listdir('.'))").stdout == "[]\n"
    finally:
        a.stop()
        b.stop()
    assert not os.path.exists(a.workdir)
    a.stop()  # idempotent


def test_a_stopped_session_refuses_to_run(session: LocalCodeSession) -> None:
    session.stop()
    with pytest.raises(Exception, match="was stopped; open a new one"):
        session.run("1")


def test_staged_inputs_land_as_inert_files_listed_in_the_env(session: LocalCodeSession) -> None:
    assert can_stage_code_inputs(session)
    staged = session.stage_inputs(
        [
            CodeInput("rows", "rows.json", b"[1, 2, 3]", "application/json"),
            CodeInput("evil", "../../escape", b"x", "text/plain"),
        ]
    )
    assert [(s.name, s.bytes) for s in staged] == [("rows", 9), ("evil", 1)]
    folder = os.path.join(session.workdir, "inputs")
    assert {os.path.dirname(s.path) for s in staged} == {folder}
    assert os.path.basename(staged[1].path) == "%2E%2E%2F%2E%2E%2Fescape"
    out = session.run(
        "import json, os\nm = json.loads(os.environ['TRACKWAY_STAGED_INPUTS'])\n"
        "print(sorted(m), sum(json.load(open(m['rows']))))"
    )
    assert out.stdout == "['evil', 'rows'] 6\n"


def test_staging_never_follows_a_link_the_code_planted(
    session: LocalCodeSession, tmp_path: Path
) -> None:
    session.stage_inputs([CodeInput("rows", "rows.json", b"[1]", "application/json")])
    session.run(f"import os\nos.rename('inputs', 'moved')\nos.symlink({str(tmp_path)!r}, 'inputs')")
    with pytest.raises(OSError):
        session.stage_inputs([CodeInput("rows", "rows.json", b"[2]", "application/json")])
    session.run(f"import os\nos.remove('inputs')\nos.symlink({str(tmp_path)!r} + '/f', 'inputs')")
    with pytest.raises(OSError):
        session.stage_inputs([CodeInput("rows", "rows.json", b"[2]", "application/json")])
    assert list(tmp_path.iterdir()) == []  # nothing was written outside the work dir


@pytest.mark.parametrize(
    ("name", "want"),
    [("data", "data"), ("..", "%2E%2E"), ("a/b", "a%2Fb"), ("", "%00"), ("é", "%C3%A9")],
)
def test_inert_segment(name: str, want: str) -> None:
    assert inert_segment(name) == want
    assert "/" not in inert_segment(name) and "." not in inert_segment(name)


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"time_limit": 0}, "time_limit=0"),
        ({"memory_limit": -1}, "memory_limit=-1"),
        ({"output_limit": 0}, "output_limit=0"),
        ({"output_limit": 100, "drain_limit": 10}, "drain_limit=10 is below"),
    ],
)
def test_bad_runner_settings_are_refused(kwargs: dict[str, Any], says: str) -> None:
    with pytest.raises(ToolDefinitionError, match=says):
        local_code_runner(**kwargs)


# -- the tool, called by hand ---------------------------------------------------------------


def ctx(**kw: Any) -> ToolContext:
    base: dict[str, Any] = {"call_id": "c1", "tool_name": "run_code", "run_id": "r", "iteration": 1}
    return ToolContext(**{**base, **kw})


def meta(media_type: str, ref: str = "art_1") -> ArtifactMeta:
    return ArtifactMeta(
        ref, "dataset/rows", "0" * 64, 10, media_type, "2026-01-01T00:00:00Z", ArtifactScope()
    )


def call(tool: Any, args: dict[str, Any], c: ToolContext) -> str:
    out: str = anyio.run(tool.execute, args, c)
    return out


def test_the_tool_schema_and_description_name_the_wanted_arguments() -> None:
    t = code_runner_tool(runner=local_code_runner(), wants={"dataset": "dataset/rows"})
    assert t.wants == {"dataset": "dataset/rows"} and t.is_async
    assert t.input_schema["required"] == ["code"]
    assert set(t.input_schema["properties"]) == {"code", "dataset"}
    assert t.input_schema["additionalProperties"] is False
    assert 'json.loads(os.environ["TRACKWAY_STAGED_INPUTS"])["dataset"]' in t.description
    plain = code_runner_tool(runner=local_code_runner())
    assert plain.wants is None and set(plain.input_schema["properties"]) == {"code"}
    assert "TRACKWAY_STAGED_INPUTS" not in plain.description


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"scope": "forever"}, "scope is one of"),
        ({"wants": {"code": "k"}}, "other than 'code'"),
        ({"wants": {"a b": "k"}}, "must be an identifier"),
        ({"wants": {"d": ""}}, "names an artifact kind"),
    ],
)
def test_bad_tool_settings_are_refused(kwargs: dict[str, Any], says: str) -> None:
    with pytest.raises(ToolDefinitionError, match=says):
        code_runner_tool(runner=local_code_runner(), **kwargs)


def test_wanted_data_is_staged_by_media_type_and_read_by_the_code() -> None:
    t = code_runner_tool(
        runner=local_code_runner(**FAST),
        wants={"rows": "dataset/rows", "table": "dataset/csv", "blob": "raw"},
    )
    code = (
        "import json, os\nm = json.loads(os.environ['TRACKWAY_STAGED_INPUTS'])\n"
        "print({k: os.path.basename(v) for k, v in sorted(m.items())})\n"
        "print(json.load(open(m['rows']))['n'], open(m['table']).read().splitlines()[1],"
        " open(m['blob'], 'rb').read())"
    )
    args = {"code": code, "rows": {"n": 3}, "table": "a,b\n1,2\n", "blob": b"\x00\x01"}
    wanted = {
        "rows": meta("application/json"),
        "table": meta("text/csv"),
        "blob": meta("application/octet-stream"),
    }
    out = call(t, args, ctx(wanted=wanted))
    assert "{'blob': 'blob.bin', 'rows': 'rows.json', 'table': 'table.csv'}" in out
    assert "3 1,2 b'\\x00\\x01'" in out and out.startswith("exit status: 0 (ok)")


def test_a_wanted_argument_without_a_redeemed_ticket_is_refused() -> None:
    t = code_runner_tool(runner=local_code_runner(**FAST), wants={"rows": "dataset/rows"})
    with pytest.raises(CodeInputsNotStagedError, match="holds no redeemed artifact"):
        call(t, {"code": "1", "rows": "art_x"}, ctx())


class _NoStaging:
    """A runner whose sessions cannot write into themselves (no stage_inputs)."""

    name = "remote_eval"

    def __init__(self) -> None:
        self.ran: list[str] = []

    def open_session(self) -> Any:
        runner = self

        class Session:
            def run(self, code: str, *, timeout: float | None = None) -> CodeRunResult:
                runner.ran.append(code)
                return CodeRunResult("ok", "", "", 0, 0, 0.0)

            def stop(self) -> None:
                pass

        return Session()


def test_a_runner_that_cannot_stage_refuses_by_name_and_never_runs_the_code() -> None:
    runner = _NoStaging()
    assert not can_stage_code_inputs(runner.open_session())
    t = code_runner_tool(runner=runner, wants={"rows": "dataset/rows"})
    with pytest.raises(CodeInputsNotStagedError, match="runner 'remote_eval' cannot stage"):
        call(t, {"code": "print(1)", "rows": [1]}, ctx(wanted={"rows": meta("application/json")}))
    assert runner.ran == []
    assert call(t, {"code": "print(1)"}, ctx()).startswith("exit status: 0")  # no ticket: runs
    assert runner.ran == ["print(1)"]


def test_the_tool_reports_cut_output_and_fails_on_a_limit() -> None:
    t = code_runner_tool(runner=local_code_runner(**{**FAST, "time_limit": 0.5}))
    out = call(t, {"code": "print('q' * 1000)"}, ctx())
    assert "q" * 100 + "\n[… 801 of 1001 bytes cut …]\n" + "q" * 99 in out
    with pytest.raises(CodeRunFailedError, match=r"time limit of 0\.5 s.*state .* is lost"):
        call(t, {"code": "while True: pass"}, ctx())


def test_outside_an_agent_each_call_gets_its_own_session_and_holds_none() -> None:
    t = code_runner_tool(runner=local_code_runner(**FAST))
    call(t, {"code": "x = 1"}, ctx())
    assert "NameError" in call(t, {"code": "print(x)"}, ctx())
    assert tool_sessions_of(t) == {}


def test_tool_sessions_of_refuses_a_tool_the_runner_did_not_make() -> None:
    from trackway.tools import define_tool

    other = define_tool(
        name="t", description="d", input_schema={"type": "object"}, execute=lambda a, c: ""
    )
    with pytest.raises(ToolDefinitionError, match="not made by code_runner_tool"):
        tool_sessions_of(other)


@given(
    chunks=st.lists(st.text(max_size=40).map(lambda t: t.encode("utf-8")), max_size=12),
    limit=st.integers(1, 60),
)
def test_a_capture_keeps_a_prefix_and_a_suffix_and_counts_the_rest(
    chunks: list[bytes], limit: int
) -> None:
    whole = b"".join(chunks)
    capture = Capture(limit)
    for chunk in chunks:
        capture.add(chunk)
    assert capture.total == len(whole) and len(capture.head) + len(capture.tail) <= limit
    text = capture.text()
    if len(whole) <= limit:
        assert capture.cut == 0 and text == whole.decode("utf-8")
        return
    head, rest = text.split("\n[… ", 1)
    count, tail = rest.split(" bytes cut …]\n", 1)
    cut = int(count.split(" of ")[0])
    assert whole.startswith(head.encode()) and whole.endswith(tail.encode())
    assert len(head.encode()) + cut + len(tail.encode()) == len(whole)
    assert "\ufffd" not in head + tail


def test_an_interpreter_that_cannot_start_is_a_result_saying_so(tmp_path: Path) -> None:
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\necho 'no such module: encodings' >&2\nexit 3\n")
    broken.chmod(0o755)
    s = local_code_runner(**FAST, python=str(broken)).open_session()
    try:
        out = s.run("print(1)")
        assert (out.status, out.limit, out.state_lost) == ("killed", "crash", True)
        assert out.detail == "the interpreter did not start (status 3)"
        assert out.stderr == "no such module: encodings\n"
    finally:
        s.stop()


def test_a_session_nobody_stopped_leaves_no_interpreter_when_collected() -> None:
    import gc

    s = local_code_runner(**FAST).open_session()
    pid = int(s.run("import os; print(os.getpid())").stdout)
    workdir = s.workdir
    del s
    gc.collect()
    assert not os.path.exists(workdir)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed and reaped: not even a zombie left
