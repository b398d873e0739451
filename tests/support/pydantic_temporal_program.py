"""A Pydantic AI agent made durable by Temporal (`TemporalDurability`), recorded by `TurnlogTemporalCapability`.

Run by tests/integrations/engines/test_temporal_engine.py as worker processes
against a Temporal dev server on loopback, configured by the environment:

    TURNLOG_ENGINE_TARGET=STORE TURNLOG_ENGINE_KILL=KILL TURNLOG_ENGINE_WORK=WORKDIR
    python pydantic_temporal_program.py START|WORK ADDRESS WORKFLOW_ID

KILL is `none`, `tool` (inside `send_money`, after its side effect) or
`model2` (inside the second model request); each kill happens once.
The tool's activity is never retried by Temporal (`maximum_attempts=1`):
a worker that dies inside it leaves the call to turnlog, which answers R1.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPlugin, TemporalDurability
from pydantic_ai.models.function import FunctionModel
from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.workflow import ActivityConfig

with workflow.unsafe.imports_passed_through():
    from pydantic_engine_agent import Payer
    from temporal_launch import start_or_take_over
    from turnlog.integrations.pydantic_ai.temporal import ACTIVITIES, TurnlogTemporalCapability

STORE = os.environ["TURNLOG_ENGINE_TARGET"]
WORK = Path(os.environ["TURNLOG_ENGINE_WORK"])
PAYER = Payer(WORK, os.environ.get("TURNLOG_ENGINE_KILL", "none"))
# A dead worker is noticed when its activity times out.
QUICK = ActivityConfig(start_to_close_timeout=timedelta(seconds=3))
ONCE = ActivityConfig(
    start_to_close_timeout=timedelta(seconds=3), retry_policy=RetryPolicy(maximum_attempts=1)
)

capability = TurnlogTemporalCapability(STORE, "s1", idempotency={"send_money": "destructive"})
agent = Agent(
    FunctionModel(PAYER.model),
    name="payer",
    capabilities=[TemporalDurability(activity_config=QUICK), capability],
)
agent.tool_plain(metadata={"temporal": ONCE})(PAYER.tool())


@workflow.defn
class PayerWorkflow:
    @workflow.run
    async def run(self, prompt: str) -> str:
        return str((await agent.run(prompt)).output)


if __name__ == "__main__":
    start_or_take_over(
        PayerWorkflow.run,
        ["send bob money"],
        task_queue="payer",
        client_plugins=[PydanticAIPlugin()],
        workflows=[PayerWorkflow],
        activities=ACTIVITIES,
        plugins=[AgentPlugin(agent)],
    )
