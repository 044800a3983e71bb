"""The systems ``bench_serving.py`` drives, each built once per cell (as a server builds its
agent once) around the same sleeping model: ``system(name, store, traces, where)`` is an
async context manager yielding ``run(key) -> answer`` for one run.

- trackway: ``Agent`` with a custom async provider; store none, ``MemoryStore``,
  ``SqliteStore`` (a temp file) or ``PostgresStore`` (a schema of its own), durability
  ``"sync"`` (the default; ``--durability`` picks another);
- LangGraph: ``create_react_agent`` with no checkpointer, ``InMemorySaver``,
  ``AsyncSqliteSaver`` or ``AsyncPostgresSaver`` (``from_conn_string``: one connection),
  driven by ``ainvoke`` with a ``thread_id`` per run;
- pydantic-ai: ``Agent(FunctionModel(async fn))``, no store, ``await agent.run``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from _serving_load import CALLS, TOOL_DOC, TOOL_NAME, TOOL_RESULT, Traces, answer_for

Run = Callable[[str], Awaitable[str]]

PROBES = {"langgraph": "langgraph.prebuilt", "pydantic_ai": "pydantic_ai.models.function"}
STORE_PROBES = {
    ("langgraph", "sqlite"): "langgraph.checkpoint.sqlite.aio",
    ("langgraph", "postgres"): "langgraph.checkpoint.postgres.aio",
}
PEER_DISTS = (
    "langgraph",
    "langgraph-prebuilt",
    "langgraph-checkpoint",
    "langgraph-checkpoint-sqlite",
    "langgraph-checkpoint-postgres",
    "langchain-core",
    "pydantic-ai-slim",
    "psycopg",
    "aiosqlite",
)


def unavailable(module: str) -> str | None:
    """``None`` when ``module`` imports, else why not."""
    try:
        __import__(module)
    except ImportError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


# -- trackway -------------------------------------------------------------------------------


def _trackway_store(store: str, where: dict[str, Any]) -> Any:
    from trackway import MemoryStore, PostgresStore, SqliteStore

    if store == "none":
        return None
    if store == "memory":
        return MemoryStore()
    if store == "sqlite":
        return SqliteStore(Path(where["dir"]) / "trackway.db")
    return PostgresStore(where["dsn"])


class SleepyProvider:
    """The trackway provider: ``CALLS - 1`` tool calls, then the answer, each after the
    injected latency. No request is kept (the mock's tap would grow with N)."""

    name = "sleepy"

    def __init__(self, traces: Traces) -> None:
        self.traces = traces

    async def complete(self, request: Any) -> Any:
        from trackway.agent import LLMResponse, ToolCall

        key = request.messages[0].content
        i = await self.traces.model_call(key)
        if i < CALLS - 1:
            call = ToolCall(id=f"call_{i}", name=TOOL_NAME, args={"key": f"k{i}"})
            return LLMResponse(tool_calls=(call,))
        return LLMResponse(content=answer_for(key))


DURABILITY = {"trackway": "sync"}
"""When a trackway run's commits reach its store (``--durability``; ``"sync"``, the default:
each before the run's next stage)."""


def trackway_agent(provider: Any, store: Any, *tools: Any) -> Any:
    from trackway import Agent
    from trackway.tools import define_tool

    lookup = define_tool(
        name=TOOL_NAME,
        description=TOOL_DOC,
        input_schema={"type": "object", "properties": {"key": {"type": "string"}}},
        execute=lambda args, ctx: TOOL_RESULT,
    )
    builder = Agent.create(
        provider=provider, model="sleepy", store=store, durability=DURABILITY["trackway"]
    ).tool(lookup)
    for tool in tools:
        builder = builder.tool(tool)
    return builder.build()


@contextlib.asynccontextmanager
async def _trackway(store: str, traces: Traces, where: dict[str, Any]) -> AsyncIterator[Run]:
    backing = _trackway_store(store, where)
    agent = trackway_agent(SleepyProvider(traces), backing)

    async def run(key: str) -> str:
        out = await agent.run(key)
        assert isinstance(out, str), out
        return out

    try:
        yield run
    finally:
        if backing is not None and hasattr(backing, "close"):
            backing.close()


# -- LangGraph ------------------------------------------------------------------------------


def _lg_model(traces: Traces) -> Any:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class SleepyChat(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "sleepy"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                      **kwargs: Any) -> ChatResult:  # fmt: skip
            raise NotImplementedError("the bench drives LangGraph with ainvoke only")

        async def _agenerate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                             **kwargs: Any) -> ChatResult:  # fmt: skip
            key = messages[0].content
            i = await traces.model_call(key)
            if i < CALLS - 1:
                call = {"id": f"call_{i}", "name": TOOL_NAME, "args": {"key": f"k{i}"}}
                msg = AIMessage(content="", tool_calls=[call])
            else:
                msg = AIMessage(content=answer_for(key))
            return ChatResult(generations=[ChatGeneration(message=msg)])

    return SleepyChat()


@contextlib.asynccontextmanager
async def _lg_saver(store: str, where: dict[str, Any]) -> AsyncIterator[Any]:
    if store == "none":
        yield None
    elif store == "memory":
        from langgraph.checkpoint.memory import InMemorySaver

        yield InMemorySaver()
    elif store == "sqlite":
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        async with AsyncSqliteSaver.from_conn_string(str(Path(where["dir"]) / "lg.db")) as s:
            await s.setup()
            yield s
    else:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        async with AsyncPostgresSaver.from_conn_string(where["dsn"]) as s:
            await s.setup()
            yield s


@contextlib.asynccontextmanager
async def _langgraph(store: str, traces: Traces, where: dict[str, Any]) -> AsyncIterator[Run]:
    from langchain_core.tools import tool
    from langgraph.prebuilt import create_react_agent

    @tool(TOOL_NAME, description=TOOL_DOC)
    def lookup(key: str) -> str:
        return TOOL_RESULT

    async with _lg_saver(store, where) as saver:
        graph = create_react_agent(_lg_model(traces), [lookup], checkpointer=saver)

        async def run(key: str) -> str:
            config = {"recursion_limit": 2 * CALLS + 10, "configurable": {"thread_id": key}}
            out = await graph.ainvoke({"messages": [("user", key)]}, config)
            return str(out["messages"][-1].content)

        yield run


# -- pydantic-ai ----------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def _pydantic_ai(store: str, traces: Traces, where: dict[str, Any]) -> AsyncIterator[Run]:
    from pydantic_ai import Agent as PaiAgent
    from pydantic_ai import UsageLimits
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    async def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        key = messages[0].parts[-1].content
        i = await traces.model_call(key)
        if i < CALLS - 1:
            part = ToolCallPart(TOOL_NAME, {"key": f"k{i}"}, tool_call_id=f"call_{i}")
            return ModelResponse(parts=[part])
        return ModelResponse(parts=[TextPart(answer_for(key))])

    agent = PaiAgent(FunctionModel(model))

    @agent.tool_plain(name=TOOL_NAME, description=TOOL_DOC)
    def lookup(key: str) -> str:
        return TOOL_RESULT

    limits = UsageLimits(request_limit=CALLS + 5)

    async def run(key: str) -> str:
        result = await agent.run(key, usage_limits=limits)
        return str(result.output)

    yield run


SYSTEMS = {"trackway": _trackway, "langgraph": _langgraph, "pydantic_ai": _pydantic_ai}
STORES = {  # system: the stores it runs on
    "trackway": ("none", "memory", "sqlite", "postgres"),
    "langgraph": ("none", "memory", "sqlite", "postgres"),
    "pydantic_ai": ("none",),
}
LABELS = {
    ("trackway", "none"): "no store",
    ("trackway", "memory"): "MemoryStore",
    ("trackway", "sqlite"): "SqliteStore",
    ("trackway", "postgres"): "PostgresStore",
    ("langgraph", "none"): "no checkpointer",
    ("langgraph", "memory"): "InMemorySaver",
    ("langgraph", "sqlite"): "AsyncSqliteSaver",
    ("langgraph", "postgres"): "AsyncPostgresSaver",
    ("pydantic_ai", "none"): "no store",
}


def system(name: str, store: str, traces: Traces, where: dict[str, Any]) -> Any:
    return SYSTEMS[name](store, traces, where)
