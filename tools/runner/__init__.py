"""trackway.tools.runner: a tool that runs the model's code. ``code_runner_tool`` over a
``CodeRunner`` port; ``local_code_runner`` runs Python in a subprocess with limits (time,
memory, output, no inherited secrets, a fresh working directory), stages redeemed artifacts
as files listed in ``TRACKWAY_STAGED_INPUTS``, and keeps one interpreter per conversation
through tool sessions.

Imports: ``results``, ``define``, ``artifacts`` and the engine.
"""

__all__: list[str] = []
