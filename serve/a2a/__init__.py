"""Hosting an agent over A2A with the official ``a2a-sdk``: its agent card, tasks and
streaming, mapped onto trackway runs in a store (``pip install 'trackway[a2a]'``).

Imports: ``trackway.serve`` and below.
"""

__all__: list[str] = []
