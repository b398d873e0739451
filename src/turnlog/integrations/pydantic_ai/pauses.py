"""Pydantic AI's deferred tools as turnlog pauses: the run that defers, and the run that resumes.

A run whose output is `DeferredToolRequests` stopped on purpose: each call
that waits for an approval (`requires_approval`, `ApprovalRequired` from an
arguments validator) or for an outside result (`ExternalToolset`,
`CallDeferred`) is paused in the log, so no recovery or sweep takes the run
for a crashed one. The decisions come back with the next run's
`deferred_tool_results`; they are recorded before any tool runs (an approved
call is then dispatched write-ahead, as every call), and the caller holds
them until then: the pauses name it as where the decision is kept
(`decided_in`), so one that ends undecided reads "may have run" (A3).
"""

from __future__ import annotations

from typing import Any, Final

from pydantic_ai import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.exceptions import ModelRetry, ToolFailed

from turnlog.core.pauses import awaiting_call
from turnlog.handle.log import Log
from turnlog.integrations.kit.boundaries import begin_step, end_step_paused
from turnlog.integrations.kit.pauses import hold_call
from turnlog.runtime.approvals import Approve, DecisionInput, Deliver, Reject, record_decisions
from turnlog.text import foreign_text

# Where the decision about a deferred call is kept until the run resumes.
DECIDED_IN: Final = "Pydantic AI's deferred_tool_results"


def pause_deferred(log: Log, requests: DeferredToolRequests) -> None:
    """Pause each deferred call the run asked for and never started; the
    open step ends `paused` once nothing else in it is owed. A call whose
    tool body raised the deferral had already been dispatched (it started):
    it stays a call in flight, as the log can prove no more of it."""
    with log.lock:
        for part in requests.approvals:
            hold_call(log, part.tool_call_id, kind="approval", decided_in=DECIDED_IN)
        for part in requests.calls:
            kind = "input" if requests.kind(part.tool_call_id) == "question" else "external"
            hold_call(log, part.tool_call_id, kind=kind, decided_in=DECIDED_IN)
        end_step_paused(log)


def record_deferred_results(log: Log, results: DeferredToolResults) -> None:
    """The resumed run's `deferred_tool_results`, recorded before anything
    acts on them: an approval (the tool then runs, dispatched first), a
    denial (A1: it never runs), an outside result (delivered). Nothing is
    written unless every undecided pause has its result: Pydantic AI refuses
    such a run itself, and the log must not hold half of its decisions."""
    with log.lock:
        undecided = {one.call_id for one in log.awaiting if one.decision is None}
        if not undecided:
            return
        given = results.to_tool_call_results()
        if any(call_id not in given for call_id in undecided):
            return
        decisions: dict[str, DecisionInput] = {}
        for call_id, result in given.items():
            if call_id not in undecided:
                continue
            by = results.answered_by.get(call_id)
            if isinstance(result, ToolApproved):
                decisions[call_id] = Approve(by=by, reason="approved in deferred_tool_results")
            elif isinstance(result, ToolDenied):
                decisions[call_id] = Reject(by=by, reason=result.message)
            elif isinstance(result, ToolFailed | ModelRetry):
                decisions[call_id] = Deliver(content=str(result), by=by, is_error=True)
            else:
                decisions[call_id] = Deliver(content=_delivered_text(result), by=by)
        record_decisions(log, decisions, keeper=DECIDED_IN)


def drop_pauses(log: Log) -> None:
    """A run with a new prompt while calls wait: they end as calls whose
    decision never came (A3), and the turn closes when nothing else is owed."""
    log.expire(because="a new run began on the session before any decision")


def _delivered_text(result: Any) -> str:
    value = getattr(result, "return_value", result)
    return foreign_text(value) or str(value)


def acting_on_approval(log: Log, call_id: str) -> None:
    """An approved paused call is about to run: a step of the resumed turn
    holds its dispatch."""
    with log.lock:
        if awaiting_call(log.awaiting, call_id) is not None:
            begin_step(log, open_step=False)
