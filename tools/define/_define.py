"""Tools: a name, a description, a JSON Schema for the arguments, and the code to run."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio

from trackway.engine.core._keywords import checked_keywords
from trackway.tools.artifacts._meta import ArtifactMeta

from ._assume import check_rules, served_schema
from ._errors import ToolDefinitionError
from ._identity import Identity
from ._schema_refs import schema_fault
from ._wants import check_result_kind, checked_wants

__all__ = ["Tool", "ToolContext", "define_tool"]


@dataclass(frozen=True)
class ToolContext:
    """What a running tool may know about its call.

    ``identity`` and ``session_id`` are what the caller passed to ``run`` (``None`` when it
    passed none). ``iteration`` is the agent's loop iteration (1-based). The tool runs under
    the run's anyio cancellation: a run's ``timeout=`` or a cancelled caller cancels an
    ``async`` tool at its next ``await`` (a sync tool runs to its end). ``cancel_scope`` is
    the scope around this one call: an async tool may read its ``deadline`` or ``cancel()``
    it to stop itself, and the model then reads that the call was cancelled.
    """

    call_id: str
    tool_name: str
    run_id: str
    iteration: int
    extras: Mapping[str, Any] = field(default_factory=dict)
    identity: Identity | None = None
    session_id: str | None = None
    cancel_scope: anyio.CancelScope | None = None
    on_progress: Callable[[Any], None] | None = field(default=None, repr=False)
    on_session: Callable[[Callable[[], Any], str, str | None], None] | None = field(
        default=None, repr=False
    )
    on_run: Callable[[dict[str, Any]], None] | None = field(default=None, repr=False)
    tools: Any = field(default=None, repr=False)
    """``await ctx.tools.call(name, args)``: call another tool of the agent through the same
    checks, gates and middleware (``None`` outside an agent's tool call)."""
    on_redact: Callable[[str], None] | None = field(default=None, repr=False)
    redaction: Any = field(default=None, repr=False)
    """The calling run's redaction policy (``None`` without one): hand it to an inner run
    (``Agent.create(redact=ctx.redaction)``) to keep the same names out of its records."""
    credentials: Mapping[str, str] = field(default_factory=dict, repr=False)
    """The credentials this call was given (the tool's ``needs``, consented to): read them
    with :meth:`credential`."""
    wanted: Mapping[str, ArtifactMeta] | None = None
    """The tickets behind this call's ``wants`` arguments, by argument name (their data is
    in ``args``); ``None`` for a tool that wants nothing."""

    def redact(self, value: str) -> str:
        """Mark ``value`` hidden wherever the run's record goes (store rows, snapshots,
        recordings, events, the narrative, the log), from now on, and return it. The model
        and the live run still read it; mark a secret before the tool returns it. A record
        that hides such values cannot rebuild its requests (``served_at`` says so). Outside
        an agent's call there is no record: the value is returned as it is."""
        if not isinstance(value, str) or not value:
            raise TypeError(
                f"{self.tool_name}: ctx.redact(value) hides a non-empty str, not {value!r}; "
                "pass the text as the result or the record would quote it (str(value))"
            )
        if self.on_redact is not None:
            self.on_redact(value)
        return value

    def credential(self, name: str) -> str:
        """The value of credential ``name`` for this call: the tool must declare it
        (``define_tool(needs=[name])``), and the person consented before the call ran. The
        value is never written to the run's state, record, events or logs; a result or
        error quoting it is masked."""
        value = self.credentials.get(name)
        if value is None:
            from ._errors import CredentialError

            raise CredentialError(
                f"{self.tool_name}: no credential {name!r} for this call; declare it with "
                f"define_tool(..., needs=[{name!r}]) (or @tool(needs=[...])) and give the "
                "agent .credentials(provider)"
            )
        return value

    def progress(self, payload: Any) -> None:
        """Say how the call is going: a ``stream.tool_progress`` event between this call's
        start and end, in the record. Never served to the model; never raises (a payload
        that is not JSON is dropped with its reason in the event)."""
        if self.on_progress is not None:
            self.on_progress(payload)

    def record_run(self, run: dict[str, Any]) -> None:
        """File an inner run this call made (a chart or an agent used as a tool) on the
        outer run's ``tool_runs`` key, by this call's id (a no-op outside an agent)."""
        if self.on_run is not None:
            self.on_run(run)

    def on_teardown(
        self, fn: Callable[[], Any], *, scope: str = "run", key: str | None = None
    ) -> None:
        """Hand the agent the cleanup of a session this tool holds: ``fn()`` (sync or async)
        runs when ``scope`` ends — after this call (``"call"``), when the run completes or
        fails but not when it pauses (``"run"``), or when the host closes the caller's
        session (``"session"``). ``key`` defaults to :func:`tool_session_key` for the
        scope. Register on every call: the first registration holds the cleanup, a repeat
        marks the session used."""
        if self.on_session is None:
            from ._sessions import ToolSessionError

            raise ToolSessionError(
                f"{self.tool_name}: ctx.on_teardown needs an agent's tool call; this context "
                "was built outside one, so nothing would ever close the session"
            )
        self.on_session(fn, scope, key)


def built_context(fields: dict[str, Any]) -> ToolContext:
    """A :class:`ToolContext` of ``fields`` the agent built itself (every field, each
    already of its type), without the frozen dataclass's per-field checks and setattrs: one
    per tool call on the agent's hot path."""
    ctx = object.__new__(ToolContext)
    object.__setattr__(ctx, "__dict__", fields)
    return ctx


@dataclass(frozen=True)
class Tool:
    """A tool the model may call. ``execute(args, ctx)`` may be ``def`` or ``async def``."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    execute: Callable[[dict[str, Any], ToolContext], Any]
    is_async: bool = False
    asks: Mapping[str, Any] | None = None
    """Set on tools that ask a person (``ask_human``, ``request_input``): the run pauses
    at the call instead of running ``execute``."""
    result_ceiling: Mapping[str, Any] | None = None
    """``{"max_chars": N, "narrow_by": [...]}``: a larger result is refused, never cut."""
    gate: Callable[[dict[str, Any], ToolContext], Any] | None = None
    """Decides per call: ``allow()``, ``deny(reason)`` or ``ask(question)`` (``_gate``)."""
    ask_or_assume: Mapping[str, Mapping[str, Any]] | None = None
    """Rules by argument: ``{"assume": value}`` fills an omitted argument (filed as
    assumed); ``{"ask": question, "choices": [...]}`` asks the person for it."""
    period: Mapping[str, Any] | None = None
    """``{"argument": name, "spelling": ...}``: which ruled argument bounds the period the
    results cover (so each result owes a declared period)."""
    source: str | None = None
    """Where the tool came from when not from this process (an MCP server), for errors."""
    needs: tuple[str, ...] = ()
    """Credentials the tool uses (``ctx.credential(name)``): the agent asks the person's
    consent before the first call that needs each one."""
    result_kind: str | None = None
    """The artifact kind a placed result is minted under (``None``: the default
    ``tool-result/<name>``)."""
    wants: Mapping[str, str] | None = None
    """Arguments that take an ``art_…`` ticket, by name, and the artifact kind each must
    redeem to: the agent resolves them before the tool runs."""

    def spec(self) -> dict[str, Any]:
        """The tool as the model sees it (JSON): a ruled argument is no longer required and
        its description says the rule; the author's ``input_schema`` is never edited."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": served_schema(self.input_schema, self.ask_or_assume),
        }


@checked_keywords
def define_tool(
    *,
    name: str,
    description: str,
    input_schema: Mapping[str, Any],
    execute: Callable[[dict[str, Any], ToolContext], Any],
    result_ceiling: Mapping[str, Any] | None = None,
    gate: Callable[[dict[str, Any], ToolContext], Any] | None = None,
    ask_or_assume: Mapping[str, Any] | None = None,
    period: Mapping[str, Any] | None = None,
    needs: Iterable[str] = (),
    result_kind: str | None = None,
    wants: Mapping[str, str] | None = None,
) -> Tool:
    """Define a tool; the schema is checked as JSON Schema (draft 2020-12) right here.

    ``result_ceiling={"max_chars": N, "narrow_by": ["limit", ...]}``: a result larger than
    ``N`` characters is not served. The model reads a refusal instead (the true size, the
    ceiling, the arguments that narrow the call, and that no data was returned), the call's
    status is ``invalid``, and the payload enters no record. A cut result would read as a
    complete one; a refusal says how to ask for less.

    ``gate=fn`` decides per call whether the tool runs: ``fn(call, ctx)`` returns
    ``allow()``, ``deny(reason)`` or ``ask(question)`` (see :mod:`trackway.tools` gates).

    ``ask_or_assume={"window": {"assume": "2h"}}`` lets the library fill an argument the
    model left out (the model is told, the run files it as assumed), and
    ``{"window": {"ask": "Which window?", "choices": [...]}}`` asks the person for it.
    ``period={"argument": "window"}`` names the ruled argument that bounds the period.

    ``needs=["github"]`` names the credentials the tool reads with ``ctx.credential(name)``:
    an agent asks the person's consent (a pause of kind ``consent``) before the first call
    that needs each one, and fetches the value from its ``.credentials(...)`` only for the
    call, never writing it anywhere.

    ``result_kind="dataset/rows"``: the artifact kind a result placed in the agent's artifact
    store is minted under (default ``tool-result/<name>``). ``wants={"dataset":
    "dataset/rows"}``: the ``dataset`` argument (a ``"string"`` in the schema) takes an
    ``art_…`` ticket of exactly that kind; the agent redeems it before the tool runs, so
    ``args["dataset"]`` holds the data and ``ctx.wanted["dataset"]`` the ticket.
    """
    if not isinstance(name, str) or not name or not all(c.isalnum() or c in "_-" for c in name):
        raise ToolDefinitionError(
            f"tool name {name!r} must be non-empty letters, digits, '_' or '-' (providers "
            "refuse other names)"
        )
    if not isinstance(description, str) or not description.strip():
        raise ToolDefinitionError(f"tool {name!r} needs a description: the model reads it")
    if not isinstance(input_schema, Mapping):
        raise ToolDefinitionError(f"tool {name!r}: input_schema must be a JSON Schema dict")
    fault = schema_fault(input_schema)  # a schema the call's check could not apply, refused here
    if fault is not None:
        raise ToolDefinitionError(f"tool {name!r}: input_schema {fault}")
    if not callable(execute):
        raise ToolDefinitionError(f"tool {name!r}: execute must be a function (args, ctx)")
    _check_execute(name, execute)
    ceiling = None if result_ceiling is None else _ceiling(name, result_ceiling, input_schema)
    if gate is not None and not callable(gate):
        raise ToolDefinitionError(f"tool {name!r}: gate must be a function (call, ctx)")
    rules, bound = check_rules(name, ask_or_assume, input_schema, period)
    needed = _needs(name, needs)
    kind = check_result_kind(name, result_kind)
    wanted = checked_wants(name, wants, input_schema)
    return Tool(
        name,
        description,
        dict(input_schema),
        execute,
        inspect.iscoroutinefunction(execute),
        result_ceiling=ceiling,
        gate=gate,
        ask_or_assume=rules,
        period=bound,
        needs=needed,
        result_kind=kind,
        wants=wanted,
    )


def _needs(name: str, needs: Iterable[str]) -> tuple[str, ...]:
    """Credential names checked where they are written: non-empty, each once."""
    if isinstance(needs, str):
        raise ToolDefinitionError(
            f"tool {name!r}: needs={needs!r}: give a list of credential names, e.g. "
            f"needs=[{needs!r}]"
        )
    out = tuple(needs)
    for credential in out:
        if not isinstance(credential, str) or not credential.strip():
            raise ToolDefinitionError(
                f"tool {name!r}: needs names credentials by non-empty str, not {credential!r}"
            )
    if len(set(out)) != len(out):
        raise ToolDefinitionError(f"tool {name!r}: needs={list(out)!r} names one twice")
    return out


def _ceiling(name: str, ceiling: Mapping[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """A result ceiling checked where it is written."""
    unknown = sorted(set(ceiling) - {"max_chars", "narrow_by"})
    if unknown:
        raise ToolDefinitionError(
            f"tool {name!r}: result_ceiling takes max_chars and narrow_by, not {unknown}"
        )
    limit = ceiling.get("max_chars")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ToolDefinitionError(
            f"tool {name!r}: result_ceiling max_chars={limit!r}: use a positive whole number"
        )
    out: dict[str, Any] = {"max_chars": limit}
    if "narrow_by" in ceiling:
        narrow = ceiling["narrow_by"]
        if isinstance(narrow, str) or not isinstance(narrow, (list, tuple)) or not narrow:
            raise ToolDefinitionError(
                f"tool {name!r}: result_ceiling narrow_by={narrow!r}: name the arguments that "
                "make a call return less (a non-empty list), or leave narrow_by out"
            )
        known = set((schema.get("properties") or {}).keys())
        missing = [n for n in narrow if n not in known]
        if missing:
            raise ToolDefinitionError(
                f"tool {name!r}: result_ceiling narrow_by names {missing}, which are not "
                f"arguments of the tool ({', '.join(sorted(known)) or 'none'})"
            )
        out["narrow_by"] = list(narrow)
    return out


def distinct_tools(tools: Iterable[Tool], where: str) -> list[Tool]:
    """``tools`` as a list, checked: each a :class:`Tool`, no two with one name."""
    out = list(tools)
    for t in out:
        if not isinstance(t, Tool):
            raise ToolDefinitionError(f"{where} takes Tools (define_tool, @tool), not {t!r}")
    names = [t.name for t in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ToolDefinitionError(f"{where} names {twice} twice; tool names must be unique")
    return out


def _check_execute(name: str, execute: Callable[..., Any]) -> None:
    """A tool is called as ``execute(args, ctx)``: one that cannot take two positional
    arguments would fail on every call, so it is refused where it is defined."""
    try:
        signature = inspect.signature(execute)
    except (TypeError, ValueError):
        return  # a builtin or an extension: nothing to check before it runs
    try:
        signature.bind(None, None)
    except TypeError:
        label = getattr(execute, "__qualname__", repr(execute))
        raise ToolDefinitionError(
            f"tool {name!r}: execute={label}{signature} cannot be called as execute(args, "
            "ctx); give it two parameters, e.g. def execute(args, ctx): ... (or use @tool, "
            "which takes your function's own parameters)"
        ) from None
