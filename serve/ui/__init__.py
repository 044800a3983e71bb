"""The live viewer of a store (``trackway ui --store DB|DSN``): the runs with filters, a
run's page updating over server-sent events while it runs, and a paused run's question
answerable from the page.

Imports: ``trackway.serve`` and below.
"""

from ._app import ui_app as ui_app

__all__ = ["ui_app"]
