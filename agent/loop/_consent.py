"""Credentials behind consent: before the first call of a run that needs a credential the
person has not yet answered for, the run pauses (kind ``consent``) and asks; the answer is
a ``consents`` row (which credential, for which call, granted or not), never the value. A
refused credential teaches the model with a result that names what was refused, and later
calls needing it are answered the same way without asking again in that run."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from trackway.engine import Scope, thaw
from trackway.tools import Identity, Tool

from ..context._config import AgentConfig
from ..context._config import emit as _emit
from ._served import Outcome

__all__ = [
    "CONSENTS_KEY",
    "MASK",
    "consent_needed",
    "consented",
    "fetch_credentials",
    "mask",
    "refused_text",
]

CONSENTS_KEY = "consents"
MASK = "[credential]"


def consent_needed(
    cfg: AgentConfig, scope: Scope, tool: Tool, call: Mapping[str, Any]
) -> tuple[dict[str, Any] | None, Outcome | None]:
    """The question for the first credential ``tool`` needs that the person has not
    answered for in this run, or (one they refused) the result the model reads instead."""
    answered = {row["credential"]: row["granted"] for row in scope.get(CONSENTS_KEY, ())}
    for name in tool.needs:
        if name not in answered:
            question = (
                f"May {tool.name} use your {name!r} credential for this conversation? "
                "Answer 'approve' or 'decline'."
            )
            return {"kind": "consent", "credential": name, "question": question}, None
        if not answered[name]:
            return None, Outcome("denied", refused_text(tool.name, name), (), {"consent": name})
    return None, None


def refused_text(tool: str, credential: str, note: str | None = None) -> str:
    """What the model reads of a call the person did not consent to (with what they said)."""
    why = f" They said: {note}" if note else ""
    return (
        f"Not run: the person did not consent to {tool} using their {credential!r} "
        "credential. Do not call tools that need it again in this conversation; tell the "
        f"person what could not be done without it.{why}"
    )


def consented(scope: Scope, pending: Mapping[str, Any], granted: bool) -> None:
    """File the person's answer to a consent question as a ``consents`` row (no value)."""
    call = pending["call"]
    row = {
        "credential": pending["credential"],
        "tool": call["name"],
        "id": call["id"],
        "iteration": pending["iteration"],
        "granted": granted,
    }
    scope.extend(CONSENTS_KEY, [row])
    _emit(scope, "credential.consent", row)


async def fetch_credentials(cfg: AgentConfig, tool: Tool, identity: Any) -> dict[str, str]:
    """The values of ``tool``'s credentials for this call, from the agent's
    ``.credentials(...)``, asked for the run's identity; held by the call's context only."""
    source = cfg.credentials
    who = None if identity is None else Identity.model_validate(thaw(identity))
    out: dict[str, str] = {}
    for name in tool.needs:
        if isinstance(source, Mapping):
            value = source.get(name)
        else:
            value = source(name, who)
            if inspect.isawaitable(value):
                value = await value
        if not isinstance(value, str) or not value:
            raise LookupError(
                f"the agent's credentials gave no value for {name!r} (got "
                f"{type(value).__name__}); return the credential as a non-empty str"
            )
        out[name] = value
    return out


def mask(text: str, secrets: Mapping[str, str]) -> str:
    """``text`` with every credential value in it replaced by a marker."""
    for value in secrets.values():
        if value in text:
            text = text.replace(value, MASK)
    return text
