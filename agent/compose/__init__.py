"""Runners made of runners on one record (sequence, parallel, conditional, loop, and the
patterns ``swarm``, ``map_reduce`` and ``tree_of_thoughts``), and ``run_many`` over a data set.

Imports: ``runtime`` and the layers below it.
"""
