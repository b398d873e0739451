"""LangGraph approvals as turnlog pauses: a declared tool waits on `interrupt()` before it starts.

A tool the wrapper is told pauses (`TurnlogToolWrapper(pauses={"charge":
"approval"})`, or the tool's `metadata={"turnlog_pause": "approval"}`) is
paused in the log and interrupted by the wrapper itself, before any dispatch
and before the tool body: LangGraph runs a tool again from its start on
resume, so an `interrupt()` inside a body runs the code before it twice,
while the wrapper's runs nothing. The run resumes with
`Command(resume=...)`: for an approval, a true value approves (the call is
then dispatched write-ahead and runs once) and a false one declines it (A1);
for an `input` or `external` pause, the value is the call's result
(delivered). The decision is recorded before it is acted on. The checkpoint
holds the resume value until the run resumes, so the pause names it as where
the decision is kept (`decided_in`), and a decision from anywhere else
(`turnlog approve`) is refused with a hint.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from turnlog.core.pauses import Awaiting, awaiting_call, check_kind
from turnlog.errors import UsageError
from turnlog.handle.log import Log
from turnlog.integrations.kit.boundaries import begin_step, end_step_paused
from turnlog.integrations.kit.pauses import call_prompt, hold_call
from turnlog.runtime.approvals import Approve, DecisionInput, Deliver, Reject, record_decisions
from turnlog.text import foreign_text

DECIDED_IN: Final = "the LangGraph checkpoint"
# A tool's metadata key naming the kind of pause its calls take.
METADATA_KEY: Final = "turnlog_pause"


def check_pauses(pauses: Mapping[str, str] | None) -> dict[str, str]:
    """The wrapper's `pauses` map (tool name to pause kind), checked up front."""
    return {str(name): check_kind(kind) for name, kind in (pauses or {}).items()}


def pause_kind(pauses: Mapping[str, str], name: str, tool: Any) -> str | None:
    """The kind of pause a call of tool `name` takes before it runs, or None."""
    metadata = getattr(tool, "metadata", None) or {}
    kind = pauses.get(name, metadata.get(METADATA_KEY))
    return check_kind(kind) if kind is not None else None


def hold(log: Log, call_id: str, name: str, args: Any, kind: str) -> Awaiting | None:
    """The call's pause: written now (synced) when the call has none, its step
    ended `paused` once nothing else in it is owed. None when the call is not
    one to hold: already dispatched or answered (a resumed step)."""
    with log.lock:
        prompt = call_prompt(name, args)
        if hold_call(log, call_id, kind=kind, decided_in=DECIDED_IN, prompt=prompt):
            end_step_paused(log)
        return _awaiting(log, call_id)


def interrupt_value(waiting: Awaiting, args: Any) -> dict[str, Any]:
    """What the graph's caller reads in `__interrupt__`."""
    return {
        "call_id": waiting.call_id,
        "name": waiting.name,
        "args": args,
        "kind": waiting.kind,
        "turnlog": "paused",
    }


def act_on(log: Log, waiting: Awaiting, value: Any) -> bool:
    """Record the resume value as the call's decision; True when the call is
    to run (approved), False when the log now holds its answer."""
    if waiting.kind == "approval" and not isinstance(value, bool):
        # A value that only looks like a decision ("no", {"approved": False})
        # must not approve a charge: refused, nothing written.
        raise UsageError(
            f"resume value {value!r} for the approval of call {waiting.call_id!r} is not "
            "True or False",
            hint="resume with Command(resume=True) to approve or Command(resume=False) to decline",
        )
    with log.lock:
        begin_step(log, open_step=False)  # the paused turn resumes
        decision: DecisionInput
        if waiting.kind != "approval":
            decision = Deliver(content=foreign_text(value) or str(value), by="langgraph")
        elif value:
            decision = Approve(by="langgraph", reason="Command(resume=True)")
        else:
            decision = Reject(by="langgraph", reason="declined with Command(resume=False)")
        record_decisions(log, {waiting.call_id: decision}, keeper=DECIDED_IN)
        return isinstance(decision, Approve)


def resume_decided(log: Log) -> None:
    """A call approved in the log (`turnlog approve`): its step opens to run it."""
    with log.lock:
        begin_step(log, open_step=False)


def _awaiting(log: Log, call_id: str) -> Awaiting | None:
    return awaiting_call(log.awaiting, call_id)
