"""The code runner's errors (under ``ToolError``)::

ToolError
└── CodeRunnerError                 the code runner
    ├── CodeRunFailedError          the code hit a limit or its interpreter died (RuntimeError)
    └── CodeInputsNotStagedError    inputs the session cannot stage                (RuntimeError)
"""

from __future__ import annotations

from trackway.tools.define._errors import ToolError

__all__ = ["CodeInputsNotStagedError", "CodeRunFailedError", "CodeRunnerError"]


class CodeRunnerError(ToolError):
    """Base class of the code runner's errors."""


class CodeRunFailedError(CodeRunnerError, RuntimeError):
    """The model's code did not finish as code: it ran past its time limit, ran out of
    memory, flooded its output, or its interpreter died. The message says which limit, what
    the code printed before, and whether the interpreter's state was lost (the next call
    then starts a fresh one)."""


class CodeInputsNotStagedError(CodeRunnerError, RuntimeError):
    """A call brought artifacts to stage as files, and the runner's sessions cannot write
    into themselves (no ``stage_inputs``): the code never runs, since it would look for a
    file that is not there. Use a runner that stages, or a tool without ``wants``."""
