"""What a provider reads off the wire, per vendor: stream assembly kept apart from the
request building and error mapping in the provider modules.

Imports: ``messages`` and the providers' reading helpers (``_thinking``); the provider
modules import this."""

from ._anthropic_stream import AnthropicStream as AnthropicStream
from ._anthropic_stream import anthropic_stop_reason as anthropic_stop_reason
from ._anthropic_stream import anthropic_usage as anthropic_usage

__all__ = ["AnthropicStream", "anthropic_stop_reason", "anthropic_usage"]
