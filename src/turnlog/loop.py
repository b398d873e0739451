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
)
from turnlog.events import (
    ToolCall as ToolCall,
)
from turnlog.events import (
    ToolDispatch as ToolDispatch,
)
from turnlog.events import (
    TurnEndReason as TurnEndReason,
)
from turnlog.handle.log import (
    Log as Log,
)
from turnlog.ops.tree import (
    RevivedTree as RevivedTree,
)
from turnlog.ops.tree import (
    TreeNode as TreeNode,
)
from turnlog.runtime.agents import (
    AgentSpec as AgentSpec,
)
from turnlog.runtime.agents import (
    Reply as Reply,
)
from turnlog.runtime.agents import (
    Tool as Tool,
)
from turnlog.runtime.budgets import (
    Budget as Budget,
)
from turnlog.runtime.loop import (
    ToolContext as ToolContext,
)
from turnlog.runtime.loop import (
    continue_run as continue_run,
)
from turnlog.runtime.loop import (
    continue_tree as continue_tree,
)
from turnlog.runtime.loop import (
    join_background as join_background,
)
from turnlog.runtime.loop import (
    run_agent_turn as run_agent_turn,
)
from turnlog.runtime.loop import (
    run_turn as run_turn,
)
from turnlog.runtime.loop import (
    subagent_tool as subagent_tool,
)
from turnlog.runtime.loop import (
    task_wait_tool as task_wait_tool,
)
