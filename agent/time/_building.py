"""The part of the agent's builder that arms the time layer: ``.time(zone=, reader=,
policy=, messages=)``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Self

from trackway.engine import ConfigurationError
from trackway.tools.time import TimeReader, check_messages, check_policy, zone_of
from trackway.tools.time._reading import reader_info

from ..messages._errors import AgentBuildError
from ._layer import TimeLayer

__all__ = ["TimeBuilding"]


class TimeBuilding:
    """``.time(...)``."""

    _time_layer: TimeLayer | None = None

    def time(
        self,
        zone: str | None = None,
        reader: TimeReader | None = None,
        policy: Mapping[str, str] | None = None,
        messages: Mapping[str, str] | None = None,
    ) -> Self:
        """Give every run a clock: ``run(..., time={"now": ..., "zone": ...})`` declares
        when "now" is and the person's IANA zone; ``zone`` here is the fallback (a run with
        neither is refused: the server's zone is never used). Each turn commits a clock row,
        each tool call a dispatch-time row, and period lines are shown in the person's zone.
        ``reader`` (a :class:`~trackway.tools.TimeReader`) reads the person's message once
        per turn; ``policy`` (``date_order``, ``year``; ``"ask"`` by default) settles its
        candidates; ``messages`` rewords the time asks' refusals. Once per agent."""
        if self._time_layer is not None:
            raise AgentBuildError("time(...) was called twice; an agent has one clock")
        try:
            if zone is not None:
                zone_of(zone)
            checked_policy = check_policy(policy)
            checked_messages = check_messages(messages)
        except ConfigurationError as exc:
            raise AgentBuildError(f"time(...): {exc}") from None
        info = None
        if reader is not None:
            if not callable(getattr(reader, "read", None)):
                raise AgentBuildError(
                    f"time(reader={reader!r}): a TimeReader has id, version, locale, kind and "
                    "read(text)"
                )
            try:
                info = reader_info(reader)
            except TypeError as exc:
                raise AgentBuildError(str(exc)) from None
        self._time_layer = TimeLayer(
            zone=zone,
            reader=reader,
            policy=checked_policy,
            messages=checked_messages,
            reader_record=info,
        )
        return self
