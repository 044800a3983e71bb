"""``Agent.override``: swap an agent's provider (and model) for the length of a ``with``.

For tests of code that builds its agent somewhere you cannot reach: the application's agent
keeps its tools, prompts and chart, and runs inside the block ask the test's provider
(``trackway.testing.TestModel()``, ``mock(...)``) instead of the real one. The provider and
model are restored when the block ends, also when it ends with an error. The swap is the
agent's own: every run of this agent inside the block uses it, from whichever task.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ..messages._errors import AgentBuildError, RunInFlightError
from ..providers._provider import Provider

if TYPE_CHECKING:
    from ..context._config import AgentConfig

__all__ = ["override"]


@contextmanager
def override(
    cfg: AgentConfig, running: bool, provider: Provider, model: str | None
) -> Iterator[None]:
    """Swap ``cfg.provider`` (and ``cfg.model``) until the block ends.

    The model inside the block: ``model`` when given, else the one ``provider`` names, else
    the agent's own (a ``mock(...)`` or ``TestModel()`` names none).
    """
    if running:
        raise RunInFlightError(
            f"agent {cfg.name!r} is running a turn: override(...) swaps the provider of every "
            "run, so enter it before the run starts (and leave it after the run ends)"
        )
    if not callable(getattr(provider, "complete", None)):
        raise AgentBuildError(
            f"override(provider={provider!r}): a provider has an async complete(request) "
            "method, e.g. mock('hi') or trackway.testing.TestModel()"
        )
    if model is not None and (not isinstance(model, str) or not model):
        raise AgentBuildError(f"override(model={model!r}): use a model name (a non-empty str)")
    saved = cfg.provider, cfg.model
    own = getattr(provider, "model", None)
    cfg.provider = provider
    cfg.model = model or (own if isinstance(own, str) and own else cfg.model)
    try:
        yield
    finally:
        cfg.provider, cfg.model = saved
