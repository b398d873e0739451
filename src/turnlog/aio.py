"""The door of `turnlog.aio`, which lives in `turnlog.runtime.async_loop` (its `aopen` in
`turnlog.ops.open`): it only re-exports the documented names, so code written for the
old path keeps working."""

from turnlog.core.notices import (
    NoticeStyle as NoticeStyle,
)
from turnlog.core.state import (
    Message as Message,
)
from turnlog.events import (
    Origin as Origin,
    ToolCall as ToolCall,
    TurnEndReason as TurnEndReason,
)
from turnlog.handle.async_log import (
    AsyncLog as AsyncLog,
)
from turnlog.ops.open import (
    aopen as aopen,
)
from turnlog.runtime.agents import (
    AgentSpec as AgentSpec,
    Reply as Reply,
    Tool as Tool,
)
from turnlog.runtime.async_loop import (
    AsyncModel as AsyncModel,
    AsyncToolContext as AsyncToolContext,
    StepCalls as StepCalls,
    acontinue_run as acontinue_run,
    arun_agent_turn as arun_agent_turn,
    arun_turn as arun_turn,
    async_subagent_tool as async_subagent_tool,
    async_task_wait_tool as async_task_wait_tool,
)
from turnlog.runtime.budgets import (
    Budget as Budget,
)
