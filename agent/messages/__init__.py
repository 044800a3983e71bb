"""The agent's vocabulary: provider-neutral messages and their canonical bytes, tool-call ids,
payload readers, conversations, usage, ``Paused``, redaction policies for conversations, member
names, and the agent layer's errors.

Imports: ``trackway.engine`` and ``trackway.tools`` only.
"""
