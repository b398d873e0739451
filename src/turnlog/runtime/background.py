"""Background subagents: spawn now, deliver the report once, later; revive or report the lost."""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Collection
from typing import Any, Final

import msgspec

from turnlog import events as ev
from turnlog.core.fold import BackgroundChild, SessionState
from turnlog.core.notices import NoticeStyle, framed
from turnlog.core.revivable import DEFAULT_MAX_REVIVALS
from turnlog.errors import SessionLockedError, TurnlogError
from turnlog.events import Content, Origin
from turnlog.handle.log import Log
from turnlog.ops.open import open as open_log
from turnlog.ops.revival import revive
from turnlog.stores import child_session_id
from turnlog.text import display_text

#: The name of the reference loops' join tool.
WAIT_TOOL: Final = "task_wait"

_ACK_TEXT: Final = (
    "Started subagent {agent_id} in the background; this is an acknowledgement, not its "
    "answer. It runs on its own: its report will arrive later as an automated "
    "notification, or call `{wait_tool}` with agent_id {agent_id!r} to wait for it."
)
_REPORT_BODY: Final = (
    "Background subagent {agent_id} (started by call {call_id}) finished. Its report:\n{text}"
)
_ERROR_BODY: Final = (
    "Background subagent {agent_id} (started by call {call_id}) failed: {text}. What it "
    "did before failing may have taken effect; check before starting it again."
)
_LOST_BODY: Final = (
    "Background subagent {agent_id} (started by call {call_id}) was lost: {text}. It "
    "will not report. What it did may have taken effect, fully or in part; check the "
    "state of what it was changing before starting it again."
)
_BODIES: Final = {"complete": _REPORT_BODY, "error": _ERROR_BODY, "lost": _LOST_BODY}


def acknowledgement(agent_id: str, wait_tool: str = WAIT_TOOL) -> str:
    """The spawn call's result: the child started, its answer comes later."""
    return _ACK_TEXT.format(agent_id=agent_id, wait_tool=wait_tool)


class Delivered(msgspec.Struct, frozen=True, kw_only=True):
    """A join tool's output: the report it returns, and the child it delivers,
    so the loop records the result with `delivers` and never injects it too."""

    content: Content
    delivers: str


def report_body(child: BackgroundChild) -> str:
    """What the parent is told about a settled child, by its outcome."""
    settled = child.settled
    assert settled is not None
    outcome = settled.outcome or "error"
    text = settled.result if isinstance(settled.result, str) else str(settled.result or "")
    return _BODIES.get(outcome, _ERROR_BODY).format(
        agent_id=child.agent_id, call_id=child.spawned.call_id, text=text
    )


def report_message(child: BackgroundChild, style: NoticeStyle | None = None) -> ev.UserMessage:
    """The injected message that delivers a settled child's report."""
    return ev.UserMessage(
        content=framed("background", report_body(child), style),
        injected="background",
        delivers=child.agent_id,
        render_as=style.render_as if style is not None else None,
    )


def deliverable(state: SessionState) -> list[BackgroundChild]:
    """Children that settled and whose report was not delivered yet."""
    return [c for c in state.background if c.settled is not None and c.delivered is None]


def undelivered(state: SessionState) -> list[BackgroundChild]:
    """Children whose report was not delivered yet, settled or not."""
    return [c for c in state.background if c.delivered is None]


def child_of(log: Log, spawned: ev.SubagentSpawned) -> str:
    return spawned.child or child_session_id(log.session_id, spawned.agent_id)


class Registry:
    """The background children running in this process for one parent handle."""

    def __init__(self) -> None:
        self.running: set[str] = set()
        self.changed = threading.Condition()

    def settle(self, parent: Log, settled: ev.SubagentSettled, origin: str | None) -> None:
        """Record a child's end on its parent and wake whoever waits on it.

        When the parent's handle is closed by then, the record is lost here
        but not the report: the child's own log holds it, and the parent's
        next loop delivers it from there (`adopt`).
        """
        try:
            parent.append(settled, origin=origin, sync=True)
        except TurnlogError:
            pass
        finally:
            with self.changed:
                self.running.discard(settled.agent_id)
                self.changed.notify_all()


_REGISTRIES: Final[weakref.WeakKeyDictionary[Log, Registry]] = weakref.WeakKeyDictionary()
_REGISTRIES_LOCK: Final = threading.Lock()


def registry(log: Log) -> Registry:
    with _REGISTRIES_LOCK:
        found = _REGISTRIES.get(log)
        if found is None:
            found = _REGISTRIES[log] = Registry()
        return found


def settled_record(
    spawned: ev.SubagentSpawned, child: str, outcome: str, result: str | None
) -> ev.SubagentSettled:
    return ev.SubagentSettled(
        agent_id=spawned.agent_id,
        call_id=spawned.call_id,
        child=child,
        outcome=outcome,
        result=result,
        background=True,
    )


def run_in_thread(
    parent: Log, spawned: ev.SubagentSpawned, child: str, body: Callable[[], Content]
) -> threading.Thread:
    """Run a child's loop in a thread; its end is recorded on the parent."""
    found = registry(parent)
    with found.changed:
        found.running.add(spawned.agent_id)

    def run() -> None:
        try:
            text = display_text(body())
            outcome = "complete"
        except Exception as exc:  # a failing child is a report, not a crash of the parent
            outcome, text = "error", f"{type(exc).__name__}: {exc}"
        found.settle(parent, settled_record(spawned, child, outcome, text), None)

    thread = threading.Thread(target=run, name=f"turnlog-bg-{spawned.agent_id}", daemon=True)
    thread.start()
    return thread


def deliver_reports(log: Log, style: NoticeStyle | None = None) -> list[ev.Event]:
    """Inject the report of every settled, undelivered child, once: at a step
    boundary, where no call is owed."""
    # Under the handle's lock, so that what was read undelivered is what is
    # delivered: nothing else can deliver the same report in between.
    with log.lock:
        ready = deliverable(log.state)
        if not ready:
            return []
        return log.append_many(
            [report_message(child, style) for child in ready],
            origin=Origin.BACKGROUND.value,
            sync=True,
        )


def wait_for_report(
    log: Log,
    agent_id: str | None = None,
    *,
    timeout_s: float | None = None,
    poll_s: float = 0.2,
) -> bool:
    """Block until a child running here (or `agent_id`) settles, for at most
    `timeout_s` seconds (None: as long as it takes).

    True when there is a report to deliver; False when nothing this process
    runs could bring one (the children left are held elsewhere), or when
    `timeout_s` passed first (`still_running` tells the two apart).
    """
    found = registry(log)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        state = log.state
        ready = [c.agent_id for c in deliverable(state)]
        if (agent_id in ready) if agent_id is not None else ready:
            return True
        with found.changed:
            waiting = agent_id in found.running if agent_id is not None else bool(found.running)
            if not waiting:
                return False
            wait_s = poll_s
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                wait_s = min(poll_s, left)
            found.changed.wait(wait_s)


def still_running(log: Log) -> bool:
    """Whether a background child of `log` still runs in this process."""
    found = registry(log)
    with found.changed:
        return bool(found.running)


def meanwhile(child: BackgroundChild) -> str:
    """What a join answers when the report it waited for went out another
    way while it waited (injected, or joined by another call)."""
    return (
        f"The report of {child.agent_id} was delivered while this call waited (event "
        f"{child.delivered}), so it is not repeated here."
    )


class Adopted(msgspec.Struct, frozen=True, kw_only=True):
    """A crashed child revived under its original id, for its parent's loop to run."""

    spawned: ev.SubagentSpawned
    child: str
    log: Log
    spec: Any


def adopt(
    log: Log,
    spec_for: Callable[[ev.SubagentSpawned], Any],
    *,
    running: Collection[str] = (),
    max_revivals: int = DEFAULT_MAX_REVIVALS,
) -> list[Adopted]:
    """Take charge of the undelivered children nothing in this process runs
    (after a crash, or a parent reopened): a child that finished is settled
    from its own log; one that can be revived is revived under its original
    id and returned, for the loop to run and settle; one that cannot is
    settled `lost`, honestly. A child another live process holds is left to it.
    """
    adopted = []
    for child in undelivered(log.state):
        if child.settled is not None or child.agent_id in running:
            continue
        found = _adopt_one(log, child.spawned, spec_for, max_revivals)
        if found is not None:
            adopted.append(found)
    return adopted


def _adopt_one(
    log: Log,
    spawned: ev.SubagentSpawned,
    spec_for: Callable[[ev.SubagentSpawned], Any],
    max_revivals: int,
) -> Adopted | None:
    child = child_of(log, spawned)

    def settle(outcome: str, text: str, origin: str | None) -> None:
        log.append(settled_record(spawned, child, outcome, text), origin=origin, sync=True)

    def lost(why: str) -> None:
        settle("lost", why, Origin.BACKGROUND.value)

    try:
        child_log = open_log(log.store, child, create=False)
    except SessionLockedError:
        return None
    except TurnlogError as exc:
        lost(f"its session could not be opened ({type(exc).__name__})")
        return None
    verdict = child_log.verdict()
    if verdict.finished:
        if verdict.open_turn is not None:
            child_log.recover()  # it answered and died before its turn_end
        last = child_log.last_message()
        child_log.close()
        settle("complete", display_text(last.content) if last is not None else "", None)
        return None
    spec = spec_for(spawned)
    if spec is None:
        child_log.close()
        lost("no agent of its type is known to this loop, so it could not be revived")
        return None
    revival = revive(child_log, max_revivals=max_revivals)
    if not revival.revived:
        child_log.close()
        lost(f"it could not be revived ({revival.reason})")
        return None
    return Adopted(spawned=spawned, child=child, log=child_log, spec=spec)
