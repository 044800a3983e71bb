"""The runs of one built agent share what does not change between them, and nothing else.

- Runs whose settings and tools write the same JSON hold one engine-owned value for each, and
  the request frame (tools validated, serialized and hashed) is built once, not once per run.
- A run whose settings differ builds its own frame, even where the values are ``==`` but
  their JSON is not (``1``, ``1.0``, ``True``): every request hashes to its receipt, to what
  the provider was handed, and to what ``served_at`` rebuilds.
- Runs on several threads at once each get their own run's request.
"""

from __future__ import annotations

import operator
import threading
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import trackway.agent.context._request as request_module
from tests.examples import examples
from tests.law import assert_law
from trackway import Agent, define_tool, mock
from trackway.agent.messages._messages import sha256

WORD = {"type": "object", "properties": {"word": {"type": "string"}}}
LOOKUP, SPELL = (
    define_tool(name=name, description=f"{name} a word", input_schema=WORD, execute=answer)
    for name, answer in (("lookup", lambda a, c: "found"), ("spell", lambda a, c: "w-o-r-d"))
)


def _frames_built(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    built = [0]
    real = request_module._frame_of

    def counted(*args: Any) -> Any:
        built[0] += 1
        return real(*args)

    monkeypatch.setattr(request_module, "_frame_of", counted)
    return built


def _sent_hash(request: Any) -> str:
    return sha256(request.canonical_json())


def test_runs_with_the_same_settings_and_tools_share_them_and_one_frame(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built = _frames_built(monkeypatch)
    provider = mock(reply="ok")
    agent = (
        Agent.create(provider=provider, model="m", temperature=0.2)
        .system("Be brief.")
        .tool(LOOKUP)
        .tool(SPELL)
        .build()
    )
    snapshots = [agent.run_result_sync("hi").snapshot for _ in range(5)]
    assert built[0] == 1
    first = snapshots[0].state
    sent = _sent_hash(provider.requests[0])
    for snapshot, request in zip(snapshots, provider.requests, strict=True):
        state = snapshot.state
        assert state["settings"]._data is first["settings"]._data
        tools, first_tools = state["tools"]._backing, first["tools"]._backing
        assert len(tools) == 2 and all(map(operator.is_, tools, first_tools))
        assert _sent_hash(request) == sent == state["receipts"][0]["request_hash"]
        assert assert_law(snapshot) == 1


@settings(max_examples=examples(60), deadline=None)
@given(
    picks=st.lists(
        st.sampled_from([1, 1.0, True, 0, 0.0, False, "1", None]), min_size=1, max_size=6
    )
)
@example(picks=[1, 1.0, True, 1, 0, False, 0.0])
def test_a_run_whose_settings_differ_is_served_its_own_request(picks: list[Any]) -> None:
    # 1 == 1.0 == True, yet each writes other JSON: a frame shared by == would send the
    # last run's bytes and break the law
    chosen: list[Any] = [None]
    provider = mock(reply="ok")
    agent = (
        Agent.create(provider=provider, model="m")
        .tool(LOOKUP)
        .configure(lambda ctx: {"extra_body": {"x": chosen[0]}})
        .build()
    )
    for i, pick in enumerate(picks):
        chosen[0] = pick
        snapshot = agent.run_result_sync("hi").snapshot
        sent = provider.requests[i]
        assert sent.extra_body == {"x": pick}
        assert type(sent.extra_body["x"]) is type(pick)
        assert snapshot.state["receipts"][0]["request_hash"] == _sent_hash(sent)
        assert assert_law(snapshot) == 1


def test_runs_on_threads_at_once_each_get_their_own_request() -> None:
    provider = mock(respond=lambda request: "ok")
    agent = (
        Agent.create(provider=provider, model="m")
        .tool(LOOKUP)
        .configure(lambda ctx: {"extra_body": {"who": ctx["message"]}})
        .build()
    )
    failures: list[BaseException] = []
    barrier = threading.Barrier(4)

    def worker(n: int) -> None:
        try:
            barrier.wait()
            for i in range(25):
                message = f"{n}-{i % 2}"  # two settings per thread, alternating
                snapshot = agent.run_result_sync(message).snapshot
                assert snapshot.state["settings"]["extra_body"] == {"who": message}
                assert_law(snapshot)
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures
    assert len(provider.requests) == 100
    for request in provider.requests:
        assert request.extra_body == {"who": request.messages[0].content}


def test_a_frame_built_from_a_runs_own_pieces_is_not_kept_for_the_next() -> None:
    from trackway.agent.context._across_runs import AcrossRuns
    from trackway.agent.context._request import MessageCache, _frame_of
    from trackway.engine.core._values import freeze

    settings_ = freeze({"model": "m"})
    shelf = AcrossRuns()
    own = MessageCache()
    own._frame = _frame_of(settings_, "Be brief.", None, freeze([{"text": "a run's note"}]), None)
    shelf.keep(own)
    assert shelf.frame is None  # nothing of that run stays behind it
    plain = MessageCache()
    plain._frame = _frame_of(settings_, "Be brief.", None, None, None)
    shelf.keep(plain)
    assert shelf.frame is plain._frame
    assert shelf.cache()._frame is plain._frame
