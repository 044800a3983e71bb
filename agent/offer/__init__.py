"""The ``offer`` stage: what each model call is offered, decided before it. With skills it
moves the skill cursor by the law and commits the call's system pieces; then it offers the
tools (the agent's, each provider's choice, the skills' and the doors), narrowed by a
classifier's pick under ``.tool_choice``. Every choice is written to the record, so
``served_at`` rebuilds the request and a replay reads the choices back.

Imports: ``context``, ``skills``, ``classify`` and below (the ``loop`` imports this).
"""
