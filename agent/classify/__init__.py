"""The classifier port: a second reader of one choice (which tool, which skill to enter),
asked by a stage and filed on the record, so a replay reads the answer instead of asking
again. ``Classifier`` is the interface; ``mock_classifier`` and ``provider_classifier`` are
its adapters.

Imports: ``providers`` and ``messages`` (and the engine).
"""
