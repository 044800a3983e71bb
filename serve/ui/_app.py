"""``ui_app(store)``: the live viewer of a whole store as a Starlette app.

Routes (every path below the app's root):

- ``GET /``: the runs, with filters (status, chart, since, text in the run id);
- ``GET /api/runs?status=&chart=&since=&q=&limit=``: the same as JSON;
- ``GET /runs/{run_id}``: a run's page (the one-file viewer's page, live);
- ``GET /api/events/{run_id}?after=N``: server-sent events of the run: ``status`` (how it
  stands, a paused run's question), ``commit`` (one per new commit, its ``id`` the commit's
  seq, so a reconnect with ``Last-Event-ID`` resumes after it) and ``end`` once it ended;
- ``POST /api/answer/{run_id}``: answer the question the run is paused on.

The store is opened read-only (a SQLite file: ``read_only=True``); only an answer writes.
An answer resumes the run in this process when its chart was given (``charts``), else, on
PostgreSQL, is recorded for a worker to resume (``store.answer``, as ``trackway answer``).
A POST must come from this app's own page: its ``Origin`` must be the app's own (or one of
``allowed_origins``) and its body JSON. There is no login: a local developer tool.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio.to_thread
from sse_starlette import EventSourceResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from trackway._cli_out import CommandFailed
from trackway._viewer_store import store_label, view_doc
from trackway.engine import (
    PostgresStore,
    RunStore,
    Seal,
    SqliteStore,
    TrackwayError,
    UnknownRunError,
)

from ._answer import Answerer
from ._pages import run_page, runs_page
from ._tail import commits_after, run_status

__all__ = ["ui_app"]

_ENDED = {"done", "failed", "cancelled", "canceled"}
_HEADERS = {
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def open_store(where: str, *, read_only: bool, seal: Seal | None = None) -> RunStore:
    """The store at ``where``: a ``postgresql://`` URL, else a SQLite file that must exist."""
    if where.startswith(("postgresql://", "postgres://")):
        return PostgresStore(where, seal=seal)
    return SqliteStore(Path(where), read_only=read_only, seal=seal)


def parse_since(text: str, now: float | None = None) -> float:
    """``since`` as seconds since the epoch: an age (``90s``, ``30m``, ``2h``, ``7d``) or an
    ISO date or date and time (UTC unless it says otherwise)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd])\s*", text)
    if m is not None:
        unit = {"s": 1, "m": 60, "h": 3600, "d": 86_400}[m[2]]
        return (time.time() if now is None else now) - float(m[1]) * unit
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(
            f"since={text!r}: give an age (90s, 30m, 2h, 7d) or an ISO date (2026-12-05, "
            "2026-12-05T09:30)"
        ) from None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def ui_app(
    store: str | os.PathLike[str],
    *,
    charts: Iterable[Any] | Mapping[str, Any] = (),
    poll: float = 0.25,
    allowed_origins: Iterable[str] = (),
    seal: Seal | None = None,
) -> Starlette:
    """The live viewer of the store at ``store`` (a SQLite file or a ``postgresql://`` URL).

    ``charts``: the ``FlowChart``\\ s and ``Agent``\\ s whose paused runs an answer resumes in
    this process (by chart id; a mapping names them explicitly). ``poll``: seconds between
    looks at a followed run (each reads only what is new). ``allowed_origins``: origins
    besides the app's own whose pages may POST an answer. ``seal``: the store's seal.
    """
    where = os.fspath(store)
    label = store_label(where)
    reader = open_store(where, read_only=True, seal=seal)
    answerer = Answerer(where, charts, seal=seal)
    origins = set(allowed_origins)

    def _runs(params: Mapping[str, str]) -> dict[str, Any]:
        runs = reader.list_runs()
        everything = len(runs)
        status, chart = params.get("status", ""), params.get("chart", "")
        text = params.get("q", "").strip().lower()
        since = parse_since(params["since"]) if params.get("since", "").strip() else None
        limit = int(params.get("limit", "500"))
        kept = [
            r
            for r in runs
            if (not status or r.status == status)
            and (not chart or r.chart_id == chart)
            and (not text or text in r.run_id.lower())
            and (since is None or r.started_at >= since)
        ]
        kept.sort(key=lambda r: (r.started_at, r.run_id), reverse=True)
        return {
            "store": label,
            "total": everything,
            "shown": min(len(kept), limit),
            "cut": len(kept) > limit,
            "charts": sorted({r.chart_id for r in runs}),
            "runs": [r._asdict() for r in kept[:limit]],
        }

    async def runs_list(request: Request) -> Response:
        return HTMLResponse(runs_page(label), headers=_HEADERS)

    async def runs_json(request: Request) -> Response:
        try:
            doc = await anyio.to_thread.run_sync(_runs, dict(request.query_params))
        except ValueError as exc:
            return _error(400, str(exc))
        return JSONResponse(doc, headers=_HEADERS)

    def _page(run_id: str, request: Request) -> str:
        try:
            data, svg = view_doc(reader, run_id, where, answerer.chart_of(reader, run_id))
        except CommandFailed:  # the chart given changed since the run paused: as recorded
            data, svg = view_doc(reader, run_id, where)
        status = run_status(reader, run_id)
        can, note = answerer.can_answer(reader, status.chart_id)
        live = {
            "run_id": run_id,
            "runs": str(request.url_for("runs_list").path),
            "events": f"{request.url_for('events', run_id=run_id).path}"
            f"?after={len(data['commits'])}",
            "answer": str(request.url_for("answer", run_id=run_id).path),
            "can_answer": can,
            "answer_note": note,
        }
        return run_page(data, svg, live)

    async def run_view(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        try:
            page = await anyio.to_thread.run_sync(_page, run_id, request)
        except UnknownRunError:
            return HTMLResponse(f"no run {_text(run_id)} in {_text(label)}", 404, headers=_HEADERS)
        except TrackwayError as exc:  # the store could not be read: said, not a traceback
            return HTMLResponse(_text(str(exc)), 500, headers=_HEADERS)
        return HTMLResponse(page, headers=_HEADERS)

    async def events(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        after = _seq(request.headers.get("last-event-id"), _seq(request.query_params.get("after")))
        try:
            first = await anyio.to_thread.run_sync(run_status, reader, run_id)
        except UnknownRunError:
            return _error(404, f"no run {run_id!r} in {label}")
        return EventSourceResponse(_follow(run_id, after, first), ping=15, headers=_HEADERS)

    async def _follow(run_id: str, after: int, standing: Any) -> AsyncIterator[dict[str, Any]]:
        yield {"event": "status", "id": str(after), "data": _status_json(standing)}
        while True:
            # the status first, then the commits: a status never counts a commit the stream
            # has not sent yet (read the other way round, one written in between would be)
            now = await anyio.to_thread.run_sync(run_status, reader, run_id)
            new = await anyio.to_thread.run_sync(commits_after, reader, run_id, after)
            for commit in new:
                doc = commit.to_dict()
                del doc["run_id"]
                after = commit.seq
                yield {"event": "commit", "id": str(after), "data": _dumps(doc)}
            if now != standing:
                standing = now
                yield {"event": "status", "id": str(after), "data": _status_json(now)}
            if now.status in _ENDED and now.commits <= after:
                yield {"event": "end", "id": str(after), "data": "{}"}
                return
            await anyio.sleep(poll)

    async def answer(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        refused = _check_origin(request, origins)
        if refused is not None:
            return refused
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return _error(415, "send the answer as JSON (Content-Type: application/json)")
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "the body is not JSON")
        if not isinstance(body, dict) or not isinstance(body.get("checkpoint_id"), str):
            return _error(400, 'send {"checkpoint_id": "<run id>@<n>", "value": <the answer>}')
        outcome = await anyio.to_thread.run_sync(
            answerer.answer, reader, run_id, body["checkpoint_id"], body.get("value")
        )
        code, message = outcome
        if code != 200:
            return _error(code, message)
        return JSONResponse({"message": message}, headers=_HEADERS)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            answerer.close()
            reader.close()

    return Starlette(
        routes=[
            Route("/", runs_list, name="runs_list"),
            Route("/api/runs", runs_json),
            Route("/runs/{run_id:path}", run_view),
            Route("/api/events/{run_id:path}", events, name="events"),
            Route("/api/answer/{run_id:path}", answer, methods=["POST"], name="answer"),
        ],
        lifespan=lifespan,
    )


def _check_origin(request: Request, allowed: set[str]) -> Response | None:
    """A POST is taken only from this app's own pages (or an allowed origin)."""
    origin = request.headers.get("origin")
    own = f"{request.url.scheme}://{request.headers.get('host', '')}"
    if origin is None:
        return _error(403, "refused: a POST must carry an Origin header (send it from the page)")
    if origin != own and origin not in allowed:
        return _error(403, f"refused: a POST from {origin} (only this app's own pages may answer)")
    return None


def _seq(text: str | None, default: int = 0) -> int:
    try:
        return max(default, int(text)) if text else default
    except ValueError:
        return default


def _text(value: str) -> str:
    from html import escape

    return escape(value)


def _dumps(doc: Any) -> str:
    import orjson

    from trackway.engine import thaw

    return orjson.dumps(doc, default=thaw).decode()


def _status_json(standing: Any) -> str:
    pause = standing.pause
    return _dumps(
        {
            "status": standing.status,
            "commits": standing.commits,
            "pause": None if pause is None else pause._asdict(),
        }
    )


def _error(code: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, code, headers=_HEADERS)
