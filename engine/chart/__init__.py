"""Declaring a chart: the fluent builder, branch builders, its checks, declared contracts, and the
built, immutable :class:`FlowChart` with its nodes.

Imports: ``core`` and ``observe``. A stage function's parameter is the :class:`Scope` interface
defined here; ``run`` implements it.
"""
