"""The output model a replay without the agent judges with: a stand-in built from the
recording, which answers for each text the run judged with the verdict the run committed
(``output_judged``), for each value the fallback chain judged with its recorded row
(``output_fallback``, the canned value in ``settings``), and for the native strategy's schema
with the one the run sent (``settings["response_format"]``). A text or value the recording
never judged is a :class:`ReplayDivergence` naming the stage that judged it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import orjson

from trackway.engine import Snapshot, thaw

from ..messages._errors import ReplayDivergence
from ..output._chain import FALLBACK_KEY
from ..output._judged import JUDGED_KEY, text_digest
from ..output._verdict import Judged, Verdict

__all__ = ["recorded_model"]


def _verdict_of(row: Mapping[str, Any]) -> Verdict | None:
    if row.get("passed"):
        return None
    return Verdict(str(row["stage"]), str(row["error"]), row.get("path"), row.get("stop_reason"))


def _value_key(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


class _Recorded(Judged):
    """The stand-in's lookups (each replay builds a subclass holding its recording's)."""

    _texts: ClassVar[dict[str, Verdict | None]] = {}
    _values: ClassVar[dict[bytes, tuple[Verdict | None, Any]]] = {}
    _schema: ClassVar[dict[str, Any] | None] = None

    @classmethod
    def judged_text(cls, text: str, where: str | None = None) -> Verdict | None:
        digest = text_digest(text)
        if digest not in cls._texts:
            shown = text if len(text) <= 60 else f"{text[:57]}..."
            raise ReplayDivergence(
                f"the replay judged the answer {shown!r} (sha256 {digest[:16]}...) against "
                f"{cls.__name__}, which the recording never judged: a recorded answer was "
                "changed, or the run was not made this way",
                stage_path=where or "route",
                key=JUDGED_KEY,
            )
        return cls._texts[digest]

    @classmethod
    def judged_value(cls, value: Any) -> tuple[Verdict | None, Any]:
        try:
            return cls._values[_value_key(value)]
        except (KeyError, TypeError, orjson.JSONEncodeError):
            raise ReplayDivergence(
                f"the replay judged the value {value!r} against {cls.__name__}, which the "
                "recording's fallback chain never judged",
                stage_path="output-fallback",
                key=FALLBACK_KEY,
            ) from None

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The schema the run sent (native); a recording that sent none has no schema."""
        if cls._schema is None:
            raise ReplayDivergence(
                f"the replay asked for the JSON schema of {cls.__name__}, which the recording "
                "never sent",
                stage_path="seed",
                key="settings",
            )
        out: dict[str, Any] = thaw(orjson.loads(orjson.dumps(cls._schema)))
        return out


def recorded_model(snap: Snapshot, settings: Mapping[str, Any]) -> type[Judged]:
    """The stand-in for the output model of the recording ``snap`` (whose ``settings``
    record ``output_schema``), named as the model was."""
    texts: dict[str, Verdict | None] = {}
    for row in thaw(snap.state.get(JUDGED_KEY)) or ():
        texts.setdefault(row["answer"], _verdict_of(row))
    values: dict[bytes, tuple[Verdict | None, Any]] = {}
    chain = settings.get("output_fallback") or {}
    if chain.get("canned") is not None:  # validated at build: it matched
        values[_value_key(chain["canned"])] = (None, chain["canned"])
    for row in thaw(snap.state.get(FALLBACK_KEY)) or ():
        if row["tier"] != "fallback":
            continue
        if row["outcome"] == "passed":  # what the chain served is the value it judged
            values.setdefault(_value_key(row["value"]), (None, row["value"]))
        elif row["outcome"] == "invalid":
            values.setdefault(_value_key(row["returned"]), (_verdict_of(row), None))
    native = settings.get("response_format") if settings.get("output_strategy") else None
    name = str(settings["output_schema"]["model"])
    namespace = {
        "_texts": texts,
        "_values": values,
        "_schema": None if native is None else native["json_schema"]["schema"],
        "__qualname__": name,
        "__module__": __name__,
    }
    stand_in = type(name, (_Recorded,), namespace)
    assert issubclass(stand_in, Judged)
    return stand_in
