"""An agent as a Temporal workflow: turnlog written from activities, each tool call guarded in its activity.

Run by tests/integrations/engines/test_temporal_engine.py as worker processes
against a Temporal dev server on loopback:

    TURNLOG_ENGINE_TARGET=... TURNLOG_ENGINE_WORK=... TURNLOG_ENGINE_KILL=...
    python temporal_program.py START|WORK ADDRESS WORKFLOW_ID

(tests/support/temporal_launch.py: START starts the workflow, WORK is a new worker
after the first was SIGKILLed.) Workflow code may not write files, so every turnlog write
is an activity's:

- `record` writes the run's turn as the workflow knows it so far (the
  prompt, the model's replies, whether the turn is over). It opens the
  session for the workflow's run and writes everything from the top: what
  an earlier attempt wrote is met, not written again (docs/engines.md), so
  an attempt killed halfway is simply retried. It returns the transcript
  the model is asked with.
- `run_tool` runs a tool under `turnlog.at_most_once`, with a handle for
  the run's open turn (`replay=False`): Temporal retries an activity whose
  worker died, and the retry answers R1.
"""

from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    import turnlog
    from engine_agent import PROMPT, Agent, as_request, guarded_tool
    from temporal_launch import start_or_take_over
    from turnlog import EngineRun, ToolCall

QUEUE = "turnlog-agent"
SESSION = "s1"


@functools.cache
def agent_here() -> Agent:
    """This worker process's agent: its kill point counts the process's writes."""
    return Agent(os.environ["TURNLOG_ENGINE_WORK"], os.environ.get("TURNLOG_ENGINE_KILL", "none"))


def engine_run() -> EngineRun:
    return EngineRun(engine="temporal", run_id=activity.info().workflow_id or "")


@activity.defn
def record(replies: list[dict[str, Any]], finished: bool) -> list[dict[str, Any]]:
    """The run's writes from the top: met where an earlier attempt made them."""
    agent = agent_here()
    target = os.environ["TURNLOG_ENGINE_TARGET"]
    with turnlog.open(target, SESSION, engine_run=engine_run()) as log:
        log.subscribe(agent.count_writes)
        turn = log.begin_turn()
        log.user(PROMPT)
        for number, reply in enumerate(replies, 1):
            log.begin_step()
            calls = [ToolCall(**c) for c in reply["calls"]]
            log.assistant(reply["text"], tool_calls=calls)
            if number < len(replies) or finished:
                log.end_step()
        if finished:
            log.end_turn(turn)
        return as_request(log)


@activity.defn
def call_model(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return agent_here().model_reply(messages)


@activity.defn
def run_tool(call: dict[str, Any]) -> dict[str, Any]:
    target = os.environ["TURNLOG_ENGINE_TARGET"]
    agent = agent_here()
    with turnlog.open(target, SESSION, engine_run=engine_run(), replay=False) as log:
        log.subscribe(agent.count_writes)
        return guarded_tool(agent, log, call)


@workflow.defn
class AgentWorkflow:
    @workflow.run
    async def run(self) -> str:
        # A worker that died is noticed when its activity times out; then
        # the activity is retried on a live worker.
        options: Any = {
            "start_to_close_timeout": timedelta(seconds=3),
            "retry_policy": RetryPolicy(initial_interval=timedelta(milliseconds=100)),
        }
        replies: list[dict[str, Any]] = []
        while True:
            messages = await workflow.execute_activity(record, args=[replies, False], **options)
            reply = await workflow.execute_activity(call_model, messages, **options)
            replies.append(reply)
            await workflow.execute_activity(record, args=[replies, False], **options)
            for call in reply["calls"]:
                await workflow.execute_activity(run_tool, call, **options)
            if not reply["calls"]:
                await workflow.execute_activity(record, args=[replies, True], **options)
                return str(reply["text"])


if __name__ == "__main__":
    start_or_take_over(
        AgentWorkflow.run,
        [],
        task_queue=QUEUE,
        workflows=[AgentWorkflow],
        activities=[record, call_model, run_tool],
        activity_executor=ThreadPoolExecutor(4),
    )
