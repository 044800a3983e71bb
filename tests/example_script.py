"""Running an example as a user would: ``python examples/<name>.py ...`` in a fresh process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run_script(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``script`` with ``args``; fail the test, showing stderr, unless it exits 0."""
    proc = subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc
