"""What an agent's last run recorded, read back: its snapshot (live during a run), its
commit count, and the ledgers a caller asks about (``stopped_early``, ``findings``,
``answer_coverage``, ``output_contract_unmet``, ``unsupported_values``). A part of
:class:`~._agent.Agent`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from trackway.engine import Commit, FlowChart, Recorder, RunStartEvent, Snapshot, thaw

from ..context._config import AgentConfig
from ..messages._errors import AgentNotRunError
from ..output._contract import unmet_view

if TYPE_CHECKING:
    from ..record._transcript import TranscriptCall

__all__ = ["LiveLog", "RunRecord"]


class LiveLog(Recorder):
    """Keeps the commits of the run in flight, so ``agent.snapshot()`` is live."""

    name = "agent-live-log"

    def __init__(self) -> None:
        self.run_id = ""
        self._input: Mapping[str, Any] = {}
        self.commits: list[Commit] = []

    @property
    def initial(self) -> dict[str, Any]:
        """The run's input, as plain values (thawed when asked: most runs never are)."""
        thawed: dict[str, Any] = thaw(self._input)
        return thawed

    def on_run_start(self, event: RunStartEvent) -> None:
        if event.seq == 0:
            if self.commits:
                self.commits = []
            self._input = event.input  # frozen values: kept as they are, never changed
        self.run_id = event.run_id

    def on_commit(self, commit: Commit) -> None:
        self.commits.append(commit)


class RunRecord:
    """The readers of the last run's record (mixed into ``Agent``)."""

    _cfg: AgentConfig
    _chart: FlowChart
    _live: LiveLog
    _running: bool
    _last: Snapshot | None
    _last_state: Mapping[str, Any] | None

    def snapshot(self) -> Snapshot:
        """The last run's snapshot; during a run, the commits so far."""
        if self._running:
            return Snapshot.from_commits(
                run_id=self._live.run_id,
                chart_id=self._chart.id,
                status="running",
                initial=self._live.initial,
                commits=list(self._live.commits),
            )
        if self._last is None:
            raise AgentNotRunError(
                f"agent {self._cfg.name!r} has not run yet, so it has no snapshot; call "
                "run(...) first"
            )
        return self._last

    def transcript(self) -> list[TranscriptCall]:
        """The last run's conversation as it was served, call by call: what each model call
        was served that the one before was not, what it answered, the usage reported."""
        from ..record._transcript import transcript

        return transcript(self.snapshot())

    def commit_count(self) -> int:
        if self._running:
            return len(self._live.commits)
        return 0 if self._last is None else len(self._last)

    def _state(self) -> Mapping[str, Any]:
        """The last run's state with real values (the snapshot may be redacted)."""
        if self._running or self._last_state is None:
            return self.snapshot().state
        return self._last_state

    def stopped_early(self) -> dict[str, Any] | None:
        """Why the last answer is not one the model finished (or ``None``): ``reason`` is
        ``"max-iterations"`` (the tool budget ran out) or ``"max-tokens"`` (cut at the token
        limit)."""
        value = self._state().get("stopped_early")
        return None if value is None else dict(thaw(value))

    def findings(self) -> list[dict[str, Any]]:
        """The last run's findings ledger (``.findings()``): ``basis``, ``standing`` and
        ``dropped`` rows in the order the model declared them, and the rows filed beside them
        (``conflict``, ``unsettled-by-absence``, ``contingent``, and a judge's ``judgment`` /
        ``judgment-error``); empty when nothing was filed. A reader that switches over the
        kinds skips one it does not know."""
        return [dict(row) for row in thaw(self._state().get("findings", []))]

    def answer_coverage(self) -> dict[str, Any] | None:
        """The limits of the last answer, as data (with ``.limits_travel_with_the_answer()``):
        ``checked``, ``not_checked``, ``cannot_cover``, and when present ``in_progress``,
        ``periods`` and ``assumed``; ``None`` when no tool declared a limit and nothing was
        assumed. The same entries a prose answer's block lists."""
        value = self._state().get("answer_coverage")
        return None if value is None else dict(thaw(value))

    def output_contract_unmet(self) -> dict[str, Any] | None:
        """How the last answer failed the output schema after every retry (``None``: it
        matched, or there is no schema), with every field: ``attempts`` (answers judged),
        ``retries_spent``, ``stage`` (``"json-parse"``, ``"schema-validate"``,
        ``"stop-reason"``), ``error`` (as the retry quoted it), ``path``, ``broken_by`` (the
        output link whose rewrite broke a valid answer), ``fallback_configured`` (a tier
        ``run_typed`` reaches and ``run`` never), ``stop_reason`` (native strategy); a field
        that does not apply is ``None``."""
        return unmet_view(self._state().get("output_contract_unmet"))

    def unsupported_values(self) -> dict[str, Any] | None:
        """The evidence gate's verdict on the last answer (``.names_and_numbers_from_evidence``):
        ``values`` no tool result of the turn carried (``value``, ``kind``, ``spellings``),
        ``candidates``, ``posture``, ``revised`` (a revision was asked and they survived),
        ``refused`` (withheld under ``rails``), ``corpus_truncated``; ``None`` when every value
        was grounded, and on an agent without the gate."""
        value = self._state().get("unsupported_values")
        return None if value is None else dict(thaw(value))
