"""Typed answers: parsing an answer into the output schema (``parse_output``), the
three-tier fallback chain (primary, fallback, canned) with each step recorded, the full
``output_contract_unmet`` report, and the ``native`` strategy that asks the provider for
structured output.

Imports: ``grounding``, ``middleware`` and below (the ``loop``, ``runtime`` and ``rerun``
import this).
"""
