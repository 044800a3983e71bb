"""Beyond one process: workers that claim submitted runs from a PostgreSQL store, and fan-out on
Ray. The top engine layer.

Imports: every engine subpackage below it.
"""
