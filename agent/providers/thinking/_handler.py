"""The ``thinking`` stage: a user function normalises each model answer into its text and
its :class:`ThinkingBlock` reasoning (a vendor's ``<reasoning>`` tags, a JSON ``thoughts``
field), between ``call-llm`` and ``route``. Mounted only when ``.thinking_handler(fn)`` was
given.

The raw answer stays in ``call-llm``'s commit. When the handler changed the answer, the stage
commits the normalised ``response`` (what the route, the next request's history and
``checkpoint()`` read) and one row of ``thinking_normalised``: ``k`` (the call), ``handler``
(its name), ``chars_before`` / ``chars_after`` (the answer's text) and ``blocks_before`` /
``blocks_after``. An answer the handler left as it was writes nothing. A replay serves what
the recording's commits say the handler returned: no user code runs again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic import ValidationError

from trackway.engine import Scope, Snapshot, thaw

from ...messages._errors import ReplayDivergence, ThinkingHandlerError
from ...messages._messages import ThinkingBlock

__all__ = ["NORMALISED_KEY", "STAGE_ID", "ThinkingHandler", "recorded_handler", "thinking_stages"]

NORMALISED_KEY = "thinking_normalised"
"""The state key of the rows that say which answers a thinking handler changed."""

STAGE_ID = "thinking"
"""The id of the stage that runs the handler."""

Blocks = tuple[ThinkingBlock, ...]
HandlerFn = Callable[[str, Blocks], tuple[str, Sequence[ThinkingBlock]]]


class ThinkingHandler:
    """A user function ``fn(text, blocks) -> (text, blocks)`` and the name the record keeps
    for it; :meth:`normalise` checks what it returns."""

    def __init__(self, fn: HandlerFn, name: str) -> None:
        self.fn = fn
        self.name = name

    def normalise(self, text: str, blocks: Blocks, k: int) -> tuple[str, Blocks]:
        """What the handler makes of call ``k``'s answer, checked: a ``(str, blocks)``
        pair whose blocks are :class:`ThinkingBlock` (or dicts of one)."""
        try:
            out = self.fn(text, blocks)
        except (ThinkingHandlerError, ReplayDivergence):
            raise
        except Exception as exc:
            raise ThinkingHandlerError(
                f"thinking handler {self.name!r} raised {type(exc).__name__} on the answer of "
                f"model call {k}: {exc}. Fix the handler, or return (text, blocks) unchanged "
                "for an answer it cannot read",
                handler=self.name,
                k=k,
            ) from exc
        return self._checked(out, k)

    def _checked(self, out: object, k: int) -> tuple[str, Blocks]:
        fix = (
            "return a pair (text, blocks): the answer's text as a str and a list of "
            "ThinkingBlock(kind=..., text=...) (an empty list when there is no reasoning)"
        )
        if not isinstance(out, (tuple, list)) or len(out) != 2 or not isinstance(out[0], str):
            raise ThinkingHandlerError(
                f"thinking handler {self.name!r} returned {_shown(out)} for the answer of model "
                f"call {k}; {fix}",
                handler=self.name,
                k=k,
            )
        text, given = out
        if isinstance(given, (str, bytes)) or not isinstance(given, (tuple, list)):
            raise ThinkingHandlerError(
                f"thinking handler {self.name!r} returned blocks {_shown(given)} for the answer "
                f"of model call {k}; {fix}",
                handler=self.name,
                k=k,
            )
        blocks: list[ThinkingBlock] = []
        for block in given:
            if isinstance(block, ThinkingBlock):
                blocks.append(block)
                continue
            try:
                blocks.append(ThinkingBlock.model_validate(block))
            except ValidationError as exc:
                raise ThinkingHandlerError(
                    f"thinking handler {self.name!r} returned {_shown(block)} as a block for the "
                    f"answer of model call {k}, which is no ThinkingBlock "
                    f"({exc.errors()[0]['msg']}); {fix}",
                    handler=self.name,
                    k=k,
                ) from None
        return text, tuple(blocks)


def _shown(value: object) -> str:
    shown = repr(value)
    return shown if len(shown) <= 80 else shown[:77] + "..."


def thinking_stages(handler: ThinkingHandler | None) -> dict[str, Callable[..., Any]]:
    """The ``thinking`` stage function (none without a handler)."""
    if handler is None:
        return {}

    def thinking(scope: Scope) -> None:
        response = scope["response"]
        k = len(scope.get("receipts", []))
        text = response.get("content", "")
        before = tuple(ThinkingBlock.model_validate(b) for b in thaw(response.get("thinking", ())))
        after_text, after = handler.normalise(text, before, k)
        if after_text == text and after == before:
            return  # nothing changed: nothing written
        normalised = {k_: v for k_, v in thaw(response).items() if k_ != "thinking"}
        normalised["content"] = after_text
        if after:
            normalised["thinking"] = [b.model_dump(mode="json", exclude_none=True) for b in after]
        scope["response"] = normalised
        row = {
            "k": k,
            "handler": handler.name,
            "chars_before": len(text),
            "chars_after": len(after_text),
            "blocks_before": len(before),
            "blocks_after": len(after),
        }
        scope.append(NORMALISED_KEY, row)

    return {STAGE_ID: thinking}


def recorded_handler(snap: Snapshot, name: str) -> HandlerFn:
    """A stand-in that returns, call by call, what the recorded ``thinking`` commits say the
    handler returned (the answer unchanged where the stage wrote nothing): a replay runs no
    user code."""
    visits: list[tuple[str, Blocks] | None] = []
    for commit in snap.history():
        if commit.stage_id != STAGE_ID or commit.frame != "":
            continue
        written = None
        for op in commit.ops:
            if op.key == "response":
                value = thaw(op.value)
                blocks = tuple(ThinkingBlock.model_validate(b) for b in value.get("thinking", ()))
                written = (str(value.get("content", "")), blocks)
        visits.append(written)

    def served(text: str, blocks: Blocks) -> tuple[str, Blocks]:
        if not visits:
            raise ReplayDivergence(
                f"the replay ran thinking handler {name!r} more often than the recording did",
                stage_path=STAGE_ID,
                key="response",
            )
        written = visits.pop(0)
        return (text, blocks) if written is None else written

    return served
