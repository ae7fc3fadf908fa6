"""The ReAct engine: Django-free (stdlib, openai, httpx and jsonschema only).

The public API is re-exported here; see ``react.py`` for the loop, ``plan/`` for plan mode and ``events.py``
for what a run reports.
"""

from agents.engine.context import CompactionResult, ContextGuard
from agents.engine.durable.checkpoint import Checkpoint, CheckpointCallback, checkpoints_fold
from agents.engine.durable.ledger import RecordedCall, ToolCallLedger
from agents.engine.events import Event, EventCallback, EventStream, iterate_events
from agents.engine.follow_ups import FollowUpQueue
from agents.engine.hooks import (
    HookContext,
    HookRegistry,
    PostToolUseHook,
    PreToolUseHook,
    SessionContext,
    SessionStartHook,
)
from agents.engine.llm import (
    LLM,
    ChatResponse,
    ContextLengthExceededError,
    LLMError,
    Message,
    OpenAICompatibleLLM,
    ToolCallRequest,
    Usage,
)
from agents.engine.plan import (
    Analysis,
    ModelRegistry,
    Plan,
    PlanAgent,
    PlanAnalyzer,
    PlanExecutor,
    Planner,
    PlanResult,
    PlanStep,
    PlanValidationError,
    route_execution_mode,
)
from agents.engine.react import ReActAgent
from agents.engine.run_state import AgentResult
from agents.engine.stop_reasons import StopReason
from agents.engine.structured import (
    StructuredCallResult,
    StructuredOutputError,
    extract_json,
    structured_llm_call,
)
from agents.engine.tool_context import ToolCallContext
from agents.engine.tools import Artifact, FunctionTool, Tool, ToolCallRecord, ToolRegistry, ToolResult
from agents.engine.verdicts import ALLOW, Allow, Block, Park, PostVerdict, PreVerdict, Rewrite

__all__ = [
    "ALLOW",
    "LLM",
    "AgentResult",
    "Allow",
    "Analysis",
    "Artifact",
    "Block",
    "ChatResponse",
    "Checkpoint",
    "CheckpointCallback",
    "CompactionResult",
    "ContextGuard",
    "ContextLengthExceededError",
    "Event",
    "EventCallback",
    "EventStream",
    "FunctionTool",
    "HookContext",
    "HookRegistry",
    "FollowUpQueue",
    "LLMError",
    "Message",
    "ModelRegistry",
    "OpenAICompatibleLLM",
    "Park",
    "Plan",
    "PlanAgent",
    "PlanAnalyzer",
    "PlanExecutor",
    "PlanResult",
    "PlanStep",
    "PlanValidationError",
    "Planner",
    "PostToolUseHook",
    "PostVerdict",
    "PreToolUseHook",
    "PreVerdict",
    "ReActAgent",
    "RecordedCall",
    "Rewrite",
    "SessionContext",
    "SessionStartHook",
    "StopReason",
    "StructuredCallResult",
    "StructuredOutputError",
    "Tool",
    "ToolCallContext",
    "ToolCallLedger",
    "ToolCallRecord",
    "ToolCallRequest",
    "ToolRegistry",
    "ToolResult",
    "Usage",
    "checkpoints_fold",
    "extract_json",
    "iterate_events",
    "route_execution_mode",
    "structured_llm_call",
]
