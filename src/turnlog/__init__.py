"""turnlog: a crash-safe, append-only session log for LLM agents.

The top level holds what a user reaches for first; everything else lives in
its named module (see docs/api.md). Every name is imported on first use, so
`import turnlog` costs nothing a caller does not use: a command-line call or
a shell hook that only inspects a session never loads the loop, the asyncio
twin, the providers or the stores it does not open.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # What type checkers and IDEs see; at run time `__getattr__` imports each
    # name from the same module on first use.
    from turnlog.core.pauses import Awaiting
    from turnlog.core.recovery import Plan
    from turnlog.core.verdict import Verdict, is_finished, verdict
    from turnlog.errors import (
        CorruptLogError,
        FormatError,
        LogPoisonedError,
        NotASessionError,
        SessionExistsError,
        SessionInterruptedError,
        SessionLockedError,
        SessionNotFoundError,
        StoreNotFoundError,
        TurnlogError,
        UsageError,
        WriteOrderError,
    )
    from turnlog.events import (
        AssistantMessage,
        Compaction,
        Custom,
        EngineRun,
        SystemMessage,
        ToolCall,
        ToolResult,
        UserMessage,
    )
    from turnlog.handle.log import Log
    from turnlog.ops.inspection import Inspection, inspect
    from turnlog.ops.open import open
    from turnlog.ops.recover import Recovery, plan, recover
    from turnlog.ops.revival import Revival, revive
    from turnlog.runtime.approvals import Approve, Deliver, Reject
    from turnlog.runtime.async_loop import AsyncLog, aopen, arun_turn
    from turnlog.runtime.at_most_once import at_most_once
    from turnlog.runtime.loop import AgentSpec, Reply, Tool, continue_run, run_turn
    from turnlog.stores import JSONLStore, MemoryStore, SQLiteStore, Store, open_store

__version__ = "0.1.0"

# Each top-level name and the module it is imported from on first use.
_HOMES: dict[str, str] = {
    # Writing a session.
    "open": "turnlog.ops.open",
    "Log": "turnlog.handle.log",
    "aopen": "turnlog.runtime.async_loop",
    "AsyncLog": "turnlog.runtime.async_loop",
    # What a user appends.
    "ToolCall": "turnlog.events",
    "UserMessage": "turnlog.events",
    "AssistantMessage": "turnlog.events",
    "SystemMessage": "turnlog.events",
    "ToolResult": "turnlog.events",
    "Custom": "turnlog.events",
    "Compaction": "turnlog.events",
    # After a crash, and what each answer is.
    "inspect": "turnlog.ops.inspection",
    "Inspection": "turnlog.ops.inspection",
    "recover": "turnlog.ops.recover",
    "Recovery": "turnlog.ops.recover",
    "revive": "turnlog.ops.revival",
    "Revival": "turnlog.ops.revival",
    "plan": "turnlog.ops.recover",
    "Plan": "turnlog.core.recovery",
    "verdict": "turnlog.core.verdict",
    "Verdict": "turnlog.core.verdict",
    "is_finished": "turnlog.core.verdict",
    # The reference loop.
    "run_turn": "turnlog.runtime.loop",
    "arun_turn": "turnlog.runtime.async_loop",
    "continue_run": "turnlog.runtime.loop",
    "AgentSpec": "turnlog.runtime.loop",
    "Tool": "turnlog.runtime.loop",
    "Reply": "turnlog.runtime.loop",
    # Pauses: what a paused run awaits, and the decisions a resume brings.
    "Awaiting": "turnlog.core.pauses",
    "Approve": "turnlog.runtime.approvals",
    "Reject": "turnlog.runtime.approvals",
    "Deliver": "turnlog.runtime.approvals",
    # Under a durable-execution engine: each tool call at most once.
    "EngineRun": "turnlog.events",
    "at_most_once": "turnlog.runtime.at_most_once",
    # Where sessions live.
    "open_store": "turnlog.stores",
    "Store": "turnlog.stores",
    "JSONLStore": "turnlog.stores",
    "SQLiteStore": "turnlog.stores",
    "MemoryStore": "turnlog.stores",
    # The error root and the errors a caller handles.
    "TurnlogError": "turnlog.errors",
    "UsageError": "turnlog.errors",
    "FormatError": "turnlog.errors",
    "CorruptLogError": "turnlog.errors",
    "NotASessionError": "turnlog.errors",
    "SessionInterruptedError": "turnlog.errors",
    "SessionLockedError": "turnlog.errors",
    "SessionNotFoundError": "turnlog.errors",
    "SessionExistsError": "turnlog.errors",
    "StoreNotFoundError": "turnlog.errors",
    "WriteOrderError": "turnlog.errors",
    "LogPoisonedError": "turnlog.errors",
}

# Names the top level exported before it was made smaller: each still
# resolves, with a DeprecationWarning naming the module to import it from.
_MOVED: dict[str, str] = {
    **dict.fromkeys(
        [
            "FORMAT_VERSION",
            "Agent",
            "Event",
            "Idempotency",
            "Origin",
            "Parent",
            "Risk",
            "RunRevived",
            "Session",
            "SpawnedBy",
            "StepEnd",
            "StepStart",
            "SubagentSettled",
            "SubagentSpawned",
            "ToolDispatch",
            "TurnEnd",
            "TurnEndReason",
            "TurnStart",
            "decode_event",
            "encode_event",
        ],
        "turnlog.events",
    ),
    **dict.fromkeys(
        [
            "ForkBoundaryError",
            "InvalidSessionIdError",
            "LimitExceededError",
            "NotAStoreError",
            "SeqConflictError",
            "SessionHeldHereError",
            "StoreIOError",
            "UnfinishedSessionError",
            "UnknownEventTypeError",
            "UnreadableRecordError",
        ],
        "turnlog.errors",
    ),
    **dict.fromkeys(
        [
            "ToolContext",
            "continue_tree",
            "run_agent_turn",
            "subagent_tool",
            "task_wait_tool",
        ],
        "turnlog.runtime.loop",
    ),
    **dict.fromkeys(["Holder", "register_backend"], "turnlog.stores"),
    **dict.fromkeys(["Fold", "Message", "SessionState", "fold"], "turnlog.core.fold"),
    **dict.fromkeys(["OwedCall", "Wait"], "turnlog.core.verdict"),
    **dict.fromkeys(["interrupted", "patch_dangling_tool_calls"], "turnlog.core.recovery"),
    **dict.fromkeys(["RevivedTree", "TreeNode", "revive_tree"], "turnlog.ops.tree"),
    **dict.fromkeys(["Report", "verify_session", "verify_store"], "turnlog.ops.verify"),
    **dict.fromkeys(["copy_session", "write_events"], "turnlog.ops.transfer"),
    **dict.fromkeys(["fork", "fork_session"], "turnlog.ops.fork"),
    **dict.fromkeys(["Problem", "TornTail"], "turnlog.core.damage"),
    "Budget": "turnlog.runtime.budgets",
    "NoticeStyle": "turnlog.core.notices",
    "sweep": "turnlog.ops.sweep",
}


def __getattr__(name: str) -> Any:
    if name in _SHADOWED:
        return _door_of(name)
    home = _HOMES.get(name)
    if home is None:
        home = _MOVED.get(name)
        if home is None:
            return _submodule(name)
        warnings.warn(
            f"turnlog.{name} has moved: import it from {home} (from {home} import {name})",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(home), name)
    value = getattr(importlib.import_module(home), name)
    # Cached in the module's namespace, so a second use is a plain lookup.
    globals()[name] = value
    return value


def _submodule(name: str) -> ModuleType:
    """`turnlog.events` after a bare `import turnlog`, as when the top level
    imported its modules eagerly."""
    if name.startswith("__"):
        raise AttributeError(f"module 'turnlog' has no attribute {name!r}")
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as error:
        if error.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module 'turnlog' has no attribute {name!r}") from None


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})


# Three names are functions named like a module (`verdict`, `fold`, `fork`):
# `turnlog.verdict` is both the documented function and the module path
# `turnlog.verdict`. One attribute cannot be both, so it is the module, made
# callable as the function it re-exports: `import turnlog.verdict as m` is the
# module, `from turnlog import verdict` and `turnlog.verdict(events)` call
# the function. `fold` and `fork` left the top level, so calling their module
# warns as the other moved names do.
_SHADOWED = frozenset({"verdict", "fold", "fork"})


class _CallableDoor(ModuleType):
    """A door module that is also the function of its name."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name = self.__name__.rpartition(".")[2]
        function = getattr(self, name)
        home = function.__module__
        if name in _MOVED:
            warnings.warn(
                f"turnlog.{name} has moved: import it from {home} (from {home} import {name})",
                DeprecationWarning,
                stacklevel=2,
            )
        return function(*args, **kwargs)


def _callable(door: ModuleType, name: str) -> ModuleType:
    if not isinstance(door, _CallableDoor):
        door.__class__ = _CallableDoor
        # `inspect.signature` follows it to the function.
        setattr(door, "__wrapped__", getattr(door, name))  # noqa: B010
    return door


def _door_of(name: str) -> ModuleType:
    return _callable(importlib.import_module(f"{__name__}.{name}"), name)


class _TopLevel(ModuleType):
    def __setattr__(self, name: str, value: Any) -> None:
        # Importing a submodule binds it here: the three doors become callable.
        if name in _SHADOWED and isinstance(value, ModuleType):
            value = _callable(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _TopLevel

__all__ = [
    "AgentSpec",
    "Approve",
    "AssistantMessage",
    "AsyncLog",
    "Awaiting",
    "Compaction",
    "CorruptLogError",
    "Custom",
    "Deliver",
    "EngineRun",
    "FormatError",
    "Inspection",
    "JSONLStore",
    "Log",
    "LogPoisonedError",
    "MemoryStore",
    "NotASessionError",
    "Plan",
    "Recovery",
    "Reject",
    "Reply",
    "Revival",
    "SQLiteStore",
    "SessionExistsError",
    "SessionInterruptedError",
    "SessionLockedError",
    "SessionNotFoundError",
    "Store",
    "StoreNotFoundError",
    "SystemMessage",
    "Tool",
    "ToolCall",
    "ToolResult",
    "TurnlogError",
    "UsageError",
    "UserMessage",
    "Verdict",
    "WriteOrderError",
    "__version__",
    "aopen",
    "arun_turn",
    "at_most_once",
    "continue_run",
    "inspect",
    "is_finished",
    "open",
    "open_store",
    "plan",
    "recover",
    "revive",
    "run_turn",
    "verdict",
]
