"""Per-call deadlines: running a tool under a time limit, and the live results D1 and D2."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Final

from turnlog import events as ev
from turnlog.events import LATE_RESULT_TYPE as LATE_RESULT_TYPE, Content, Risk, ToolCall

_PAST_DEADLINE_TEXT: Final = (
    "[turnlog] Tool call {what} did not finish within its deadline of {timeout_s:g} s, "
    "so the agent stopped waiting for it. The call itself may have been right: this "
    "result is marked an error because it is not the tool's answer. Its outcome is "
    "unknown: it may have taken effect, fully or in part, and may still be running. It "
    "has NOT been retried: check the state of what it was changing before assuming "
    "either way."
)
_BEHIND_DEADLINE_TEXT: Final = (
    "[turnlog] Tool call {what} was not run: an earlier call of the same step "
    "({earlier}) exceeded its deadline, so this one was not dispatched. It had no side "
    "effects. Run it again if it is still needed."
)


def describe_call(call_id: str, name: str | None) -> str:
    return f"`{name}` ({call_id})" if name else f"({call_id})"


def past_deadline_result(call: ToolCall, timeout_s: float) -> ev.ToolResult:
    """D1: the call was dispatched and ran past its deadline; outcome unknown."""
    return ev.ToolResult(
        call_id=call.id,
        name=call.name,
        content=_PAST_DEADLINE_TEXT.format(
            what=describe_call(call.id, call.name), timeout_s=timeout_s
        ),
        is_error=True,
        risk=Risk.OUTCOME_UNKNOWN.value,
        rule="D1",
    )


def behind_deadline_result(call: ToolCall, earlier: ToolCall) -> ev.ToolResult:
    """D2: the call was never dispatched, because an earlier one of its step
    ran past its deadline. A live writer's claim, like U2: it knows it did not
    dispatch the call."""
    return ev.ToolResult(
        call_id=call.id,
        name=call.name,
        content=_BEHIND_DEADLINE_TEXT.format(
            what=describe_call(call.id, call.name),
            earlier=describe_call(earlier.id, earlier.name),
        ),
        is_error=True,
        risk=Risk.NOT_STARTED.value,
        rule="D2",
    )


def late_result(call: ToolCall, content: Content, *, is_error: bool) -> ev.Custom:
    """What a call answered D1 returned after all: for the record only."""
    return ev.Custom(
        type=LATE_RESULT_TYPE,
        fields={
            "call_id": call.id,
            "name": call.name,
            "content": content,
            "is_error": is_error,
        },
    )


class ToolThread:
    """A sync tool body running in a worker thread the loop may stop waiting for.

    Python cannot stop a thread: a runaway body keeps running (and keeps
    changing whatever it changes) after its deadline, until it returns or the
    process ends. When it returns late, `on_late(content, is_error)` is called
    from its thread, exactly once, so the output can be recorded; it is never
    delivered as the call's answer.
    """

    def __init__(self, body: Callable[[], Any], on_late: Callable[[Content, bool], None]) -> None:
        self._body = body
        self._on_late = on_late
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._abandoned = False
        self.output: Any = None
        self.error: Exception | None = None
        self._thread = threading.Thread(target=self._run, name="turnlog-tool", daemon=True)

    def start(self) -> ToolThread:
        self._thread.start()
        return self

    def _run(self) -> None:
        output: Any = None
        error: Exception | None = None
        try:
            output = self._body()
        except Exception as exc:  # the tool's failure is its outcome, not a crash
            error = exc
        with self._lock:
            self.output, self.error = output, error
            self._done.set()
            late = self._abandoned
        if late:
            if error is not None:
                self._on_late(f"{type(error).__name__}: {error}", True)
            else:
                self._on_late(output, False)

    def wait(self, timeout_s: float | None) -> bool:
        """True when the body finished in time; False abandons it for good."""
        self._done.wait(timeout_s)
        with self._lock:
            if self._done.is_set():
                return True
            self._abandoned = True
            return False
