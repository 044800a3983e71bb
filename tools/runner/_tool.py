"""``code_runner_tool``: a tool that runs the model's code in a :class:`CodeRunner`'s
session, kept per conversation (or run, or call) through tool sessions, with redeemed
artifacts staged as files."""

from __future__ import annotations

import dataclasses
import functools
import json
import threading
from collections.abc import Mapping
from typing import Any

import anyio

from trackway.engine.core._keywords import checked_keywords
from trackway.tools.define._define import Tool, ToolContext, define_tool
from trackway.tools.define._errors import ToolDefinitionError
from trackway.tools.define._sessions import SESSION_SCOPES, key_hash, tool_session_key

from ._errors import CodeInputsNotStagedError, CodeRunFailedError
from ._port import (
    STAGED_INPUTS_ENV,
    CodeInput,
    CodeRunner,
    CodeRunResult,
    CodeSession,
    can_stage_code_inputs,
    inert_segment,
)

__all__ = ["code_runner_tool", "tool_sessions_of"]

_SESSIONS_ATTR = "__trackway_code_sessions__"


class _Sessions:
    """The live sessions of one code tool, by tool-session key, and the keys whose session
    was closed (an idle sweep, an eviction) while the caller may come back: the next call
    on such a key starts afresh and says state was lost."""

    REMEMBERED = 1024

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.live: dict[str, CodeSession] = {}
        self.closed: dict[str, None] = {}  # insertion-ordered, the oldest forgotten first

    def get(self, key: str, runner: CodeRunner) -> tuple[CodeSession, bool]:
        """The session of ``key`` (opened here when there is none), and whether an earlier
        one of the same key was closed."""
        with self.lock:
            session = self.live.get(key)
            if session is not None:
                return session, False
            session = self.live[key] = runner.open_session()
            reopened = key in self.closed
            self.closed.pop(key, None)
            return session, reopened

    def close(self, key: str) -> None:
        with self.lock:
            session = self.live.pop(key, None)
            if session is not None:
                self.closed[key] = None
                while len(self.closed) > self.REMEMBERED:
                    del self.closed[next(iter(self.closed))]
        if session is not None:
            session.stop()


def tool_sessions_of(tool: Tool) -> dict[str, CodeSession]:
    """The live sessions of a code tool made by :func:`code_runner_tool`, by the hash of
    their key (a key names a tenant, a principal and a session id, so it is never shown):
    for a test or an inspector."""
    held = getattr(tool.execute, _SESSIONS_ATTR, None)
    if not isinstance(held, _Sessions):
        raise ToolDefinitionError(
            f"tool_sessions_of({tool.name!r}): the tool was not made by code_runner_tool, "
            "so it holds no code sessions"
        )
    with held.lock:
        return {key_hash(key): session for key, session in held.live.items()}


def extension_of(media_type: str) -> str:
    """The file extension a staged input of ``media_type`` gets."""
    kind = media_type.split(";", 1)[0].strip().lower()
    if kind == "application/json" or kind.endswith("+json"):
        return ".json"
    if kind == "text/csv":
        return ".csv"
    if kind.startswith("text/"):
        return ".txt"
    return ".bin"


def _bytes_of(value: Any, media_type: str) -> bytes:
    """A redeemed argument back to the bytes the artifact holds (the agreed decoding:
    JSON value, str or bytes by media type)."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if extension_of(media_type) == ".json":
        return json.dumps(value, ensure_ascii=False).encode("utf-8")
    if isinstance(value, str):
        return value.encode("utf-8")
    return json.dumps(value, ensure_ascii=False).encode("utf-8")


def code_inputs(
    wants: Mapping[str, str], args: Mapping[str, Any], ctx: ToolContext
) -> list[CodeInput]:
    """The inputs a call brings: one per ``wants`` argument the model passed, from the data
    the agent redeemed into ``args`` and the ticket in ``ctx.wanted``."""
    out: list[CodeInput] = []
    wanted = ctx.wanted or {}
    for name in wants:
        if args.get(name) is None:
            continue
        meta = wanted.get(name)
        if meta is None:
            raise CodeInputsNotStagedError(
                f"{ctx.tool_name}: argument {name!r} holds no redeemed artifact; the agent "
                "redeems wants tickets before the tool runs, so give it an artifact store "
                "(Agent.create(...).artifacts(...))"
            )
        data = _bytes_of(args[name], meta.media_type)
        file_name = inert_segment(name) + extension_of(meta.media_type)
        out.append(CodeInput(name, file_name, data, meta.media_type))
    return out


def describe(result: CodeRunResult) -> str:
    """What the model reads of a finished run: the status, stdout and stderr (a cut stream
    says how much of its middle was left out), files written and whether earlier state was
    lost (not the duration: it is in the result, and would make equal runs differ)."""
    lines: list[str] = []
    if result.state_lost:
        lines.append(
            "note: a fresh interpreter ran this code; variables and imports of earlier calls "
            "are gone"
        )
    if result.status == "ok":
        lines.append("exit status: 0 (ok)")
    elif result.status == "exit":
        lines.append(f"exit status: {result.exit_code} (sys.exit)")
    else:
        lines.append(f"exit status: 1 (the code raised {result.error})")
    if result.limit == "memory":
        lines.append(f"limit hit: {result.detail}")
    for label, text, total in (
        ("stdout", result.stdout, result.stdout_bytes),
        ("stderr", result.stderr, result.stderr_bytes),
    ):
        if not total:
            lines.append(f"{label}: (empty)")
            continue
        lines.append(f"{label}:")
        lines.append(text.rstrip("\n"))
    if result.files:
        lines.append("files written: " + ", ".join(result.files))
    return "\n".join(lines)


def failure(result: CodeRunResult) -> str:
    """The message of the tool failure for a run a limit ended."""
    said = [
        f"{result.detail}; the interpreter's state (variables, imports) is lost and the "
        "next call starts a fresh one"
    ]
    for label, text, total in (
        ("stdout", result.stdout, result.stdout_bytes),
        ("stderr", result.stderr, result.stderr_bytes),
    ):
        if total:
            said.append(f"{label} before it ended ({total} bytes): {text.rstrip()}")
    return ". ".join(said)


_KEPT = {
    "session": "one interpreter kept for this conversation, so variables and imports "
    "survive between calls (unless a limit ends it: the result says so)",
    "run": "one interpreter kept while this request lasts, so variables and imports "
    "survive between its calls (unless a limit ends it: the result says so)",
    "call": "a fresh interpreter each call: nothing survives between calls",
}


def _description(
    language: str, wants: Mapping[str, str] | None, runner: CodeRunner, scope: str
) -> str:
    name = getattr(runner, "name", type(runner).__name__)
    text = (
        f"Run {language} code and read what it prints. The code runs in {_KEPT[scope]}. "
        "The working directory is private and empty at first; time, memory and output are "
        f"limited ({name})."
    )
    if not wants:
        return text
    names = ", ".join(f"{name} (an art_… ticket of kind {kind!r})" for name, kind in wants.items())
    first = next(iter(wants))
    return (
        f"{text} Pass artifact tickets as {names}: each is staged as a file before the code "
        f"runs, and {STAGED_INPUTS_ENV} maps the argument name to its path, e.g. "
        f'path = json.loads(os.environ["{STAGED_INPUTS_ENV}"])["{first}"]'
    )


@checked_keywords
def code_runner_tool(
    *,
    runner: CodeRunner,
    name: str = "run_code",
    language: str = "python",
    wants: Mapping[str, str] | None = None,
    scope: str = "run",
    timeout: float | None = None,
    description: str | None = None,
) -> Tool:
    """A tool that runs the model's code in ``runner``'s sessions.

    ``scope`` keeps one session (one interpreter) per ``"run"`` (the default: every call of
    one run shares variables), per ``"session"`` (one conversation: needs ``session_id=``
    on each run, the interpreter lives until ``agent.close_tool_sessions(...)``, an idle
    sweep, or eviction) or per ``"call"``. ``wants={"dataset": "dataset/rows"}`` adds a
    string argument per name for an ``art_…`` ticket; the agent redeems it, and the tool
    stages the data as a file listed in ``TRACKWAY_STAGED_INPUTS``. A run a limit ends is a
    tool failure (:class:`CodeRunFailedError`); code that raises is a result the model
    reads (the traceback, exit status 1). ``timeout`` overrides the runner's time limit per
    call; a cancelled run (its ``timeout=``, its caller) interrupts the running code (a
    session's optional ``interrupt()``). The description says what the code can read and
    how long its interpreter lives; ``description=`` replaces it.
    """
    if scope not in SESSION_SCOPES:
        raise ToolDefinitionError(
            f"code_runner_tool(scope={scope!r}): the scope is one of {', '.join(SESSION_SCOPES)}"
        )
    if not callable(getattr(runner, "open_session", None)):
        raise ToolDefinitionError(
            f"code_runner_tool(runner={runner!r}): give a CodeRunner (local_code_runner(), or "
            "your own with open_session())"
        )
    checked = _wants(name, wants)
    properties: dict[str, Any] = {
        "code": {"type": "string", "description": f"The {language} code to run."}
    }
    for arg, kind in checked.items():
        properties[arg] = {
            "type": "string",
            "description": f"An art_… ticket of kind {kind!r}, staged as a file for the code.",
        }
    schema = {
        "type": "object",
        "properties": properties,
        "required": ["code"],
        "additionalProperties": False,
    }
    held = _Sessions()
    runner_name = str(getattr(runner, "name", type(runner).__name__))

    async def execute(args: dict[str, Any], ctx: ToolContext) -> str:
        inputs = code_inputs(checked, args, ctx) if checked else []
        if ctx.on_session is None:  # outside an agent nothing would close it: one call's
            key = None
        else:
            key = tool_session_key(ctx, scope)
            if key is None:
                raise CodeRunFailedError(
                    f"{ctx.tool_name}: a {scope!r}-scoped interpreter needs "
                    + ("a session_id (pass session_id= to run)" if scope == "session" else "a run")
                    + "; the code did not run. Build the tool with scope='call' or pass it"
                )
            ctx.on_teardown(functools.partial(held.close, key), scope=scope, key=key)
        box: dict[str, CodeSession] = {}
        work = functools.partial(
            _call, held, key, runner, runner_name, args["code"], inputs, timeout, box
        )
        try:  # a cancelled run (its timeout=, its caller) kills the running code at once
            return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            interrupt = getattr(box.get("session"), "interrupt", None)
            if callable(interrupt):
                interrupt()
            raise

    setattr(execute, _SESSIONS_ATTR, held)
    tool = define_tool(
        name=name,
        description=description or _description(language, checked, runner, scope),
        input_schema=schema,
        execute=execute,
    )
    return dataclasses.replace(tool, wants=checked or None)


def _call(
    held: _Sessions,
    key: str | None,
    runner: CodeRunner,
    runner_name: str,
    code: str,
    inputs: list[CodeInput],
    timeout: float | None,
    box: dict[str, CodeSession],
) -> str:
    session, reopened = held.get(key, runner) if key is not None else (runner.open_session(), False)
    box["session"] = session
    try:
        if inputs:
            stage = getattr(session, "stage_inputs", None)
            if not can_stage_code_inputs(session) or stage is None:
                raise CodeInputsNotStagedError(
                    f"runner {runner_name!r} cannot stage inputs (its sessions have no "
                    f"stage_inputs), so the code was not run: it would look for "
                    f"{', '.join(i.name for i in inputs)} and find nothing. Use a runner that "
                    "stages (local_code_runner()), or call without artifact tickets"
                )
            stage(inputs)
        result = session.run(code, timeout=timeout)
    finally:
        if key is None:
            session.stop()
    if reopened and not result.state_lost:  # closed between calls (idle, evicted)
        result = dataclasses.replace(result, state_lost=True)
    if result.status == "killed" or result.limit == "memory":
        raise CodeRunFailedError(failure(result))
    return describe(result)


def _wants(name: str, wants: Mapping[str, str] | None) -> dict[str, str]:
    if wants is None:
        return {}
    if not isinstance(wants, Mapping):
        raise ToolDefinitionError(
            f"code_runner_tool(wants={wants!r}): give a dict of argument name -> artifact kind"
        )
    out: dict[str, str] = {}
    for arg, kind in wants.items():
        if not isinstance(arg, str) or not arg.isidentifier() or arg == "code":
            raise ToolDefinitionError(
                f"tool {name!r}: wants argument {arg!r} must be an identifier other than 'code'"
            )
        if not isinstance(kind, str) or not kind.strip():
            raise ToolDefinitionError(
                f"tool {name!r}: wants[{arg!r}] names an artifact kind, a non-empty str"
            )
        out[arg] = kind
    return out
