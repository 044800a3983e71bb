"""What a run leaves behind and who may read it: redaction (one funnel between the live run and
every record), sealing (the hidden values kept encrypted at rest) and causal traces.

Imports: ``core`` only.
"""
