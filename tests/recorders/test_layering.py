"""trackway.recorders builds on the engine's public names only."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path


def test_recorders_import_only_the_public_engine():
    root = Path(importlib.import_module("trackway.recorders").__file__ or "").parent
    files = sorted(root.glob("*.py"))
    assert {p.name for p in files} >= {"_narrative.py", "_metrics.py", "_jsonl.py", "_otel.py"}
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:  # relative: only this package's own modules
                    assert node.level == 1, f"{path.name}: from {'.' * node.level}{node.module}"
                    continue
                module = node.module or ""
                if module.startswith("trackway"):
                    assert module == "trackway.engine", f"{path.name}: from {module} import"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    assert not alias.name.startswith("trackway"), f"{path.name}: {alias.name}"


def test_opentelemetry_is_imported_only_when_otel_is_called():
    import subprocess
    import sys

    code = (
        "import sys, trackway.recorders as r; "
        "assert not any(m.startswith('opentelemetry') for m in sys.modules), 'eager'"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
