"""``AgentResult``: one turn's answer with what a caller needs to trust it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trackway.engine import Snapshot, thaw

from ..messages._messages import Message
from ..messages._paused import Paused
from ..messages._usage import RunUsage, run_usage
from ..middleware._message_doors import DENIED_KEY

if TYPE_CHECKING:
    from ..record._transcript import TranscriptCall

__all__ = ["AgentResult", "result_of"]


@dataclass(frozen=True)
class AgentResult:
    """What ``agent.run_result(...)`` returns: the answer, and how far to trust it.

    ``stopped_early`` is ``None`` for an answer the model finished; otherwise its
    ``reason`` says why it is not: ``"max-iterations"`` (the tool budget ran out) or
    ``"max-tokens"`` (the answer was cut at ``max_tokens``). ``usage`` sums the tokens the
    provider reported and counts the calls it did not report (``usage.complete``).
    """

    output: str
    usage: RunUsage
    messages: tuple[Message, ...]
    """The conversation as the model saw it, with the answer last."""
    run_id: str
    snapshot: Snapshot
    stopped_early: Mapping[str, Any] | None
    paused: Paused | None = None
    """The question the run waits on (``output`` is then ``""``): resume it."""
    tool_errors: tuple[Mapping[str, Any], ...] = ()
    """The ``tool_results`` rows of calls that raised or were refused before they ran
    (unknown tool, invalid arguments): each has ``error = {kind, type, message}``. The model
    read each as an error and the run went on; this is where a developer sees them."""

    def all_messages(self) -> tuple[Message, ...]:
        """The conversation as the model saw it, with the answer last (pydantic-ai's name
        for :attr:`messages`)."""
        return self.messages

    def transcript(self) -> list[TranscriptCall]:
        """This turn's model calls: what each was served anew, what it answered, usage."""
        from ..record._transcript import transcript

        return transcript(self.snapshot)

    @property
    def cut_at_max_tokens(self) -> bool:
        """The answer was cut by the token limit (it may end mid-sentence)."""
        stopped = self.stopped_early or {}
        return stopped.get("reason") == "max-tokens" or bool(
            stopped.get("answer_cut_at_max_tokens")
        )


def result_of(
    snapshot: Snapshot, state: Mapping[str, Any] | None = None, paused: Paused | None = None
) -> AgentResult:
    """The result of the turn recorded in ``snapshot`` (``state``: its real values when the
    snapshot is redacted; ``paused``: the question it waits on, with no answer yet)."""
    state = snapshot.state if state is None else state
    answer = str(state.get("final_answer", ""))
    # a message an input link refused was never admitted: no history
    history = [Message.model_validate(m) for m in thaw(state.get("history", ()))]
    if paused is None and DENIED_KEY not in state:  # a denied run hands back no answer
        history.append(Message(role="assistant", content=answer))
    stopped = state.get("stopped_early")
    return AgentResult(
        output=answer,
        usage=run_usage(thaw(state.get("receipts", []))),
        messages=tuple(history),
        run_id=snapshot.run_id,
        snapshot=snapshot,
        stopped_early=None if stopped is None else dict(thaw(stopped)),
        paused=paused,
        tool_errors=tuple(
            dict(row) for row in thaw(state.get("tool_results", [])) if "error" in row
        ),
    )
