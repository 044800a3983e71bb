"""Declaring a chart: the fluent builder, branch builders, its checks, declared contracts, and the
built, immutable :class:`FlowChart` with its nodes.

Imports: ``core`` and ``observe``. Two protocols are defined here for what the layers above
provide: :class:`Scope` (``_scope_api``), the interface a stage function is written against,
which ``run`` implements; and :class:`BranchRunner` (``_runner``), where a fork's branches run
when not here, which ``ray_runner()`` in ``scale`` implements.
"""
