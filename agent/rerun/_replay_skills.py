"""What a replay reads instead of asking code again: which instructions were active, which
``when`` routes held and how the entry was picked (:class:`RecordedDecisions`), and what the
tool-choice classifier answered (:class:`RecordedClassifier`). The law that acts on them
runs again and is compared commit by commit."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from trackway.engine import Snapshot, thaw
from trackway.tools import Tool

from ..classify._port import ClassifierError, ClassifyAnswer, ClassifyRequest
from ..messages._errors import ReplayDivergence
from ..skills._declare import (
    ALWAYS_SERVED_TOOLS,
    EntryRequest,
    EntryScoring,
    define_instruction,
    define_skill,
    route,
    skill_graph,
)

__all__ = [
    "RecordedClassifier",
    "RecordedDecisions",
    "apply_recorded_skills",
    "skill_tool_names",
    "unserved_spec",
]


class RecordedDecisions:
    """The decisions of a recorded run, by model call ``k``."""

    def __init__(self, snap: Snapshot) -> None:
        self._active: list[list[str]] = []
        current: list[str] = []
        for c in snap.history():
            if c.frame != "" or c.stage_id != "offer":
                continue
            for op in c.ops:
                if op.key == "system_pieces":
                    pieces = thaw(op.value) if op.kind != "delete" else []
                    current = [p["id"] for p in pieces or () if p["source"] == "instruction"]
            self._active.append(current)
        state = snap.state
        self._routes = {
            (r["k"], r["route"])
            for r in thaw(state.get("skill_proposals", []))
            if r["source"] == "route"
        }
        self._entries = {r["k"]: r for r in thaw(state.get("skill_entry", []))}

    def active(self, state: Mapping[str, Any], k: int) -> list[str]:
        if k > len(self._active):
            raise ReplayDivergence(
                f"the replay served model call {k}; the recording's offer stage ran "
                f"{len(self._active)} times",
                stage_path="offer",
                key="system_pieces",
            )
        return list(self._active[k - 1])

    def when(self, index: int, state: Mapping[str, Any], k: int) -> bool:
        return (k, index) in self._routes

    async def entry(self, request: EntryRequest, k: int) -> EntryScoring | None:
        row = self._entries.get(k)
        if row is None or row.get("scorer") is None:
            return None
        ranking = tuple((r["id"], float(r["score"])) for r in row.get("ranking", ()))
        chosen = None if row.get("cold_start") else row.get("chosen")
        return EntryScoring(row["scorer"], ranking, chosen)


class RecordedClassifier:
    """The classifier answers of a recorded run, in the order they were asked."""

    def __init__(self, snap: Snapshot, name: str = "recorded") -> None:
        self.name = name
        self._rows = [
            r
            for r in thaw(snap.state.get("tool_choices", []))
            if r["kind"] == "error" or (r["kind"] == "pick" and "ranked" in r)
        ]

    async def classify(self, request: ClassifyRequest) -> ClassifyAnswer:
        if not self._rows:
            raise ReplayDivergence(
                "the replay asked the tool-choice classifier more often than the recording did",
                stage_path="offer",
                key="tool_choices",
            )
        row = self._rows.pop(0)
        if row["kind"] == "error":
            raise ClassifierError(
                row.get("message", ""), status=row.get("status"), retryable=row["retryable"]
            )
        return ClassifyAnswer.from_record(row)


def skill_tool_names(writes: Mapping[str, Any]) -> set[str]:
    """The names of a recording's skill tools and doors (not the agent's own ``.tool()``)."""
    skills = writes.get("skills")
    if not skills:
        return set()
    return {n for s in skills["catalog"] for n in s["tools"]} | set(ALWAYS_SERVED_TOOLS)


def unserved_spec(name: str) -> dict[str, Any]:
    """The stand-in spec of a tool the recording never served (it kept no spec of it): its
    description says so; its schema takes anything, as nothing was ever checked against it."""
    return {"name": name, "description": "(never served in this recording)", "input_schema": {}}


class _NamedScorer:
    """The recorded scorer's name; what it ranked is read by :class:`RecordedDecisions`."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def score(self, request: EntryRequest) -> EntryScoring:  # pragma: no cover
        raise AssertionError("a replay reads the entry from the record")


def _named_never(name: str) -> Callable[[Mapping[str, Any]], bool]:
    """A stand-in for a route's ``when`` under the name the record kept (what it decided is
    read by :class:`RecordedDecisions`)."""

    def when(state: Mapping[str, Any]) -> bool:
        return False

    when.__qualname__ = name
    return when


def _never(state: Mapping[str, Any]) -> bool:
    return False


def apply_recorded_skills(
    builder: Any,
    snap: Snapshot,
    writes: Mapping[str, Any],
    stub: Callable[[dict[str, Any]], Tool],
    specs: Mapping[str, dict[str, Any]],
) -> None:
    """Declare on ``builder`` the skills, instructions, graph and tool choice a recording
    committed (``writes``: the run constants), their code replaced by the record."""
    record = writes.get("skills")
    if record:
        stubs: dict[str, Tool] = {}  # one per name: skills that shared a tool share its stub
        for s in record["catalog"]:
            for n in s["tools"]:
                if n not in stubs:
                    stubs[n] = stub(specs.get(n) or unserved_spec(n))
            tools = [stubs[n] for n in s["tools"]]
            builder.skill(
                define_skill(
                    id=s["id"], title=s["title"], body=s["body"], tools=tools, hidden=s["hidden"]
                )
            )
        for iid, prompt in record["instructions"].items():
            builder.instruction(define_instruction(id=iid, prompt=prompt, active_when=_never))
        graph = record.get("graph")
        if graph is not None:
            routes = [
                route(
                    r["from"],
                    r["to"],
                    on_tool_return=r.get("on_tool_return"),
                    on_tool_status=r.get("on_tool_status"),
                    when=_named_never(r["when"]) if "when" in r else None,
                )
                for r in graph["routes"]
            ]
            scorer = None if graph.get("scorer") is None else _NamedScorer(graph["scorer"])
            built = skill_graph(
                *routes,
                entry=graph["entry"],
                scorer=scorer,
                strictness=graph["strictness"],
                continuity=graph["continuity"],
            )
            builder.skill_graph(built)
        builder._skill_scoped = bool(record.get("scoped"))
        builder._decisions = RecordedDecisions(snap)
    chosen = (writes.get("settings") or {}).get("tool_choice_by")
    if chosen:
        builder.tool_choice(
            classifier=RecordedClassifier(snap, chosen["classifier"]),
            serve=chosen["serve"],
            always_serve=chosen["always_serve"],
        )


def replay_skills(builder: Any, cfg: Any, snap: Snapshot, tools: Mapping[str, Tool]) -> None:
    """Declare on ``builder`` the skills of a live agent's ``cfg`` with its tools replaced by
    the recorded ones (``tools``) and its code decisions read from the record."""
    skills = cfg.skills
    if skills is not None:
        for skill in skills.skills.values():
            stubs = tuple(tools[t.name] for t in skill.tools)
            builder.skill(dataclasses.replace(skill, tools=stubs))
        for instruction in skills.instructions.values():
            builder.instruction(instruction)
        if skills.graph is not None:
            builder.skill_graph(skills.graph)
        builder._skill_scoped = skills.scoped
        builder._decisions = RecordedDecisions(snap)
    choice = cfg.tool_choice
    if choice is not None:
        builder.tool_choice(
            classifier=RecordedClassifier(snap, choice.classifier.name),
            serve="all" if choice.top is None else {"top": choice.top},
            always_serve=choice.always_serve,
        )
