"""The pages of the live viewer: the runs of a store, and a run's page, which is the one-file
viewer's page (``trackway._viewer``: the chart, the commits, the state at any commit, the
narrative and the model calls) with a live part added: how the run stands, its commits as
they arrive, and a paused run's question.

Every value reaches the page as JSON in a ``<script type="application/json">`` element
(``<`` written as ``\\u003c``) and is shown with ``textContent``: never as markup.
"""

from __future__ import annotations

import re
from html import escape
from importlib import resources
from typing import Any

import orjson

from trackway._viewer import render_page
from trackway.engine import thaw

__all__ = ["run_page", "runs_page"]

_VIEWER_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"
)
_LIVE_CSP = (
    "default-src 'none'; connect-src 'self'; style-src 'unsafe-inline'; "
    "script-src 'unsafe-inline'; img-src data:"
)

_LIVE = """<div id="live">
  <a href="{runs}">all runs</a>
  <span>now: <span id="live-status"></span></span>
  <span class="note" id="live-note"></span>
</div>
<section id="question" hidden>
  <h2 id="question-text"></h2>
  <p class="note" id="question-where"></p>
  <pre id="question-payload"></pre>
  <form id="answer-form" autocomplete="off">
    <label for="answer-value">Your answer (JSON; text that is not JSON is sent as a string)</label>
    <textarea id="answer-value" rows="2"></textarea>
    <button id="answer-send" type="submit">Answer</button>
    <span class="note" id="answer-note"></span>
    <p id="answer-result"></p>
  </form>
</section>
"""


def _asset(name: str) -> str:
    return resources.files("trackway.serve.ui").joinpath(name).read_text(encoding="utf-8")


def _json(doc: Any) -> str:
    return orjson.dumps(doc, default=thaw).decode().replace("<", "\\u003c")


def runs_page(title: str) -> str:
    """The runs page: filters and a table the script fills from ``api/runs``."""
    viewer_css = resources.files("trackway").joinpath("_viewer.css").read_text(encoding="utf-8")
    parts = {
        "title": escape(title),
        "css": viewer_css + _asset("_ui.css"),
        "js": _asset("_runs.js"),
    }
    return _PLACEHOLDER.sub(lambda m: parts[m[1]], _asset("_runs.html"))


_PLACEHOLDER = re.compile(r"\{\{(title|css|js)\}\}")


def run_page(data: dict[str, Any], svg: str, live: dict[str, Any]) -> str:
    """A run's page: the viewer's page for ``data``/``svg`` as the store holds the run now,
    allowed to talk to this server (``connect-src 'self'``), with the live part and its
    script. ``live`` names the events and answer URLs and whether answering is possible."""
    page = render_page(data, svg)
    assert _VIEWER_CSP in page  # the viewer's policy, widened to this server only
    page = page.replace(_VIEWER_CSP, _LIVE_CSP, 1)
    # The viewer's page escapes every "<" in its data, so these markers occur once, as ours.
    head, _, rest = page.partition("<main>")
    page = head + _LIVE.format(runs=escape(live["runs"])) + "<main>" + rest
    extra = (
        f"<style>{_asset('_ui.css')}</style>"
        f'<script type="application/json" id="live-data">{_json(live)}</script>'
        f"<script>{_asset('_run.js')}</script>"
    )
    head, _, tail = page.rpartition("</body>")
    return head + extra + "</body>" + tail
