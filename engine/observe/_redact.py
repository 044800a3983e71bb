"""Redaction: one funnel between the live run and everything it leaves behind.

The running stages always see real values. Everything retained — commits handed to
recorders and stores, snapshots, events, and through them narratives and recordings — passes
through one :class:`Redactor`. A whole key's writes become a single ``set`` of the marker
(so replaying a redacted log gives the marker, never a half-hidden value); ``fields`` mask
dot-paths inside a value (through lists, element by element). Checkpoints keep real values
by default, because resuming needs them; ``redact_checkpoints=True`` masks them too, and such
a checkpoint can no longer be resumed. ``errors=True`` hides error text as well: what an
exception says can quote anything the run saw (a server echoing the request, a tool naming
a card number), so a commit, ``snapshot.error`` and the events keep the error's type and the
marker, or the error's own words with the outside text it quotes masked (``quoted``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..core._commit import Commit, Emitted, ErrorInfo, Op, Write, write_value
from ..core._detail import CommitDetail, Condition, DecisionEvidence, RuleEvidence
from ..core._errors import ConfigurationError
from ..core._state import MISSING
from ..core._values import FrozenDict, FrozenList, freeze, thaw, to_bytes
from ._hidden_values import HiddenValues
from ._seal import Seal

__all__ = ["MARKER", "RedactionPolicy", "Redactor"]

MARKER = "[REDACTED]"
_WHOLE, _FIELDS = "whole", "fields"


@dataclass(frozen=True)
class RedactionPolicy:
    """What to hide from retained surfaces.

    ``keys``: state keys hidden whole. ``patterns``: regular expressions; a key any of them
    matches (``re.search``) is hidden whole. ``fields``: ``{key: ["a.b", ...]}`` dot-paths
    hidden inside a key's value. ``emits``: patterns on event names whose payload is hidden;
    ``emit_fields``: ``{pattern: ["a.b", ...]}`` dot-paths hidden inside the payloads of the
    events a pattern matches. ``errors``: hide error text too (see below).
    """

    keys: Sequence[str] = ()
    patterns: Sequence[str | re.Pattern[str]] = ()
    fields: Mapping[str, Sequence[str]] = field(default_factory=dict)
    emits: Sequence[str | re.Pattern[str]] = ()
    redact_checkpoints: bool = False
    marker: str = MARKER
    pauses: bool = False
    """Hide pause payloads and resume values too (they can quote what a stage hid: a
    question, a call's arguments, a person's answer): in commits, recorder events, the
    store's copy of the checkpoint and the answer a claim keeps. The checkpoint a run
    returns keeps the real payload; ``recover`` is not offered under a policy anyway."""
    emit_fields: Mapping[str, Sequence[str]] = field(default_factory=dict)
    errors: bool = False
    """Hide what errors say too (an error's text can quote what a stage hid: a server that
    echoes the request, a tool that names the card it refused). Every retained surface
    (commits, ``snapshot.error``, the store's run row, recorder events, recordings) keeps
    the error's type and, for its message, the marker; an error that names the parts of
    its message quoting outside text (``TrackwayError.quoted``) keeps its own words with
    those parts masked. The exception raised to the caller keeps the real message on its
    ``__cause__`` (the live run sees real values)."""

    def __post_init__(self) -> None:
        for name in ("keys", "patterns", "emits"):
            if isinstance(getattr(self, name), str):
                raise ConfigurationError(
                    f"RedactionPolicy({name}=...) takes a list, not a single str"
                )
        for name in ("fields", "emit_fields"):
            for key, paths in getattr(self, name).items():
                if isinstance(paths, str):
                    raise ConfigurationError(
                        f"RedactionPolicy({name}={{{key!r}: ...}}) takes a list of paths"
                    )


class Redactor:
    """Applies a :class:`RedactionPolicy`; verdicts per key are cached. ``seal``: the run's
    store seals the real values beside the redacted ones (``trackway.engine.observe._seal``)."""

    def __init__(self, policy: RedactionPolicy, seal: Seal | None = None) -> None:
        self.policy = policy
        self.seal = seal
        self.marker = policy.marker
        self._marker_bytes = to_bytes(policy.marker)
        self._keys = set(policy.keys)
        self._patterns = [re.compile(p) if isinstance(p, str) else p for p in policy.patterns]
        self._emits = [re.compile(p) if isinstance(p, str) else p for p in policy.emits]
        self._fields = {k: [p.split(".") for p in paths] for k, paths in policy.fields.items()}
        self._emit_fields = [
            (re.compile(pattern), [p.split(".") for p in paths])
            for pattern, paths in policy.emit_fields.items()
        ]
        self.masks_emits = bool(self._emits or self._emit_fields)
        self.errors = policy.errors
        self._verdicts: dict[str, str | None] = {}
        self._emit_verdicts: dict[str, str | list[list[str]] | None] = {}
        self._item_frames: list[str] = []  # for-each branches over a hidden key
        self.hidden: HiddenValues | None = None
        """Texts a stage marked hidden in this run (``hide_value``), masked everywhere."""

    def hide_value(self, text: str) -> None:
        """Mask ``text`` wherever a retained surface would keep it, from now on."""
        if self.hidden is None:
            self.hidden = HiddenValues(self.marker)
        self.hidden.add(text)

    def _unquoted(self, value: Any) -> Any:
        """``value`` with the marked texts masked (the same object when none is in it)."""
        hidden = self.hidden
        if hidden is None or isinstance(value, (int, float, bool)) or value is None:
            return value
        return hidden.mask(thaw(value)) if hidden.found_in(to_bytes(value)) else value

    def verdict(self, key: str) -> str | None:
        """``"whole"``, ``"fields"`` or ``None`` for a state key."""
        v = self._verdicts.get(key, "?")
        if v == "?":
            if key in self._keys or any(p.search(key) for p in self._patterns):
                v = _WHOLE
            elif key in self._fields:
                v = _FIELDS
            else:
                v = None
            self._verdicts[key] = v
        return v

    # -- values --------------------------------------------------------------------------

    def value(self, key: str, value: Any) -> Any:
        """The retained form of ``key``'s value."""
        v = self.verdict(key)
        if v is None:
            return value if self.hidden is None else self._unquoted(value)
        if v == _WHOLE:
            return self.marker
        return self._mask(thaw(value), key)

    def _mask(self, value: Any, key: str) -> Any:
        for path in self._fields[key]:
            value = _mask_path(value, path, self.marker)
        return value

    def _nested(self, value: Any) -> tuple[Any, bool]:
        """Mask entries named by a hidden key inside a value (e.g. a namespaced merge)."""
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            changed = False
            for k, item in value.items():
                if self.verdict(k) == _WHOLE:
                    out[k], changed = self.marker, True
                else:
                    out[k], inner = self._nested(item)
                    changed = changed or inner
            return (out, True) if changed else (value, False)
        if isinstance(value, list):
            items = [self._nested(item) for item in value]
            if any(c for _, c in items):
                return [i for i, _ in items], True
        return value, False

    def write(self, w: Write, also: tuple[str, ...] = ()) -> Write:
        """The retained form of a write; ``also`` names keys hidden in this commit only."""
        kept = self._write(w, also)
        hidden = self.hidden
        if hidden is None or kept[0] == "delete" or not hidden.found_in(kept[2]):
            return kept
        masked = hidden.mask(thaw(write_value(kept)))
        return (kept[0], kept[1], to_bytes(masked), masked)

    def _write(self, w: Write, also: tuple[str, ...]) -> Write:
        kind, key = w[0], w[1]
        v = _WHOLE if key in also else self.verdict(key)
        if kind == "delete":
            return w
        if v == _WHOLE:  # the value is never read: no decode
            return ("set", key, self._marker_bytes, self.marker)
        raw = write_value(w)
        if v is None:
            if not isinstance(raw, (dict, list, FrozenDict, FrozenList)):
                return w
            masked, changed = self._nested(thaw(raw))
            return (kind, key, to_bytes(masked), masked) if changed else w
        if kind == "append":
            masked = [self._mask(thaw(item), key) for item in raw]
        else:  # set, merge: mask the value (or the merged entries)
            masked = self._mask(thaw(raw), key)
        return (kind, key, to_bytes(masked), masked)

    def initial(self, initial: Mapping[str, bytes]) -> dict[str, Any]:
        """The run input as JSON values, redacted."""
        return {k: self.value(k, orjson.loads(v)) for k, v in initial.items()}

    def state(self, state: Mapping[str, Any]) -> dict[str, Any]:
        return {k: self.value(k, v) for k, v in state.items()}

    def emit_verdict(self, name: str) -> str | list[list[str]] | None:
        """``"whole"``, the dot-paths hidden in the payload, or ``None``, for an event name."""
        try:
            return self._emit_verdicts[name]
        except KeyError:
            pass
        v: str | list[list[str]] | None = None
        if any(p.search(name) for p in self._emits):
            v = _WHOLE
        else:
            paths = [path for p, found in self._emit_fields if p.search(name) for path in found]
            v = paths or None
        self._emit_verdicts[name] = v
        return v

    def emit_hidden(self, name: str) -> bool:
        return self.emit_verdict(name) == _WHOLE

    def payload(self, name: str, payload: Any) -> Any:
        """The retained form of an event's payload (the same object when nothing is hidden)."""
        v = self.emit_verdict(name)
        if v is None:
            kept = payload
        elif isinstance(v, str):  # "whole"
            return self.marker
        else:
            original = masked = thaw(payload)
            for path in v:
                masked = _mask_path(masked, path, self.marker)
            kept = payload if masked == original else masked
        return kept if self.hidden is None else self._unquoted(kept)

    def _event(self, event: Emitted) -> Emitted:
        name, data = event
        v = self.emit_verdict(name)
        hidden = self.hidden
        if hidden is not None and hidden.found_in(data):
            masked = self.payload(name, orjson.loads(data))
            return (name, to_bytes(masked))
        if v is None:
            return event
        if isinstance(v, str):  # "whole"
            return (name, self._marker_bytes)
        decoded = orjson.loads(data)
        masked = self.payload(name, decoded)
        return event if masked is decoded else (name, to_bytes(masked))

    # -- engine messages -------------------------------------------------------------------

    def error(self, info: ErrorInfo, exc: BaseException) -> ErrorInfo:
        """What a commit keeps of what a stage raised: a write to a hidden key is named, its
        value (which an engine message may quote) is not; under ``errors`` the message is
        masked (:meth:`error_text`)."""
        key = getattr(exc, "key", None)
        if not isinstance(key, str) or self.verdict(key) is None:
            return self.run_error(info, exc)
        return ErrorInfo(
            info.type,
            f"the write of {key!r} was refused ({info.type}); the message is withheld because "
            "the redaction policy hides this key's values",
        )

    def run_error(self, info: ErrorInfo, exc: BaseException) -> ErrorInfo:
        """What a run's outcome keeps of the error it ended with (masked under ``errors``)."""
        if not self.errors:
            said = self._unquoted(info.message)
            return info if said is info.message else ErrorInfo(info.type, said)
        return ErrorInfo(info.type, self.error_text(info.message, exc))

    def error_text(self, message: str, exc: BaseException) -> str:
        """An error's message as retained surfaces keep it under ``errors``: the marker, or,
        when the error names what its message quotes (``quoted``, each found in it), the
        message with those parts masked."""
        quoted = getattr(exc, "quoted", None)
        if not isinstance(quoted, tuple) or not all(
            isinstance(q, str) and q in message for q in quoted
        ):
            return self.marker
        parts = sorted({q for q in quoted if q}, key=len, reverse=True)  # the longest first
        if not parts:
            return message
        marker = self.marker
        return re.sub("|".join(map(re.escape, parts)), lambda _: marker, message)

    def _hides(self, key: str, also: tuple[str, ...]) -> bool:
        return key in also or self.verdict(key) is not None

    def hidden_path(self, path: str) -> bool:
        """A schema issue at ``path`` (dotted) concerns a key the policy hides."""
        return self.verdict(path.split(".", 1)[0]) is not None

    def hide_items(self, frame_prefix: str) -> None:
        """``item`` in the branch frames under ``frame_prefix`` came from a hidden key."""
        self._item_frames.append(frame_prefix)

    def event(self, hook: str, event: Any) -> Any:
        """A recorder's event (its ``hook``) with the state values it carries through the
        funnel: a read's value, a write, an emit's payload, a decision's evidence, the
        run's input."""
        if hook == "on_read":
            if event.value is MISSING:  # absent: nothing to hide
                return event
            if event.key == "item" and self.item_hidden(event.stage_path):
                return event._replace(value=self.marker)
            return event._replace(value=self.value(event.key, event.value))
        if hook == "on_write":
            return event._replace(op=Op._make(self.write(tuple(event.op))))
        if hook == "on_emit":
            kept = self.payload(event.name, event.payload)
            return event if kept is event.payload else event._replace(payload=freeze(kept))
        if hook == "on_decision":
            also = ("item",) if self.item_hidden(event.stage_path) else ()
            return event._replace(evidence=self.evidence(event.evidence, also))
        if hook == "on_run_start":
            return event._replace(input=self.state(event.input))
        return event

    def item_hidden(self, stage_path: str) -> bool:
        return any(stage_path.startswith(p) for p in self._item_frames)

    # -- sealed copies ---------------------------------------------------------------------

    def for_store(self, real: Commit) -> Commit:
        """What the store keeps of ``real`` (redacted; sealed beside, with a seal)."""
        retained = self.commit(real)
        return retained if retained is real else self.stored(real, retained)

    def stored(self, real: Commit, retained: Commit) -> Commit:
        """What the store keeps of a commit the policy changed: the redacted commit, with the
        real one sealed in it when the store has a seal."""
        if self.seal is None:
            return retained
        place = f"commit:{real.run_id}:{real.seq}"
        return retained._replace(sealed=self.seal.seal(real.to_bytes(slim=True), place))

    # -- records -------------------------------------------------------------------------

    def commit(self, c: Commit) -> Commit:
        """The retained form of a commit (the same object when nothing in it is hidden)."""
        # in a for-each branch over a hidden key, ``item`` is hidden like the key
        also = ("item",) if self._item_frames and self.item_hidden(c.stage_path) else ()
        writes = tuple(self.write(w, also) for w in c.writes)
        changed = any(a is not b for a, b in zip(writes, c.writes, strict=True))
        detail = self.detail(c.detail, also)
        emitted = c.emitted
        if (self.masks_emits or self.hidden is not None) and emitted:
            kept = tuple(self._event(e) for e in emitted)
            if any(a is not b for a, b in zip(kept, emitted, strict=True)):
                emitted = kept
        if not changed and detail is c.detail and emitted is c.emitted:
            return c
        return c._replace(writes=writes, detail=detail, emitted=emitted)

    def detail(
        self, detail: CommitDetail | None, also: tuple[str, ...] = ()
    ) -> CommitDetail | None:
        """Decision evidence quotes the values it read: hide the hidden ones (and, under
        ``pauses``, the pause payload and the resume value)."""
        if detail is None:
            return detail
        if self.hidden is not None:
            detail = self._unquoted(detail)
        if self.policy.pauses and ("pause" in detail or "resume" in detail):
            detail = dict(detail)  # type: ignore[assignment]
            if "pause" in detail:
                detail["pause"] = self.marker
            if "resume" in detail:
                detail["resume"] = {"value": self.marker}
        if "decision" not in detail:
            return detail
        evidence = self.evidence(detail["decision"], also)
        if evidence is detail["decision"]:
            return detail
        return {**detail, "decision": evidence}

    def pause_value(self, value: Any) -> Any:
        """A pause payload or resume value as retained surfaces keep it."""
        return self.marker if self.policy.pauses else self._unquoted(value)

    def evidence(self, evidence: DecisionEvidence, also: tuple[str, ...] = ()) -> DecisionEvidence:
        """The retained form of decision evidence (the same object when nothing is hidden)."""
        if not isinstance(evidence, Mapping) or not evidence.get("rules"):
            return evidence
        rules: list[RuleEvidence] = []
        touched = False
        for rule in evidence.get("rules", ()):
            conditions: list[Condition] = []
            for cond in rule.get("conditions", ()):
                if self._hides(cond.get("key", ""), also):
                    # what the rule compared against can be as telling as the value
                    cond = {**cond, "actual": self.marker, "expected": self.marker}
                    cond["redacted"] = touched = True
                conditions.append(cond)
            inputs: list[dict[str, Any]] = []
            for entry in rule.get("inputs", ()):
                if self._hides(entry.get("key", ""), also):
                    entry = {**entry, "value": self.marker, "redacted": True}
                    touched = True
                inputs.append(entry)
            kept: RuleEvidence = {**rule}
            if "conditions" in rule:
                kept["conditions"] = conditions
            if "inputs" in rule:
                kept["inputs"] = inputs
            rules.append(kept)
        if not touched:
            return evidence
        return {**evidence, "rules": rules}


def _mask_path(value: Any, path: list[str], marker: str) -> Any:
    if isinstance(value, list):
        return [_mask_path(v, path, marker) for v in value]
    if not isinstance(value, dict) or path[0] not in value:
        return value
    head, rest = path[0], path[1:]
    out = dict(value)
    out[head] = marker if not rest else _mask_path(value[head], rest, marker)
    return out
