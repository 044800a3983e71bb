"""Runners made of runners on one record (sequence, parallel, conditional, loop), and ``run_many``
over a data set.

Imports: ``runtime`` and the layers below it.
"""
