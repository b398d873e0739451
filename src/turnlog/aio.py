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
)
from turnlog.events import (
    ToolCall as ToolCall,
)
from turnlog.events import (
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
)
from turnlog.runtime.agents import (
    Reply as Reply,
)
from turnlog.runtime.agents import (
    Tool as Tool,
)
from turnlog.runtime.async_loop import (
    AsyncModel as AsyncModel,
)
from turnlog.runtime.async_loop import (
    AsyncToolContext as AsyncToolContext,
)
from turnlog.runtime.async_loop import (
    StepCalls as StepCalls,
)
from turnlog.runtime.async_loop import (
    acontinue_run as acontinue_run,
)
from turnlog.runtime.async_loop import (
    arun_agent_turn as arun_agent_turn,
)
from turnlog.runtime.async_loop import (
    arun_turn as arun_turn,
)
from turnlog.runtime.async_loop import (
    async_subagent_tool as async_subagent_tool,
)
from turnlog.runtime.async_loop import (
    async_task_wait_tool as async_task_wait_tool,
)
from turnlog.runtime.budgets import (
    Budget as Budget,
)
