"""Answers that show their ground: the evidence gate (every name and number in an answer
found in a tool result of the turn), answer validation under resource limits, claim
contracts, and the assessment folded from the committed record. Everything here reads
committed state; a verdict is committed, so a recording folds the same way in another
process.

Imports: ``middleware``, ``memory``, ``offer``, ``context`` and below (the ``loop``,
``runtime`` and ``rerun`` import this).
"""
