"""trackway.agent: an LLM agent (ReAct loop) declared as a flowchart on the engine.

Every model request is assembled from committed state, so ``served_at`` rebuilds it from the
log and ``replay`` re-runs a turn without a model.
"""

from .artifacts._recording import recorded_artifacts as recorded_artifacts
from .classify._mock import MockClassifier as MockClassifier
from .classify._mock import MockClassifierExhaustedError as MockClassifierExhaustedError
from .classify._mock import mock_classifier as mock_classifier
from .classify._port import Classifier as Classifier
from .classify._port import ClassifierError as ClassifierError
from .classify._port import ClassifyAnswer as ClassifyAnswer
from .classify._port import ClassifyCriterion as ClassifyCriterion
from .classify._port import ClassifyRequest as ClassifyRequest
from .classify._provider import ProviderClassifier as ProviderClassifier
from .classify._provider import provider_classifier as provider_classifier
from .compose._composition import Composition as Composition
from .compose._composition import Conditional as Conditional
from .compose._composition import LLMCall as LLMCall
from .compose._composition import Loop as Loop
from .compose._composition import Parallel as Parallel
from .compose._composition import Sequence as Sequence
from .compose._map_reduce import map_reduce as map_reduce
from .compose._run_many import ItemResult as ItemResult
from .compose._run_many import RunManyReport as RunManyReport
from .compose._run_many import run_many as run_many
from .compose._run_many import run_many_sync as run_many_sync
from .compose._slots import PatternError as PatternError
from .compose._swarm import HANDOFF_TOOL as HANDOFF_TOOL
from .compose._swarm import handoff_tool as handoff_tool
from .compose._swarm import swarm as swarm
from .compose._tree import tree_of_thoughts as tree_of_thoughts
from .context._window import WindowPlan as WindowPlan
from .context._window import WindowStrategy as WindowStrategy
from .context._window import WindowVisit as WindowVisit
from .context._window import sliding_window as sliding_window
from .context._window import summarize_oldest as summarize_oldest
from .context._window import token_budget as token_budget
from .context._window_plan import LedgerFactPin as LedgerFactPin
from .events import EVENTS as EVENTS
from .events import EventAudit as EventAudit
from .events import EventSpec as EventSpec
from .events import event_catalogue as event_catalogue
from .explain import NO_COMPLETED_RUN as NO_COMPLETED_RUN
from .explain import TRACE_TOOLS as TRACE_TOOLS
from .grounding import AnswerAssessment as AnswerAssessment
from .grounding import AnswerValidationLimits as AnswerValidationLimits
from .grounding import DeclaredClaim as DeclaredClaim
from .grounding import assess_answer as assess_answer
from .grounding import claim as claim
from .live import COMMENTARY_TEMPLATES as COMMENTARY_TEMPLATES
from .live import DEFAULT_APP_NAME as DEFAULT_APP_NAME
from .live import MESSAGE_LIMIT as MESSAGE_LIMIT
from .live import THINKING_TEMPLATES as THINKING_TEMPLATES
from .live import ChatBubbleLiveStatus as ChatBubbleLiveStatus
from .live import LiveStatusStrategy as LiveStatusStrategy
from .live import StatusLine as StatusLine
from .live import Voice as Voice
from .live import chat_bubble_live_status as chat_bubble_live_status
from .live import commentary as commentary
from .live import status_line as status_line
from .memory import MemoryDefinition as MemoryDefinition
from .memory import MemoryTurn as MemoryTurn
from .memory import define_memory as define_memory
from .messages._conversation import Conversation as Conversation
from .messages._errors import AgentBuildError as AgentBuildError
from .messages._errors import AgentError as AgentError
from .messages._errors import AgentNotRunError as AgentNotRunError
from .messages._errors import AnswerDeniedError as AnswerDeniedError
from .messages._errors import ArtifactsEmbedError as ArtifactsEmbedError
from .messages._errors import CachePolicyError as CachePolicyError
from .messages._errors import ClockRequiredError as ClockRequiredError
from .messages._errors import ConversationFormatError as ConversationFormatError
from .messages._errors import DecisionRequiredError as DecisionRequiredError
from .messages._errors import InputRefusedError as InputRefusedError
from .messages._errors import InvalidAnswerError as InvalidAnswerError
from .messages._errors import InvalidRunInputError as InvalidRunInputError
from .messages._errors import MessageDeniedError as MessageDeniedError
from .messages._errors import MiddlewareError as MiddlewareError
from .messages._errors import MiddlewareFailedError as MiddlewareFailedError
from .messages._errors import NoConversationError as NoConversationError
from .messages._errors import OutputContractError as OutputContractError
from .messages._errors import OutputSchemaError as OutputSchemaError
from .messages._errors import PendingQuestionError as PendingQuestionError
from .messages._errors import RedactedRecordError as RedactedRecordError
from .messages._errors import ReplayDivergence as ReplayDivergence
from .messages._errors import ResumeIdentityConflictError as ResumeIdentityConflictError
from .messages._errors import RunCheckpointError as RunCheckpointError
from .messages._errors import RunInFlightError as RunInFlightError
from .messages._errors import TemplateError as TemplateError
from .messages._errors import ThinkingHandlerError as ThinkingHandlerError
from .messages._errors import UnsupportedValuesError as UnsupportedValuesError
from .messages._messages import LLMRequest as LLMRequest
from .messages._messages import LLMResponse as LLMResponse
from .messages._messages import Message as Message
from .messages._messages import StreamDelta as StreamDelta
from .messages._messages import ThinkingBlock as ThinkingBlock
from .messages._messages import ToolCall as ToolCall
from .messages._messages import ToolSpec as ToolSpec
from .messages._messages import Usage as Usage
from .messages._messages import is_said_by_person as is_said_by_person
from .messages._paused import Paused as Paused
from .messages._paused import is_paused as is_paused
from .messages._redaction import conversation_redaction as conversation_redaction
from .messages._usage import RunUsage as RunUsage
from .middleware._links import Middleware as Middleware
from .middleware._links import act as act
from .middleware._message_doors import MessageContext as MessageContext
from .offer._findings_judge import FINDINGS_JUDGE_QUESTION as FINDINGS_JUDGE_QUESTION
from .offer._tool_choice import TOOL_CHOICE_QUESTION as TOOL_CHOICE_QUESTION
from .ontology import ONTOLOGY_INSTRUCTION as ONTOLOGY_INSTRUCTION
from .ontology import ONTOLOGY_INSTRUCTION_ID as ONTOLOGY_INSTRUCTION_ID
from .ontology import ONTOLOGY_LIMITS as ONTOLOGY_LIMITS
from .ontology import ONTOLOGY_PIECE_LIMITS as ONTOLOGY_PIECE_LIMITS
from .ontology import SKOS_ERROR_CODES as SKOS_ERROR_CODES
from .ontology import SKOS_IRI_BASE as SKOS_IRI_BASE
from .ontology import SKOS_NS as SKOS_NS
from .ontology import TRACKWAY_NS as TRACKWAY_NS
from .ontology import AbsenceExpectation as AbsenceExpectation
from .ontology import AbsenceScore as AbsenceScore
from .ontology import AbsenceSummary as AbsenceSummary
from .ontology import AbsenceTurn as AbsenceTurn
from .ontology import Ontology as Ontology
from .ontology import OntologyAsk as OntologyAsk
from .ontology import OntologyError as OntologyError
from .ontology import SkosConcept as SkosConcept
from .ontology import SkosError as SkosError
from .ontology import SkosScheme as SkosScheme
from .ontology import define_ontology as define_ontology
from .ontology import from_skos as from_skos
from .ontology import ontology_hash as ontology_hash
from .ontology import ontology_piece as ontology_piece
from .ontology import read_skos as read_skos
from .ontology import score_absence as score_absence
from .ontology import summarize_absence as summarize_absence
from .ontology import to_skos as to_skos
from .providers._anthropic import AnthropicProvider as AnthropicProvider
from .providers._anthropic import anthropic as anthropic
from .providers._caching import CacheCall as CacheCall
from .providers._caching import CacheWarning as CacheWarning
from .providers._mock import MockExhaustedError as MockExhaustedError
from .providers._mock import MockProvider as MockProvider
from .providers._mock import mock as mock
from .providers._openai import OpenAIProvider as OpenAIProvider
from .providers._openai import openai as openai
from .providers._provider import ContextLengthError as ContextLengthError
from .providers._provider import MissingAPIKeyError as MissingAPIKeyError
from .providers._provider import ModelNotFoundError as ModelNotFoundError
from .providers._provider import Provider as Provider
from .providers._provider import ProviderAuthError as ProviderAuthError
from .providers._provider import ProviderConfigError as ProviderConfigError
from .providers._provider import ProviderConnectionError as ProviderConnectionError
from .providers._provider import ProviderError as ProviderError
from .providers._provider import ProviderRateLimitError as ProviderRateLimitError
from .providers._provider import ProviderRequestError as ProviderRequestError
from .providers._provider import ProviderResponseError as ProviderResponseError
from .providers._provider import StreamingProvider as StreamingProvider
from .providers.reliability import CircuitBreaker as CircuitBreaker
from .providers.reliability import CircuitOpenError as CircuitOpenError
from .providers.reliability import FallbackProvider as FallbackProvider
from .providers.reliability import ModelGateway as ModelGateway
from .providers.reliability import RetryPolicy as RetryPolicy
from .providers.reliability import model_gateway as model_gateway
from .providers.reliability import transient as transient
from .providers.reliability import with_fallback as with_fallback
from .record import (
    _causal_profile,  # noqa: F401 - registers how a causal trace reads agent runs
    _telling,  # noqa: F401 - registers how the narrative tells agent runs
)
from .record._record import load_recording as load_recording
from .record._record import receipts as receipts
from .record._record import save_recording as save_recording
from .record._record import served_at as served_at
from .record._transcript import TranscriptCall as TranscriptCall
from .record._transcript import transcript as transcript
from .rerun._replay import replay as replay
from .rerun._replay import replay_async as replay_async
from .runtime._agent import Agent as Agent
from .runtime._agent_continue import Turn as Turn
from .runtime._agent_tool import agent_as_tool as agent_as_tool
from .runtime._agent_tool import tool_run as tool_run
from .runtime._builder import AgentBuilder as AgentBuilder
from .runtime._result import AgentResult as AgentResult
from .runtime._stream import AgentStream as AgentStream
from .skills import ALWAYS_SERVED_TOOLS as ALWAYS_SERVED_TOOLS
from .skills import CLASSIFIER_SCORER_UNAVAILABLE as CLASSIFIER_SCORER_UNAVAILABLE
from .skills import ENTRY_QUESTION as ENTRY_QUESTION
from .skills import STRICTNESS as STRICTNESS
from .skills import ClassifierScorer as ClassifierScorer
from .skills import EntryRequest as EntryRequest
from .skills import EntryScorer as EntryScorer
from .skills import EntryScoring as EntryScoring
from .skills import Instruction as Instruction
from .skills import Route as Route
from .skills import Skill as Skill
from .skills import SkillGraph as SkillGraph
from .skills import classifier_scorer as classifier_scorer
from .skills import define_instruction as define_instruction
from .skills import define_skill as define_skill
from .skills import propose_transition as propose_transition
from .skills import require_instruction as require_instruction
from .skills import route as route
from .skills import skill_graph as skill_graph
from .time._asks import TimeAnswerRefusedError as TimeAnswerRefusedError

__all__ = [
    "ALWAYS_SERVED_TOOLS",
    "CLASSIFIER_SCORER_UNAVAILABLE",
    "COMMENTARY_TEMPLATES",
    "DEFAULT_APP_NAME",
    "ENTRY_QUESTION",
    "EVENTS",
    "FINDINGS_JUDGE_QUESTION",
    "HANDOFF_TOOL",
    "MESSAGE_LIMIT",
    "NO_COMPLETED_RUN",
    "ONTOLOGY_INSTRUCTION",
    "ONTOLOGY_INSTRUCTION_ID",
    "ONTOLOGY_LIMITS",
    "ONTOLOGY_PIECE_LIMITS",
    "SKOS_ERROR_CODES",
    "SKOS_IRI_BASE",
    "SKOS_NS",
    "STRICTNESS",
    "THINKING_TEMPLATES",
    "TOOL_CHOICE_QUESTION",
    "TRACE_TOOLS",
    "TRACKWAY_NS",
    "AbsenceExpectation",
    "AbsenceScore",
    "AbsenceSummary",
    "AbsenceTurn",
    "Agent",
    "AgentBuildError",
    "AgentBuilder",
    "AgentError",
    "AgentNotRunError",
    "AgentResult",
    "AgentStream",
    "AnswerAssessment",
    "AnswerDeniedError",
    "AnswerValidationLimits",
    "AnthropicProvider",
    "ArtifactsEmbedError",
    "CacheCall",
    "CachePolicyError",
    "CacheWarning",
    "ChatBubbleLiveStatus",
    "CircuitBreaker",
    "CircuitOpenError",
    "Classifier",
    "ClassifierError",
    "ClassifierScorer",
    "ClassifyAnswer",
    "ClassifyCriterion",
    "ClassifyRequest",
    "ClockRequiredError",
    "Composition",
    "Conditional",
    "ContextLengthError",
    "Conversation",
    "ConversationFormatError",
    "DecisionRequiredError",
    "DeclaredClaim",
    "EntryRequest",
    "EntryScorer",
    "EntryScoring",
    "EventAudit",
    "EventSpec",
    "FallbackProvider",
    "InputRefusedError",
    "Instruction",
    "InvalidAnswerError",
    "InvalidRunInputError",
    "ItemResult",
    "LLMCall",
    "LLMRequest",
    "LLMResponse",
    "LedgerFactPin",
    "LiveStatusStrategy",
    "Loop",
    "MemoryDefinition",
    "MemoryTurn",
    "Message",
    "MessageContext",
    "MessageDeniedError",
    "Middleware",
    "MiddlewareError",
    "MiddlewareFailedError",
    "MissingAPIKeyError",
    "MockClassifier",
    "MockClassifierExhaustedError",
    "MockExhaustedError",
    "MockProvider",
    "ModelGateway",
    "ModelNotFoundError",
    "NoConversationError",
    "Ontology",
    "OntologyAsk",
    "OntologyError",
    "OpenAIProvider",
    "OutputContractError",
    "OutputSchemaError",
    "Parallel",
    "PatternError",
    "Paused",
    "PendingQuestionError",
    "Provider",
    "ProviderAuthError",
    "ProviderClassifier",
    "ProviderConfigError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderRateLimitError",
    "ProviderRequestError",
    "ProviderResponseError",
    "RedactedRecordError",
    "ReplayDivergence",
    "ResumeIdentityConflictError",
    "RetryPolicy",
    "Route",
    "RunCheckpointError",
    "RunInFlightError",
    "RunManyReport",
    "RunUsage",
    "Sequence",
    "Skill",
    "SkillGraph",
    "SkosConcept",
    "SkosError",
    "SkosScheme",
    "StatusLine",
    "StreamDelta",
    "StreamingProvider",
    "TemplateError",
    "ThinkingBlock",
    "ThinkingHandlerError",
    "TimeAnswerRefusedError",
    "ToolCall",
    "ToolSpec",
    "TranscriptCall",
    "Turn",
    "UnsupportedValuesError",
    "Usage",
    "Voice",
    "WindowPlan",
    "WindowStrategy",
    "WindowVisit",
    "act",
    "agent_as_tool",
    "anthropic",
    "assess_answer",
    "chat_bubble_live_status",
    "claim",
    "classifier_scorer",
    "commentary",
    "conversation_redaction",
    "define_instruction",
    "define_memory",
    "define_ontology",
    "define_skill",
    "event_catalogue",
    "from_skos",
    "handoff_tool",
    "is_paused",
    "is_said_by_person",
    "load_recording",
    "map_reduce",
    "mock",
    "mock_classifier",
    "model_gateway",
    "ontology_hash",
    "ontology_piece",
    "openai",
    "propose_transition",
    "provider_classifier",
    "read_skos",
    "receipts",
    "recorded_artifacts",
    "replay",
    "replay_async",
    "require_instruction",
    "route",
    "run_many",
    "run_many_sync",
    "save_recording",
    "score_absence",
    "served_at",
    "skill_graph",
    "sliding_window",
    "status_line",
    "summarize_absence",
    "summarize_oldest",
    "swarm",
    "to_skos",
    "token_budget",
    "tool_run",
    "transcript",
    "transient",
    "tree_of_thoughts",
    "with_fallback",
]
