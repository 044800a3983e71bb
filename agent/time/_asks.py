"""Time asks on resume: an answer to a ``request_input(format=...)`` is checked before the
checkpoint is used. One the ask cannot take comes back as the same ask (a
:class:`~trackway.agent.Paused` with ``refused`` and ``repeat``) and nothing runs."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from trackway.engine import Checkpoint
from trackway.tools.time import check_time_answer

from ..messages._errors import InvalidAnswerError
from ..messages._paused import Paused
from ._layer import TimeLayer

__all__ = ["TimeAnswerRefusedError", "refused_ask"]

_REPEATS: OrderedDict[str, int] = OrderedDict()
"""Refused answers per paused checkpoint, in this process (the latest 4096 asks)."""


class TimeAnswerRefusedError(InvalidAnswerError):
    """A time ask did not take the answer; ``.paused`` is the same ask with ``refused`` and
    ``repeat``. ``agent.resume`` returns that ask instead of raising; the checkpoint was not
    used."""

    def __init__(self, message: str, paused: Paused) -> None:
        super().__init__(message)
        self.paused = paused


def refused_ask(layer: TimeLayer | None, checkpoint: Checkpoint, answer: Any) -> None:
    """Raise :class:`TimeAnswerRefusedError` when ``answer`` is one the time ask paused at
    ``checkpoint`` cannot take (its reason worded by ``.time(messages=)``)."""
    payload = checkpoint.payload
    fmt = payload.get("format")
    if payload.get("kind") != "request_input" or fmt is None:
        return
    messages = {} if layer is None else layer.messages
    strict = payload.get("choices") if payload.get("strict") else None
    refusal = check_time_answer(
        fmt, answer, zone=payload.get("zone"), messages=messages, choices=strict
    )
    if refusal is None:
        return
    key = checkpoint.checkpoint_id
    count = _REPEATS.pop(key, 0) + 1
    _REPEATS[key] = count
    while len(_REPEATS) > 4096:
        _REPEATS.popitem(last=False)
    paused = Paused(
        question=str(payload["question"]),
        kind=str(payload["kind"]),
        call=dict(payload["call"]),
        checkpoint=checkpoint,
        schema=payload.get("schema"),
        format=str(fmt),
        choices=payload.get("choices"),
        refused={"answer": refusal["answer"], "reason": refusal["reason"]},
        repeat={"count": count},
    )
    raise TimeAnswerRefusedError(
        f"the time ask of {payload['call'].get('name')} did not take {refusal['answer']!r}: "
        f"{refusal['reason']} The checkpoint was not used: resume it with another answer",
        paused,
    )
