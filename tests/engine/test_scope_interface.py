"""The :class:`Scope` protocol (what a stage function is written against, in the chart layer)
and :class:`TrackedScope` (the run layer's scope every stage gets) cannot drift apart: the same
public members, each with the same signature (parameter names, kinds and defaults), and the
same kind of member (a method, or a value read as an attribute).

Signatures are read from the two source files, so the check holds on the compiled build too,
where the class is a C extension beside its source. mypy --strict checks the types wherever
the engine passes its scope as a ``Scope``."""

from __future__ import annotations

import ast
from pathlib import Path
from types import ModuleType
from typing import Any

from trackway import Executor, Scope, flow_chart
from trackway.engine.chart import _scope_api
from trackway.engine.run import _scope
from trackway.engine.run._scope import TrackedScope

# what every object has, not part of what a stage may use
_MACHINERY = {"__init__", "__repr__", "__slots__"}

Param = tuple[str, str, str | None]  # name, kind, default (its source)
Member = tuple[str, tuple[Param, ...]]


def _source(module: ModuleType) -> Path:
    """The module's ``.py`` file (on the compiled build its ``__file__`` is the extension
    beside it)."""
    file = Path(module.__file__ or "")
    return file.parent / f"{module.__name__.rpartition('.')[2]}.py"


def _public(name: str) -> bool:
    return name not in _MACHINERY and (not name.startswith("_") or name.endswith("__"))


def _parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[Param, ...]:
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults))
    defaults += a.defaults
    out: list[Param] = []
    for i, (arg, default) in enumerate(zip(positional, defaults, strict=True)):
        kind = "positional-only" if i < len(a.posonlyargs) else "positional-or-keyword"
        out.append((arg.arg, kind, None if default is None else ast.unparse(default)))
    if a.vararg is not None:
        out.append((a.vararg.arg, "var-positional", None))
    for arg, kw_default in zip(a.kwonlyargs, a.kw_defaults, strict=True):
        shown = None if kw_default is None else ast.unparse(kw_default)
        out.append((arg.arg, "keyword-only", shown))
    if a.kwarg is not None:
        out.append((a.kwarg.arg, "var-keyword", None))
    return tuple(out[1:])  # self


def _members(module: ModuleType, class_name: str) -> dict[str, Member]:
    """Each public member of the class: ``("value", ())`` for a property or an attribute (a
    slot), ``("method" or "async method", parameters)`` for a method."""
    tree = ast.parse(_source(module).read_text())
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name]
    found: dict[str, Member] = {}
    for node in cls.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _public(node.name):
            decorators = {ast.unparse(d) for d in node.decorator_list}
            if "property" in decorators:
                found[node.name] = ("value", ())
            else:
                kind = "async method" if isinstance(node, ast.AsyncFunctionDef) else "method"
                found[node.name] = (kind, _parameters(node))
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__slots__" for t in node.targets
        ):
            slots = ast.literal_eval(node.value)
            found.update({s: ("value", ()) for s in slots if _public(s)})
    return found


def test_the_protocol_and_the_class_have_the_same_members_with_the_same_signatures() -> None:
    protocol = _members(_scope_api, "Scope")
    concrete = _members(_scope, "TrackedScope")
    # the members a stage function is documented to use are all there
    assert {"run_id", "stage_path", "get", "__getitem__", "__setitem__", "emit", "pause"} <= set(
        protocol
    )
    assert sorted(set(protocol) - set(concrete)) == [], "on the protocol, not on the class"
    assert sorted(set(concrete) - set(protocol)) == [], "on the class, not on the protocol"
    for name, member in protocol.items():
        assert concrete[name] == member, name


def test_the_imported_class_has_every_member_and_no_other_public_one() -> None:
    """The same at run time, on whichever build is imported (a compiled class included)."""
    protocol = _members(_scope_api, "Scope")
    for name in protocol:
        assert hasattr(TrackedScope, name), name
    public = {n for n in dir(TrackedScope) if not n.startswith("_")}
    assert public == {n for n in protocol if not n.startswith("_")}


def test_a_stage_gets_a_tracked_scope_that_is_a_scope() -> None:
    seen: list[Any] = []

    def stage(scope: Scope) -> None:
        seen.append(scope)
        scope["x"] = 1

    assert Executor(flow_chart("S", stage).build()).run_sync({}).state["x"] == 1
    (given,) = seen
    assert type(given) is TrackedScope and isinstance(given, Scope)
    assert not isinstance(object(), Scope)
