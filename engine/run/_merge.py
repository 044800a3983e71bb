"""Merging parallel branches: net effects per branch, combined in declaration order."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from ..chart._chart import MergePolicy
from ..core._commit import Commit, Write, write_value
from ..core._errors import MergeConflictError
from ..core._state import DELETED, MISSING, StateStore, fold_ops
from ..core._values import encode_value, to_bytes

__all__ = ["BranchResult", "Effect", "merge_ops", "net_effects"]


class Effect(NamedTuple):
    """What one branch did to one key, net: appended ``items``, or left it at ``final``."""

    appended: list[Any] | None
    final: Any  # a value, or DELETED


class BranchResult(NamedTuple):
    key: str
    frame: str
    store: StateStore
    commits: Sequence[Commit]


def net_effects(branch: BranchResult) -> dict[str, Effect]:
    """Per key the branch wrote (in first-write order): pure appends or its final value."""
    per_key: dict[str, list[Write]] = {}
    for c in branch.commits:
        if c.frame == branch.frame:
            for op in c.writes:
                per_key.setdefault(op[1], []).append(op)
    out: dict[str, Effect] = {}
    for key, ops in per_key.items():
        final = branch.store.get(key)
        final = DELETED if final is MISSING else final
        if all(op[0] == "append" for op in ops):
            items = [item for op in ops for item in write_value(op)]
            out[key] = Effect(items, final)
        else:
            out[key] = Effect(None, final)
    return out


def _op_for(key: str, effect_value: Any) -> Write:
    if effect_value is DELETED:
        return ("delete", key, b"null", None)
    return ("set", key, to_bytes(effect_value), effect_value)


def _append_op(key: str, items: list[Any]) -> Write:
    return ("append", key, to_bytes(items), items)


def merge_ops(
    policy: MergePolicy,
    branches: Sequence[BranchResult],
    parent: StateStore,
    stage_path: str,
) -> list[Write]:
    """The ops of the merge commit. Depends only on declaration order, never on timing."""
    effects = [(b.key, net_effects(b)) for b in branches]
    ops: list[Write] = []
    if policy == "namespace":
        for bkey, eff in effects:
            values = {k: e.final for k, e in eff.items() if e.final is not DELETED}
            data, owned = encode_value(values, bkey, stage_path)
            ops.append(("set", bkey, data, owned))
        return ops
    contrib: dict[str, list[tuple[str, Effect]]] = {}
    for bkey, eff in effects:
        for key, e in eff.items():
            contrib.setdefault(key, []).append((bkey, e))
    reducers: Mapping[str, Callable[[Any, Any], Any]] = (
        policy if isinstance(policy, Mapping) else {}
    )
    for key, cs in contrib.items():
        if key in reducers:
            ops.append(_reduce(key, cs, reducers[key], stage_path))
        elif all(e.appended is not None for _, e in cs):
            items = [item for _, e in cs for item in (e.appended or ())]
            ops.append(_append_op(key, items))
        elif len(cs) == 1:
            ops.append(_op_for(key, cs[0][1].final))
        elif policy == "last":
            ops.append(_op_for(key, _apply_in_order(parent.get(key), key, cs)))
        else:
            names = [b for b, _ in cs]
            raise MergeConflictError(
                f"parallel branches {', '.join(map(repr, names))} at {stage_path!r} all wrote "
                f"{key!r} and the merge policy is 'error_on_conflict'; give each branch its own "
                f"key, or declare merge='last', merge='namespace' or merge={{{key!r}: reducer}}",
                stage_path=stage_path,
                key=key,
                branches=names,
            )
    return ops


def _apply_in_order(current: Any, key: str, cs: list[tuple[str, Effect]]) -> Any:
    ops: list[Write] = []
    for _, e in cs:
        if e.appended is not None:
            ops.append(_append_op(key, e.appended))
        else:
            ops.append(_op_for(key, e.final))
    value = fold_ops(current, ops, in_place=False)
    return value if value is not MISSING else DELETED


def _reduce(
    key: str, cs: list[tuple[str, Effect]], reducer: Callable[[Any, Any], Any], stage_path: str
) -> Write:
    acc: Any = MISSING
    for _, e in cs:
        if e.final is DELETED:
            continue
        acc = e.final if acc is MISSING else reducer(acc, e.final)
    if acc is MISSING:
        return ("delete", key, b"null", None)
    data, owned = encode_value(acc, key, stage_path)
    return ("set", key, data, owned)
