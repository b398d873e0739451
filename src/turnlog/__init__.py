"""turnlog: a crash-safe, append-only session log for LLM agents."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from turnlog.budgets import Budget
from turnlog.damage import Problem, TornTail
from turnlog.errors import (
    CorruptLogError,
    ForkBoundaryError,
    FormatError,
    InvalidSessionIdError,
    LimitExceededError,
    LogPoisonedError,
    NotASessionError,
    NotAStoreError,
    SeqConflictError,
    SessionExistsError,
    SessionHeldHereError,
    SessionInterruptedError,
    SessionLockedError,
    SessionNotFoundError,
    StoreIOError,
    StoreNotFoundError,
    TurnlogError,
    UnfinishedSessionError,
    UnknownEventTypeError,
    UnreadableRecordError,
    UsageError,
    WriteOrderError,
)
from turnlog.events import (
    FORMAT_VERSION,
    Agent,
    AssistantMessage,
    Compaction,
    Custom,
    Event,
    Idempotency,
    Origin,
    Parent,
    Risk,
    RunRevived,
    Session,
    SpawnedBy,
    StepEnd,
    StepStart,
    SubagentSettled,
    SubagentSpawned,
    SystemMessage,
    ToolCall,
    ToolDispatch,
    ToolResult,
    TurnEnd,
    TurnEndReason,
    TurnStart,
    UserMessage,
    decode_event,
    encode_event,
)
from turnlog.fold import Fold, Message, SessionState, fold
from turnlog.fork import fork, fork_session
from turnlog.log import Log, open
from turnlog.loop import (
    AgentSpec,
    Reply,
    Tool,
    ToolContext,
    continue_run,
    continue_tree,
    run_agent_turn,
    run_turn,
    subagent_tool,
    task_wait_tool,
)
from turnlog.notices import NoticeStyle
from turnlog.recovery import Plan, interrupted, patch_dangling_tool_calls, plan
from turnlog.revival import Revival, revive
from turnlog.stores import (
    Holder,
    JSONLStore,
    MemoryStore,
    SQLiteStore,
    Store,
    open_store,
    register_backend,
)
from turnlog.sweeper import sweep
from turnlog.transfer import copy_session, write_events
from turnlog.tree import RevivedTree, TreeNode, revive_tree
from turnlog.triage import Inspection, Recovery, inspect, recover
from turnlog.verdict import OwedCall, Verdict, Wait, is_finished, verdict
from turnlog.verify import Report, verify_session, verify_store

if TYPE_CHECKING:
    from turnlog.aio import AsyncLog, aopen, arun_turn

__version__ = "0.1.0"

# The asyncio twin loads asyncio (about 75 ms): imported on first use, so a
# command-line call never pays for it.
_LAZY = {"AsyncLog", "aopen", "arun_turn"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from turnlog import aio

        return getattr(aio, name)
    raise AttributeError(f"module 'turnlog' has no attribute {name!r}")


__all__ = [
    "FORMAT_VERSION",
    "Agent",
    "AgentSpec",
    "AssistantMessage",
    "AsyncLog",
    "Budget",
    "Compaction",
    "CorruptLogError",
    "Custom",
    "Event",
    "Fold",
    "ForkBoundaryError",
    "FormatError",
    "Holder",
    "Idempotency",
    "Inspection",
    "InvalidSessionIdError",
    "JSONLStore",
    "LimitExceededError",
    "Log",
    "LogPoisonedError",
    "MemoryStore",
    "Message",
    "NotASessionError",
    "NotAStoreError",
    "NoticeStyle",
    "Origin",
    "OwedCall",
    "Parent",
    "Plan",
    "Problem",
    "Recovery",
    "Reply",
    "Report",
    "Revival",
    "RevivedTree",
    "Risk",
    "RunRevived",
    "SQLiteStore",
    "SeqConflictError",
    "Session",
    "SessionExistsError",
    "SessionHeldHereError",
    "SessionInterruptedError",
    "SessionLockedError",
    "SessionNotFoundError",
    "SessionState",
    "SpawnedBy",
    "StepEnd",
    "StepStart",
    "Store",
    "StoreIOError",
    "StoreNotFoundError",
    "SubagentSettled",
    "SubagentSpawned",
    "SystemMessage",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolDispatch",
    "ToolResult",
    "TornTail",
    "TreeNode",
    "TurnEnd",
    "TurnEndReason",
    "TurnStart",
    "TurnlogError",
    "UnfinishedSessionError",
    "UnknownEventTypeError",
    "UnreadableRecordError",
    "UsageError",
    "UserMessage",
    "Verdict",
    "Wait",
    "WriteOrderError",
    "__version__",
    "aopen",
    "arun_turn",
    "continue_run",
    "continue_tree",
    "copy_session",
    "decode_event",
    "encode_event",
    "fold",
    "fork",
    "fork_session",
    "inspect",
    "interrupted",
    "is_finished",
    "open",
    "open_store",
    "patch_dangling_tool_calls",
    "plan",
    "recover",
    "register_backend",
    "revive",
    "revive_tree",
    "run_agent_turn",
    "run_turn",
    "subagent_tool",
    "sweep",
    "task_wait_tool",
    "verdict",
    "verify_session",
    "verify_store",
    "write_events",
]
