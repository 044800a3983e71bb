"""The ReAct loop as stages: the model call, one turn's tool dispatch (arguments, gates, a person
in the loop, parallel calls, what the model reads of a result, the repeated-call nudge,
coverage) and the inputs a run is given.

Imports: ``messages``, ``providers`` and ``context``.
"""
