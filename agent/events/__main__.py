"""``python -m trackway.agent.events PATH``: write the events page (docs/guide/events.md)."""

from __future__ import annotations

import sys
from pathlib import Path

from . import render_events_page


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m trackway.agent.events docs/guide/events.md", file=sys.stderr)
        return 2
    Path(argv[0]).write_text(render_events_page(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
