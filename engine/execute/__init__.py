"""Driving a run end to end: the :class:`Executor` (run, stream, fork, resume, recover), its sync
twins, the session it holds on a store, whether a checkpoint can be trusted, crash recovery and
how a run's end is told.

Imports: every engine subpackage below it (``core`` to ``stores``).
"""
