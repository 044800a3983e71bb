"""The ``offer`` stage: what a model call is offered, decided before it. With skills it first
moves the skill cursor and commits the call's system pieces (:mod:`._serve_skills`); then it
offers the tools (the agent's, each provider's choice, the skills' and the doors), narrowed
by the classifier's pick under ``.tool_choice`` (:mod:`._tool_choice`). One stage per call:
a stage per call costs about as much as the work it does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from trackway.engine import Scope, thaw
from trackway.engine.run._scope import TrackedScope
from trackway.tools.define._providers import offered_tools

from ..context._config import AgentConfig
from ..context._config import emit as _emit
from ..context._findings import FINDINGS_ARGUMENT, findings_property, offered_ids
from ..context._state_view import PROVIDER_KEYS, StateView
from ._findings_judge import judge_results
from ._offered import offered_now
from ._serve_skills import serve_skills
from ._tool_choice import choose

__all__ = ["ToolSpecs", "first_offer", "offer_stage"]


class ToolSpecs:
    """Each tool's spec as the model sees it, made once (it is fixed by the definition);
    the doors of an agent's skills included."""

    def __init__(self, cfg: AgentConfig) -> None:
        self._cfg = cfg
        self._made: dict[str, dict[str, Any]] = {}

    def __call__(self, name: str) -> dict[str, Any]:
        spec = self._made.get(name)
        if spec is None:
            tool = self._cfg.tools.get(name)
            if tool is None:
                tool = self._cfg.skills.doors[name]
            spec = self._made[name] = tool.spec()
        return spec


def first_offer(cfg: AgentConfig) -> list[str]:
    """What the ``tools`` stage offers at the start of a run: the agent's tools, every
    skill's (none yet under ``skill_scoped_tools``), the doors."""
    names = list(cfg.registered)
    if cfg.skills is not None:
        if not cfg.skills.scoped:
            names += [n for n in cfg.skills.tools if n not in names]
        names += list(cfg.skills.doors)
    return names


def _offered_names(cfg: AgentConfig, scope: TrackedScope) -> list[str]:
    """The registered tools, each provider's choice over the committed state, then the
    skills' tools (only the active skill's, when scoped) and the doors."""
    view = StateView(scope, PROVIDER_KEYS)
    names = list(cfg.registered)
    for provider in cfg.providers:
        names += [t.name for t in offered_tools(provider, view) if t.name not in names]
    skills = cfg.skills
    if skills is not None:
        if skills.scoped:
            cursor = scope.get("skill_cursor")
            active = None if cursor is None else cursor["skill"]
            owned = () if active is None else skills.skills[active].tools
            names += [t.name for t in owned if t.name not in names]
        else:
            names += [n for n in skills.tools if n not in names]
        names += [n for n in skills.doors if n not in names]
    return names


def _write_offer(cfg: AgentConfig, specs: ToolSpecs, scope: TrackedScope, names: list[str]) -> None:
    """Commit ``names``' specs as the call's ``tools`` when they differ from what is
    committed (with ``.findings()``, each bound to the results nameable now)."""
    if not cfg.findings:  # a name stands for its spec: compare the names only
        committed, now, _ = offered_now(scope, id(cfg))
        if committed is not None and now == names:
            return
        served = [specs(name) for name in names]
    else:
        plan = cfg.findings_plan
        piece = plan is None or plan.piece
        both = piece and cfg.evidence is not None  # towers are recorded: the model is told
        prop = findings_property(*offered_ids(scope), assertions=piece, contingent=both)
        served = []
        for name in names:
            spec = dict(specs(name))
            schema = spec["input_schema"]
            properties = {**(schema.get("properties") or {}), FINDINGS_ARGUMENT: prop}
            spec["input_schema"] = {**schema, "properties": properties}
            served.append(spec)
    if thaw(scope.get("tools", [])) != served:
        scope["tools"] = served
        _emit(scope, "tools.offered", {"iteration": scope["iteration"], "names": names})


def offer_stage(cfg: AgentConfig, specs: ToolSpecs) -> Callable[[Scope], Any]:
    """The ``offer`` stage function of one agent: sync when it only offers tools, async
    when it moves the skill cursor or asks a classifier."""

    def offer(given: Scope) -> None:
        scope = cast(TrackedScope, given)  # the engine's scope: native calls
        _write_offer(cfg, specs, scope, _offered_names(cfg, scope))

    async def offer_call(given: Scope) -> None:
        scope = cast(TrackedScope, given)  # the engine's scope: native calls
        receipts = scope.get("receipts")
        k = 1 if receipts is None else len(receipts) + 1  # the call about to be made
        if cfg.skills is not None:
            await serve_skills(cfg, scope, k)
        if judged:  # the judge reads what landed since the last call, before this one
            await judge_results(cfg, scope)
        if cfg.offers_per_call or cfg.findings:
            names = _offered_names(cfg, scope)
            if cfg.tool_choice is not None:
                names = await choose(cfg, scope, names, k)
            _write_offer(cfg, specs, scope, names)

    judged = cfg.findings and cfg.findings_plan is not None and cfg.findings_plan.judge is not None
    plain = cfg.skills is None and cfg.tool_choice is None and not judged
    return offer if plain else offer_call
