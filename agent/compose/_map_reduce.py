"""``map_reduce``: split the message into items, run a mapper per item in parallel (at most
``concurrency`` at a time), reduce the answers; one chart, one record.

The split is a function ``split(message) -> list[str]`` or a runner (member ``split``) whose
answer's non-empty lines are the items. The items are written whole to ``items``; the
first ``max_items`` run (the rest are dropped, and the drop is recorded, by the engine's
for-each and in ``composition.split``). Item ``i`` runs the mapper as member ``map_i``. The
answers (in item order) go to ``reduce``: a function ``reduce(answers) -> str``, or a runner
(member ``reduce``) given them numbered; without one, the numbered listing is the answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from trackway.engine import FlowChart, Scope, flow_chart, thaw

from ..messages._errors import AgentBuildError
from ..runtime._agent import Agent
from ._composition import Composition, _finish, _member_output, _options, _seed
from ._slots import PatternError, check_count, member_input, runner_of, slot_chart, slot_names

__all__ = ["map_reduce"]

Split = Callable[[str], Sequence[str]]
Reduce = Callable[[list[str]], str]


def listing(answers: Sequence[Any]) -> str:
    """The answers numbered, as a reducing runner (or the caller) reads them."""
    return "\n\n".join(f"{i}. {answer}" for i, answer in enumerate(answers, start=1))


def _items_of(split: Split | Agent, scope: Scope) -> list[str]:
    if isinstance(split, Agent):  # the split member's answer: one item a non-empty line
        lines = str(scope["answer_split"]).splitlines()
        return [line.strip() for line in lines if line.strip()]
    got = split(str(scope["message"]))
    if isinstance(got, (str, bytes)) or not isinstance(got, Sequence):
        raise PatternError(
            f"map_reduce: split returned {type(got).__name__}; it must return a list of strings "
            "(one per item)"
        )
    items = list(got)
    bad = next((i for i, item in enumerate(items) if not isinstance(item, str)), None)
    if bad is not None:
        raise PatternError(
            f"map_reduce: split returned item {bad} as {type(items[bad]).__name__}; every item "
            "must be a string (the mapper's message)"
        )
    return items


def map_reduce(
    mapper: Agent,
    *,
    split: Split | Agent,
    reduce: Reduce | Agent | None = None,
    max_items: int = 16,
    concurrency: int = 4,
    name: str = "map_reduce",
    **options: Any,
) -> Composition:
    """A map-reduce composition (see the module docstring); ``options`` as every composition
    takes them (``store``, ``durability``, ``redact``)."""
    check_count("map_reduce", "max_items", max_items)
    check_count("map_reduce", "concurrency", concurrency)
    return _build(
        name,
        [mapper] * max_items,
        split,
        reduce,
        concurrency,
        options,
    )


def _build(
    name: str,
    mappers: list[Agent],
    split: Split | Agent,
    reduce: Reduce | Agent | None,
    concurrency: int,
    options: Mapping[str, Any],
) -> Composition:
    kind = "map_reduce"
    names = slot_names("map", len(mappers))
    members: dict[str, Agent] = {}
    if isinstance(split, Agent):
        members["split"] = runner_of(kind, "split", split, members)
    elif not callable(split):
        raise AgentBuildError(
            "map_reduce: split= takes a function (message) -> list of strings, or a runner "
            "whose answer holds one item per line"
        )
    for slot, mapper in zip(names, mappers, strict=True):
        members[slot] = runner_of(kind, slot, mapper, {})
    if reduce is not None and not isinstance(reduce, Agent) and not callable(reduce):
        raise AgentBuildError(
            "map_reduce: reduce= takes a function (answers) -> str, or a runner given the "
            "answers numbered"
        )
    if isinstance(reduce, Agent):
        members["reduce"] = runner_of(kind, "reduce", reduce, members)
    cap = len(mappers)
    by = "member" if isinstance(split, Agent) else "function"

    def take_items(scope: Scope) -> None:
        items = _items_of(split, scope)
        scope["map_reduce"] = {"max_items": cap, "split": by}
        scope["items"] = items
        ran = min(len(items), cap)
        scope.emit(
            "composition.split",
            {
                "items": len(items),
                "ran": ran,
                "dropped": len(items) - ran,
                "max_items": cap,
                "by": by,
            },
        )

    def gather(scope: Scope) -> None:
        answers = [str(a) for a in thaw(scope["mapped"])]
        if reduce is not None and not isinstance(reduce, Agent):
            scope["current"] = str(reduce(answers))
        else:
            scope["current"] = listing(answers)

    b = flow_chart("_seed", _seed, id="_seed", description="Take the message")
    if isinstance(split, Agent):
        b = b.subflow(
            "split",
            split.spec(),
            id="split",
            input=member_input("current"),
            output=_member_output("split"),
        )
    b = (
        b.then("_split", take_items, id="_split", description="Split into items")
        .parallel_for_each(
            "_map",
            items="items",
            branch=slot_chart("map", mappers, f"mapreduce-{name}"),
            into="mapped",
            max_branches=cap,
            overflow="truncate",
            concurrency=concurrency,
            id="_map",
        )
        .then("_gather", gather, id="_gather", description="Reduce the answers")
    )
    if isinstance(reduce, Agent):
        b = b.subflow(
            "reduce",
            reduce.spec(),
            id="reduce",
            input=member_input("current"),
            output=_member_output("reduce", "current"),
        )
    chart: FlowChart = b.then("_final", _finish("current"), id="_final").build(
        name=f"MapReduce {name}", chart_id=f"mapreduce-{name}", description="MapReduce"
    )

    def rebuild(swap: Callable[[str, Agent], Agent]) -> Composition:
        again_split = swap("split", split) if isinstance(split, Agent) else split
        again_reduce = swap("reduce", reduce) if isinstance(reduce, Agent) else reduce
        again = [swap(slot, m) for slot, m in zip(names, mappers, strict=True)]
        return _build(name, again, again_split, again_reduce, concurrency, options)

    return Composition(name, chart, 1, _options("map_reduce", options), members, rebuild)
