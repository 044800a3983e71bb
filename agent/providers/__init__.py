"""The one provider interface and its implementations: the HTTP base (send, retry, read, report
every failure as a typed error), OpenAI-compatible and Anthropic providers, the scripted
``mock``, API-key scrubbing, the request options and ``"openai:..."`` model strings.

Imports: ``messages`` (and the engine and tools layers).
"""
