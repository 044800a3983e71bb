"""``model_gateway(fn)``: a provider made from a user function, for in-house gateways.

The function takes the neutral :class:`LLMRequest` and returns an :class:`LLMResponse` (or
a dict of its fields), sync or async. What it returns is checked whole: anything that is not
a response is refused as a :class:`ProviderResponseError`, so a gateway gets the receipts
and the conformance law of every other provider.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from ...messages._messages import LLMRequest, LLMResponse
from .._provider import (
    ProviderConfigError,
    ProviderConnectionError,
    ProviderError,
    ProviderResponseError,
)
from .._structured import NativeOutput

__all__ = ["ModelGateway", "model_gateway"]


class ModelGateway:
    """A provider that hands each request to a function (see :func:`model_gateway`)."""

    def __init__(
        self,
        fn: Callable[[LLMRequest], Any],
        *,
        name: str = "gateway",
        native_output: NativeOutput | None = None,
    ) -> None:
        if not callable(fn):
            raise ProviderConfigError(
                f"model_gateway(fn) takes a function of the request, not {fn!r}"
            )
        if not isinstance(name, str) or not name:
            raise ProviderConfigError(f"model_gateway(..., name={name!r}) needs a name")
        self.fn = fn
        self.name = name
        if native_output is not None:  # the gateway honours the request's structured output
            self.native_output = native_output

    def __repr__(self) -> str:
        return f"<ModelGateway {self.name!r} fn={getattr(self.fn, '__qualname__', self.fn)!r}>"

    def describe_call(self, streamed: bool) -> dict[str, Any]:
        """How a call is made, for its receipt: the gateway's name and its function."""
        fn = getattr(self.fn, "__name__", type(self.fn).__name__)
        return {"provider": self.name, "gateway": str(fn), "stream": streamed}

    async def complete(self, request: LLMRequest) -> LLMResponse:
        try:
            answer = self.fn(request)
            if inspect.isawaitable(answer):
                answer = await answer
        except ProviderError:
            raise
        except (OSError, TimeoutError) as exc:
            raise ProviderConnectionError(
                f"gateway {self.name!r}: its function could not reach the model "
                f"({type(exc).__name__}: {exc}); check the gateway, or retry",
                quoted=(str(exc),),
            ) from exc
        except Exception as exc:
            raise ProviderResponseError(
                f"gateway {self.name!r}: its function raised {type(exc).__name__}: {exc}; "
                "raise a ProviderError subclass from it to say what failed",
                quoted=(str(exc),),
            ) from exc
        if type(answer) is LLMResponse or isinstance(answer, LLMResponse):
            return answer
        if isinstance(answer, Mapping):
            try:
                return LLMResponse.model_validate(dict(answer))
            except ValidationError as exc:
                raise ProviderResponseError(
                    f"gateway {self.name!r}: its function returned a dict that is not a "
                    f"response ({exc.error_count()} problems, first: "
                    f"{exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}); return an "
                    "LLMResponse or a dict of its fields (content, tool_calls, usage, ...)",
                    quoted=(),
                ) from exc
        raise ProviderResponseError(
            f"gateway {self.name!r}: its function returned {type(answer).__name__}, not a "
            "response; return an LLMResponse or a dict of its fields (content, tool_calls, "
            "usage, stop_reason, model)",
            quoted=(),
        )


def model_gateway(
    fn: Callable[[LLMRequest], Any],
    *,
    name: str = "gateway",
    native_output: NativeOutput | None = None,
) -> ModelGateway:
    """A provider made from ``fn(request) -> LLMResponse | dict`` (sync or async), for an
    in-house gateway: same receipts (``via`` names the gateway), same law.
    ``native_output`` (``"response_format"`` or ``"forced-tool"``) says the gateway honours
    the request's structured output that way, for ``output_schema(..., strategy="native")``."""
    return ModelGateway(fn, name=name, native_output=native_output)
