"""The door of `turnlog.loop`, which lives in `turnlog.runtime.loop`: it only
re-exports the documented names, so code written for the old path keeps working."""

from turnlog.core.notices import (
    NoticeStyle as NoticeStyle,
)
from turnlog.errors import (
    UsageError as UsageError,
)
from turnlog.events import (
    Origin as Origin,
    ToolCall as ToolCall,
    ToolDispatch as ToolDispatch,
    TurnEndReason as TurnEndReason,
)
from turnlog.handle.log import (
    Log as Log,
)
from turnlog.ops.tree import (
    RevivedTree as RevivedTree,
    TreeNode as TreeNode,
)
from turnlog.runtime.agents import (
    AgentSpec as AgentSpec,
    Reply as Reply,
    Tool as Tool,
)
from turnlog.runtime.budgets import (
    Budget as Budget,
)
from turnlog.runtime.loop import (
    ToolContext as ToolContext,
    continue_run as continue_run,
    continue_tree as continue_tree,
    join_background as join_background,
    run_agent_turn as run_agent_turn,
    run_turn as run_turn,
    subagent_tool as subagent_tool,
    task_wait_tool as task_wait_tool,
)
