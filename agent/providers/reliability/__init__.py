"""Reliability around providers: a fallback chain with a retry policy and a circuit breaker
per provider (every decision kept in the receipt's ``via``), and ``model_gateway(fn)``, a
provider made from a user function (an in-house gateway)."""

from ._chain import CircuitOpenError as CircuitOpenError
from ._chain import FallbackProvider as FallbackProvider
from ._chain import transient as transient
from ._chain import with_fallback as with_fallback
from ._gateway import ModelGateway as ModelGateway
from ._gateway import model_gateway as model_gateway
from ._policy import CircuitBreaker as CircuitBreaker
from ._policy import RetryPolicy as RetryPolicy

__all__ = [
    "CircuitBreaker",
    "CircuitOpenError",
    "FallbackProvider",
    "ModelGateway",
    "RetryPolicy",
    "model_gateway",
    "transient",
    "with_fallback",
]
