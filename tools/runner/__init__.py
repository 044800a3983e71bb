"""trackway.tools.runner: a tool that runs the model's code. ``code_runner_tool`` over a
``CodeRunner`` port; ``local_code_runner`` runs Python in a subprocess with limits (time,
memory, output, no inherited secrets, a fresh working directory), stages redeemed artifacts
as files listed in ``TRACKWAY_STAGED_INPUTS``, and keeps one interpreter per conversation
through tool sessions.

Imports: ``results``, ``define``, ``artifacts`` and the engine.
"""

from ._errors import CodeInputsNotStagedError as CodeInputsNotStagedError
from ._errors import CodeRunFailedError as CodeRunFailedError
from ._errors import CodeRunnerError as CodeRunnerError
from ._local import LocalCodeRunner as LocalCodeRunner
from ._local import local_code_runner as local_code_runner
from ._port import STAGED_INPUTS_ENV as STAGED_INPUTS_ENV
from ._port import CodeInput as CodeInput
from ._port import CodeRunner as CodeRunner
from ._port import CodeRunResult as CodeRunResult
from ._port import CodeSession as CodeSession
from ._port import StagedCodeInput as StagedCodeInput
from ._port import StagingCodeSession as StagingCodeSession
from ._port import can_stage_code_inputs as can_stage_code_inputs
from ._session import LocalCodeSession as LocalCodeSession
from ._tool import code_runner_tool as code_runner_tool
from ._tool import tool_sessions_of as tool_sessions_of

__all__ = [
    "STAGED_INPUTS_ENV",
    "CodeInput",
    "CodeInputsNotStagedError",
    "CodeRunFailedError",
    "CodeRunResult",
    "CodeRunner",
    "CodeRunnerError",
    "CodeSession",
    "LocalCodeRunner",
    "LocalCodeSession",
    "StagedCodeInput",
    "StagingCodeSession",
    "can_stage_code_inputs",
    "code_runner_tool",
    "local_code_runner",
    "tool_sessions_of",
]
