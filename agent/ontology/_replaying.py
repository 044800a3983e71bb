"""The map in a replay: the run constant ``ontology`` holds the whole declaration, so a replay
declares it again from the record (the same hash) with the ask ``settings["ontology"]``
names; no code of the application is needed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._spec import define_ontology

__all__ = ["replay_ontology"]


def replay_ontology(
    builder: Any, settings: Mapping[str, Any], recorded: Mapping[str, Any] | None
) -> None:
    """Arm a replay's builder with the recorded map (``recorded``: the run constant, plain),
    when the run had one."""
    if recorded is None or not settings.get("ontology"):
        return
    builder.ontology(define_ontology(**recorded["spec"]), ask=settings["ontology"]["ask"])
