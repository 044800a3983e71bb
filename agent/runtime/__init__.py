"""The :class:`Agent` object a user holds: its builder, run / resume / continue, sync twins, hooks
and events, streaming, provider override, results, an agent as a tool, and the target a worker
drives.

Imports: every agent subpackage below it (``messages`` to ``loop``).
"""
