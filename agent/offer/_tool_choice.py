"""Tool choice by classifier: before each model call the ``offer`` stage asks a classifier
which of the tools about to be served fits, files the answer (``tool_choices``) and, under
``serve={"top": N}``, serves only the top N plus the doors. After the call, ``call-llm``
files what the model called against the pick. The model's call is never overridden.

Rows (one flat, append-only ledger ``tool_choices``): ``kind="pick"`` (offered, ranked,
chosen, confidence, usage, latency, served, narrowed and, when the full set was served under
``top``, the ``skip`` reason: ``unavailable``, ``too-few``, ``after-miss`` or ``wrap-up``),
``kind="error"`` (the classifier failed: its status and message; the full set is served) and
``kind="outcome"`` (called, ``first_agrees``, and any ``miss``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trackway.engine import StagePath
from trackway.engine.run._scope import TrackedScope

from ..classify._port import ClassifierError, ClassifyCriterion, ClassifyRequest
from ..context._config import AgentConfig, extend_built
from ..context._config import emit as _emit
from ..messages._errors import AgentBuildError
from ..skills._declare import ALWAYS_SERVED_TOOLS

__all__ = ["TOOL_CHOICE_QUESTION", "ToolChoice", "choose", "tool_choice_outcome"]

TOOL_CHOICE_QUESTION = "trackway.tool-choice"
"""The ``question_id`` of the classifier request ``.tool_choice()`` asks."""
_QUESTION = "Which of these tools fits the next step of answering the person's message?"


@dataclass(frozen=True)
class ToolChoice:
    """``.tool_choice(...)`` as ``build()`` checked it."""

    classifier: Any
    top: int | None
    always_serve: tuple[str, ...]
    criteria: dict[str, ClassifyCriterion] = field(default_factory=dict, compare=False)
    """Each tool's criterion, made once (a tool's description is fixed by its definition)."""

    def record(self) -> dict[str, Any]:
        return {
            "classifier": self.classifier.name,
            "serve": "all" if self.top is None else {"top": self.top},
            "always_serve": list(self.always_serve),
        }

    @staticmethod
    def checked(classifier: Any, serve: Any, always_serve: Iterable[str]) -> ToolChoice:
        from ..classify._port import Classifier

        if not isinstance(classifier, Classifier):
            raise AgentBuildError(
                f"tool_choice(classifier={classifier!r}): use mock_classifier(...), "
                "provider_classifier(provider) or an object with name and async "
                "classify(request)"
            )
        top: int | None = None
        if isinstance(serve, Mapping) and set(serve) == {"top"}:
            top = serve["top"]
            if isinstance(top, bool) or not isinstance(top, int) or top < 1:
                raise AgentBuildError(
                    f"tool_choice(serve={dict(serve)!r}): top must be a whole number >= 1"
                )
        elif serve != "all":
            raise AgentBuildError(
                f"tool_choice(serve={serve!r}): use 'all' (advise, serve every tool) or "
                "{'top': N} (serve the classifier's top N plus the doors)"
            )
        names = (always_serve,) if isinstance(always_serve, str) else tuple(always_serve)
        return ToolChoice(classifier, top, names)


async def choose(cfg: AgentConfig, scope: TrackedScope, names: list[str], k: int) -> list[str]:
    """The classifier's reading of model call ``k``'s tools, filed; the names to serve."""
    choice: ToolChoice = cfg.tool_choice
    kept = set(choice.always_serve)
    if cfg.skills is not None:
        kept.update(ALWAYS_SERVED_TOOLS)
    candidates = [n for n in names if n not in kept]
    row: dict[str, Any] = {"k": k, "kind": "pick", "offered": candidates}
    if scope.get("wrap_up_asked"):  # no tools go with the wrap-up: nothing to ask
        row.update(served=names, narrowed=False)
        if choice.top is not None:
            row["skip"] = "wrap-up"
        _file(scope, row)
        _last(scope, cfg).pick = row
        return names
    cursor = scope.get("skill_cursor")
    skill = None if cursor is None else cursor["skill"]
    if skill is not None and cfg.skills is not None and cfg.skills.skills[skill].hidden:
        skill = None  # a hidden skill is never named outside the author's code
    request = ClassifyRequest(
        TOOL_CHOICE_QUESTION,
        _QUESTION,
        tuple(_criterion(cfg, n) for n in candidates),
        {"message": scope["user_message"], "skill": skill},
    )
    try:
        answer = await choice.classifier.classify(request)
    except ClassifierError as exc:
        failed = {
            "k": k,
            "kind": "error",
            "offered": candidates,
            "status": exc.status,
            "retryable": exc.retryable,
            "message": str(exc),
            "served": names,
            "narrowed": False,
        }
        _file(scope, failed)
        _last(scope, cfg).pick = failed
        said = {"k": k, "status": exc.status, "retryable": exc.retryable}
        _emit(scope, "tool_choice.failed", said)
        return names
    offered = set(candidates)
    ranked = sorted(
        ((n, float(s)) for n, s in answer.ranked if n in offered and _finite(s)),
        key=lambda p: -p[1],
    )
    row["ranked"] = [{"name": n, "score": s} for n, s in ranked]
    _answer_fields(row, answer, offered)
    served = names
    if choice.top is not None:
        top = choice.top
        skip = None
        if len(candidates) < top + 1:
            skip = "too-few"
        elif _missed_last(scope):
            skip = "after-miss"
        elif len(ranked) < top:
            skip = "unavailable"
        if skip is None:
            keep = {n for n, _ in ranked[:top]} | kept
            served = [n for n in names if n in keep]
        else:
            row["skip"] = skip
    row["served"] = served
    row["narrowed"] = served != names
    if row["narrowed"]:  # the wire before narrowing: what the offer site had
        row["wire"] = names
    _file(scope, row)
    _last(scope, cfg).pick = row
    scope._emit_built(
        "tool_choice.picked",
        {
            "k": k,
            "chosen": row.get("chosen"),
            "narrowed": row["narrowed"],
            "served": len(served),
            "latency_ms": row.get("latency_ms"),
        },
    )
    return served


class _Last:
    """The pick row this run filed last (plain), so the outcome reads it without the log."""

    __slots__ = ("pick",)

    def __init__(self) -> None:
        self.pick: Mapping[str, Any] | None = None


def _last(scope: TrackedScope, cfg: AgentConfig) -> _Last:
    mount = StagePath.parent_of(scope.stage_path)
    return scope.run_local(("agent-tool-choice", id(cfg), mount), _Last)


def tool_choice_outcome(
    cfg: AgentConfig, scope: TrackedScope, k: int, calls: Sequence[Any]
) -> None:
    """What the model called at call ``k`` against the pick filed before it."""
    pick = _last(scope, cfg).pick
    if pick is None or pick["k"] != k:  # e.g. resumed in another process: the log says
        rows = scope.get("tool_choices") or ()
        pick = rows[-1] if rows else None
    if pick is None or pick["k"] != k:
        return
    called = [c.name for c in calls]
    row: dict[str, Any] = {"k": k, "kind": "outcome", "called": called}
    chosen = pick.get("chosen")
    if called and chosen is not None:
        row["first_agrees"] = called[0] == chosen
    served = set(pick["served"])
    wanted = [n for n in called if n not in served]
    if wanted and pick.get("narrowed"):
        row["miss"] = {"wanted": wanted}
    _file(scope, row)
    scope._emit_built("tool_choice.outcome", {k: v for k, v in row.items() if k != "kind"})


def _finite(score: Any) -> bool:
    return isinstance(score, (int, float)) and math.isfinite(score)


def _answer_fields(row: dict[str, Any], answer: Any, offered: set[str]) -> None:
    """The rest of the classifier's answer on ``row``, as plain JSON: its pick when it is
    one of the offered names, a confidence and a latency only when finite (JSON has no
    NaN), usage's whole-number counts, the model's name."""
    chosen = answer.chosen
    if type(chosen) is str and chosen in offered:
        row["chosen"] = chosen
    if type(answer.model) is str:
        row["model"] = answer.model
    if _finite(answer.confidence):
        row["confidence"] = float(answer.confidence)
    if _finite(answer.latency_ms):
        row["latency_ms"] = float(answer.latency_ms)
    usage = answer.usage
    if usage is not None:
        row["usage"] = {str(k): int(v) for k, v in usage.items() if type(v) is int}


def _missed_last(scope: TrackedScope) -> bool:
    rows = scope.get("tool_choices") or ()
    for row in reversed(rows):
        if row["kind"] == "outcome":
            return "miss" in row
    return False


def _file(scope: TrackedScope, row: dict[str, Any]) -> None:
    """Append a row built here of plain JSON (names, finite scores, ints, the classifier's
    own strings): handed over to the log as is."""
    extend_built(scope, "tool_choices", [row])


def _criterion(cfg: AgentConfig, name: str) -> ClassifyCriterion:
    known: dict[str, ClassifyCriterion] = cfg.tool_choice.criteria
    criterion = known.get(name)
    if criterion is None:
        tool = cfg.tools.get(name)
        description = "" if tool is None else tool.description
        criterion = known[name] = ClassifyCriterion(name, description)
    return criterion
