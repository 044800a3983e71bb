"""trackway.agent: an LLM agent (ReAct loop) declared as a flowchart on the engine.

Every model request is assembled from committed state, so ``served_at`` rebuilds it from the
log and ``replay`` re-runs a turn without a model.
"""

from . import (
    _causal_profile,  # noqa: F401 - registers how a causal trace reads agent runs
    _telling,  # noqa: F401 - registers how the narrative tells agent runs
)
from ._agent import Agent as Agent
from ._agent_tool import agent_as_tool as agent_as_tool
from ._agent_tool import tool_run as tool_run
from ._anthropic import AnthropicProvider as AnthropicProvider
from ._anthropic import anthropic as anthropic
from ._builder import AgentBuilder as AgentBuilder
from ._composition import Composition as Composition
from ._composition import Conditional as Conditional
from ._composition import LLMCall as LLMCall
from ._composition import Loop as Loop
from ._composition import Parallel as Parallel
from ._composition import Sequence as Sequence
from ._conversation import Conversation as Conversation
from ._errors import AgentBuildError as AgentBuildError
from ._errors import AgentError as AgentError
from ._errors import AgentNotRunError as AgentNotRunError
from ._errors import ConversationFormatError as ConversationFormatError
from ._errors import DecisionRequiredError as DecisionRequiredError
from ._errors import InvalidAnswerError as InvalidAnswerError
from ._errors import InvalidRunInputError as InvalidRunInputError
from ._errors import NoConversationError as NoConversationError
from ._errors import OutputContractError as OutputContractError
from ._errors import PendingQuestionError as PendingQuestionError
from ._errors import RedactedRecordError as RedactedRecordError
from ._errors import ReplayDivergence as ReplayDivergence
from ._errors import ResumeIdentityConflictError as ResumeIdentityConflictError
from ._errors import RunCheckpointError as RunCheckpointError
from ._errors import RunInFlightError as RunInFlightError
from ._messages import LLMRequest as LLMRequest
from ._messages import LLMResponse as LLMResponse
from ._messages import Message as Message
from ._messages import StreamDelta as StreamDelta
from ._messages import ToolCall as ToolCall
from ._messages import ToolSpec as ToolSpec
from ._messages import Usage as Usage
from ._messages import is_said_by_person as is_said_by_person
from ._mock import MockExhaustedError as MockExhaustedError
from ._mock import MockProvider as MockProvider
from ._mock import mock as mock
from ._openai import OpenAIProvider as OpenAIProvider
from ._openai import openai as openai
from ._paused import Paused as Paused
from ._paused import is_paused as is_paused
from ._provider import ContextLengthError as ContextLengthError
from ._provider import MissingAPIKeyError as MissingAPIKeyError
from ._provider import ModelNotFoundError as ModelNotFoundError
from ._provider import Provider as Provider
from ._provider import ProviderAuthError as ProviderAuthError
from ._provider import ProviderConfigError as ProviderConfigError
from ._provider import ProviderConnectionError as ProviderConnectionError
from ._provider import ProviderError as ProviderError
from ._provider import ProviderRateLimitError as ProviderRateLimitError
from ._provider import ProviderRequestError as ProviderRequestError
from ._provider import ProviderResponseError as ProviderResponseError
from ._provider import StreamingProvider as StreamingProvider
from ._redaction import conversation_redaction as conversation_redaction
from ._replay import load_recording as load_recording
from ._replay import receipts as receipts
from ._replay import replay as replay
from ._replay import replay_async as replay_async
from ._replay import save_recording as save_recording
from ._replay import served_at as served_at
from ._result import AgentResult as AgentResult
from ._run_many import ItemResult as ItemResult
from ._run_many import RunManyReport as RunManyReport
from ._run_many import run_many as run_many
from ._run_many import run_many_sync as run_many_sync
from ._stream import AgentStream as AgentStream
from ._transcript import TranscriptCall as TranscriptCall
from ._transcript import transcript as transcript
from ._usage import RunUsage as RunUsage
from ._window import WindowPlan as WindowPlan
from ._window import WindowStrategy as WindowStrategy
from ._window import WindowVisit as WindowVisit
from ._window import sliding_window as sliding_window
from ._window import summarize_oldest as summarize_oldest
from ._window import token_budget as token_budget

__all__ = [
    "Agent",
    "AgentBuildError",
    "AgentBuilder",
    "AgentError",
    "AgentNotRunError",
    "AgentResult",
    "AgentStream",
    "AnthropicProvider",
    "Composition",
    "Conditional",
    "ContextLengthError",
    "Conversation",
    "ConversationFormatError",
    "DecisionRequiredError",
    "InvalidAnswerError",
    "InvalidRunInputError",
    "ItemResult",
    "LLMCall",
    "LLMRequest",
    "LLMResponse",
    "Loop",
    "Message",
    "MissingAPIKeyError",
    "MockExhaustedError",
    "MockProvider",
    "ModelNotFoundError",
    "NoConversationError",
    "OpenAIProvider",
    "OutputContractError",
    "Parallel",
    "Paused",
    "PendingQuestionError",
    "Provider",
    "ProviderAuthError",
    "ProviderConfigError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderRateLimitError",
    "ProviderRequestError",
    "ProviderResponseError",
    "RedactedRecordError",
    "ReplayDivergence",
    "ResumeIdentityConflictError",
    "RunCheckpointError",
    "RunInFlightError",
    "RunManyReport",
    "RunUsage",
    "Sequence",
    "StreamDelta",
    "StreamingProvider",
    "ToolCall",
    "ToolSpec",
    "TranscriptCall",
    "Usage",
    "WindowPlan",
    "WindowStrategy",
    "WindowVisit",
    "agent_as_tool",
    "anthropic",
    "conversation_redaction",
    "is_paused",
    "is_said_by_person",
    "load_recording",
    "mock",
    "openai",
    "receipts",
    "replay",
    "replay_async",
    "run_many",
    "run_many_sync",
    "save_recording",
    "served_at",
    "sliding_window",
    "summarize_oldest",
    "token_budget",
    "tool_run",
    "transcript",
]
