"""Subagent trees: a session's descendants, and reviving a crashed tree as itself."""

from __future__ import annotations

import os
from types import TracebackType
from typing import Final, Literal

from turnlog import events as ev
from turnlog.core.revivable import (
    DEFAULT_MAX_REVIVALS,
    Refusal,
    already_told,
    check_max_revivals,
    refusal,
)
from turnlog.core.verdict import Verdict, Wait
from turnlog.errors import (
    FormatError,
    LimitExceededError,
    SessionLockedError,
    UnfinishedSessionError,
)
from turnlog.events import Content, Origin
from turnlog.handle.log import Log, open_handle as open_log
from turnlog.handle.opening import MUST_EXIST
from turnlog.ops.revival import Revival, RevivalReason, revive
from turnlog.stores import Store, child_session_id, stored_session
from turnlog.text import display_text

# A tree is opened whole (every session's writer lock is taken before anything
# is written), so its size is bounded like everything else.
MAX_TREE_SESSIONS: Final = 1_000

#: What `revive_tree` decided for a node (`TreeNode.decision`).
TreeDecision = Literal["revive", "answer", "leave"]
#: What came of it, in words (`TreeNode.outcome`): a refusal
#: (`revivable.Refusal`) when the node may not be revived.
TreeOutcome = Literal[
    "left alone",
    "answered its wait from its log",
    "revived",
    "already revived, not yet run on",
    Refusal,
]


def _outcome(reason: RevivalReason) -> TreeOutcome:
    """A revived node's outcome, in words, by the reason `revive` gave."""
    if reason == "already_revived":
        return "already revived, not yet run on"
    if reason == "running" or reason == "corrupt" or reason == "unreadable":
        # Said only of a session `revive` could not open: a tree's nodes are
        # opened, under their locks, before anything is revived.
        raise AssertionError(f"revive said {reason!r} of a node the tree holds open")
    return reason


def descendants(store: Store, session_id: str) -> list[str]:
    """`session_id` and every session below it, parents before their children."""
    out = [session_id]
    index = 0
    while index < len(out):
        out.extend(store.children(out[index]))
        index += 1
        if len(out) > MAX_TREE_SESSIONS:
            raise LimitExceededError(
                f"session {session_id!r} has over {MAX_TREE_SESSIONS} sessions below it",
                hint="name a subagent's session to work on its subtree alone",
            )
    return out


def wait_child(parent_id: str, wait: Wait) -> str:
    """The session a wait is answered by: the one its spawn named, else the default."""
    return wait.child or child_session_id(parent_id, wait.agent_id)


def settled_events(wait: Wait, child: str, content: Content) -> list[ev.EventData]:
    """What a parent records when a child's answer reaches its wait: the
    settlement, then the wait's result under its original call id."""
    return [
        ev.SubagentSettled(
            agent_id=wait.agent_id,
            call_id=wait.call_id,
            child=child,
            outcome="complete",
            result=display_text(content),
        ),
        ev.ToolResult(call_id=wait.call_id, name=wait.name, content=content),
    ]


class TreeNode:
    """One session of a revived tree: what was decided for it, and its handle.

    `log` is open (holding the writer lock) while the node has work to do:
    it was revived and its loop must carry on. `answer` is a finished child's
    final reply, which answered its parent's wait without running again. A
    child whose creation a crash cut short (no complete header) has no `log`
    and an empty verdict: it may not be revived, so recovery answers its wait.
    """

    def __init__(
        self, session_id: str, parent_id: str | None, log: Log | None, found: Verdict
    ) -> None:
        self.session_id = session_id
        self.parent_id = parent_id
        self.log: Log | None = log
        self.verdict = found
        # Revived before and not run on since: revived again without a new
        # notice or a revival spent (see `triage.already_told`).
        self.told = log is not None and already_told(log.last_message(), found.open_turn)
        header = found.session
        agent = header.agent if header is not None else None
        self.agent_id: str | None = agent.id if agent is not None else None
        self.agent_type: str | None = agent.type if agent is not None else None
        self.revival: Revival | None = None
        self.answer: Content | None = None
        # Every event revive_tree appended to this session, in order: the
        # answers of finished children, then what `revive` appended.
        self.appended: tuple[ev.Event, ...] = ()
        # The parent's wait this node answers, if the parent waits on it.
        self.wait: Wait | None = None
        # What revive_tree decided ("revive", "answer" or "leave"), then what
        # came of it, in words (`outcome`).
        self.decision: TreeDecision = "leave"
        self.outcome: TreeOutcome = "left alone"

    @property
    def revived(self) -> bool:
        return self.revival is not None and self.revival.revived

    def __repr__(self) -> str:
        return f"<TreeNode {self.session_id!r} {self.outcome}>"


class RevivedTree:
    """A revived tree: its nodes children first, and the handles to close."""

    def __init__(self, root: str, nodes: list[TreeNode]) -> None:
        self.root = root
        # Post-order: every child before its parent, so a loop that runs the
        # nodes in this order answers each wait before its parent goes on.
        self.nodes = nodes
        self._by_id = {node.session_id: node for node in nodes}

    def node(self, session_id: str) -> TreeNode:
        return self._by_id[session_id]

    @property
    def revived(self) -> list[TreeNode]:
        return [node for node in self.nodes if node.revived]

    def child_of(self, node: TreeNode, wait: Wait) -> TreeNode:
        return self._by_id[wait_child(node.session_id, wait)]

    def close(self) -> None:
        for node in self.nodes:
            if node.log is not None:
                node.log.close()

    def __enter__(self) -> RevivedTree:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


# The verdict of a child session whose creation a crash cut short: no header,
# nothing in it was ever acknowledged, so there is nothing to revive.
_UNFINISHED: Final = Verdict(
    session=None,
    next_seq=0,
    last_ts=None,
    open_turn=None,
    owed=(),
    revivals=0,
    empty=True,
    finished=False,
    needs_response=False,
)


def _open_all(store: Store, ids: list[str]) -> list[Log | None]:
    """Take every writer lock before deciding anything: a tree with a live part
    is refused whole, with nothing written.

    A child with no complete header (the parent crashed while creating it)
    gets no handle: its file is left as it is (`inspect` calls it empty), and
    its parent's wait is left owed for recovery to answer as outcome unknown.
    Its lock was still tried first, so a child someone is writing is live.
    """
    logs: list[Log | None] = []
    try:
        for session_id in ids:
            try:
                logs.append(open_log(store, session_id, MUST_EXIST))
            except UnfinishedSessionError:
                if session_id == ids[0]:
                    raise
                logs.append(None)
    except SessionLockedError as exc:
        for log in logs:
            if log is not None:
                log.close()
        raise SessionLockedError(
            f"session {session_id!r} of the tree is held by a live writer; the tree is "
            f"revived whole or not at all ({exc.message})",
            pid=exc.pid,
            hint=exc.hint,
        ) from exc
    except BaseException:
        for log in logs:
            if log is not None:
                log.close()
        raise
    return logs


def revive_tree(
    target: str | os.PathLike[str] | Store,
    session_id: str | None = None,
    *,
    max_revivals: int = DEFAULT_MAX_REVIVALS,
) -> RevivedTree:
    """Revive a crashed session and the subagents it was waiting on, each as itself.

    Every child the parent waits on that crashed is revived under its original
    agent id, and the parent's wait on it stays pending (the turn stays open)
    until the child's loop answers it. A child that finished before the crash
    answers its wait now, from its own log, without running again. A child
    that may not be revived (its cap, empty) leaves its parent's wait to
    recovery, which answers it as outcome unknown. Nothing is replayed; a tree
    with any live writer is refused whole. Close the tree (or use it as a
    context manager) to release the handles of the revived nodes.
    """
    check_max_revivals(max_revivals)
    store, root = stored_session(target, session_id, what="revive_tree")
    ids = descendants(store, root)
    logs = _open_all(store, ids)
    try:
        nodes = {
            session_id: TreeNode(
                session_id, None, log, log.verdict() if log is not None else _UNFINISHED
            )
            for session_id, log in zip(ids, logs, strict=True)
        }
        _decide(nodes, root, max_revivals)
        order = _post_order(nodes, root)
        for node in order:
            _write(nodes, node, max_revivals)
        top = nodes[root]
        if top.outcome == "finished" and top.log is not None and top.verdict.open_turn:
            # The root gave its answer and died before its turn's end: the
            # turn is closed, as `revive` closes it, and nothing is revived.
            top.appended = top.log.recover().events
    except BaseException:
        for log in logs:
            if log is not None:
                log.close()
        raise
    for node in nodes.values():
        if not node.revived and node.log is not None:
            node.log.close()
            node.log = None
    return RevivedTree(root, order)


def _decide(nodes: dict[str, TreeNode], root: str, max_revivals: int) -> None:
    """Top-down: a node is revived when it may be and its parent, revived too,
    waits on it; a finished child answers instead; the rest is left alone."""
    top = nodes[root]
    refused = refusal(top.verdict, max_revivals, told=top.told)
    if refused is None:
        top.decision = "revive"
    else:
        top.outcome = refused
    stack = [top]
    while stack:
        node = stack.pop()
        if node.decision != "revive":
            continue
        for wait in node.verdict.waits:
            child = nodes.get(wait_child(node.session_id, wait))
            if child is None:
                continue
            _refuse_foreign_child(node, wait, child, top)
            if child.wait is not None:
                continue
            child.parent_id = node.session_id
            child.wait = wait
            refused = refusal(child.verdict, max_revivals, told=child.told)
            if child.verdict.finished:
                child.decision = "answer"
            elif refused is None:
                child.decision = "revive"
                stack.append(child)
            else:
                child.outcome = refused


def _refuse_foreign_child(node: TreeNode, wait: Wait, child: TreeNode, top: TreeNode) -> None:
    """Refuse, before anything is written, a wait no turnlog writer leaves:
    one naming the tree's root or a session already revived above it (a spawn
    cycle), or a child whose header says another session or call spawned it,
    whose answer would be written as this wait's real result."""
    if child is top or child.decision == "revive":
        raise FormatError(
            f"session {node.session_id!r} waits (call {wait.call_id!r}) on "
            f"{child.session_id!r}, which is above it in the tree: a spawn cycle",
            hint="the subagent records were edited by hand or copied; recover the sessions "
            "one by one with `turnlog recover`, which answers each wait as outcome unknown",
        )
    if child.log is None:
        return  # no complete header: its wait is left to recovery
    header = child.log.header
    spawned_by = header.spawned_by
    said = (
        "names no session that spawned it"
        if spawned_by is None
        else f"says it was spawned by session {spawned_by.session_id!r} "
        f"(call {spawned_by.call_id!r}, agent {spawned_by.agent_id!r})"
    )
    # Only a header that names this parent, this call and this agent proves
    # the child's answer is this wait's: every turnlog spawn writes all three.
    if (
        spawned_by is None
        or spawned_by.session_id != node.session_id
        or (spawned_by.call_id is not None and spawned_by.call_id != wait.call_id)
        or (spawned_by.agent_id is not None and spawned_by.agent_id != wait.agent_id)
        or (header.parent is not None and header.parent.session_id != node.session_id)
    ):
        raise FormatError(
            f"session {node.session_id!r} waits (call {wait.call_id!r}, agent "
            f"{wait.agent_id!r}) on {child.session_id!r}, whose header {said}",
            hint="its answer is not this wait's; recover the parent with `turnlog recover`, "
            "which answers the wait as outcome unknown",
        )


def _post_order(nodes: dict[str, TreeNode], root: str) -> list[TreeNode]:
    children: dict[str, list[TreeNode]] = {}
    for node in nodes.values():
        if node.parent_id is not None:
            children.setdefault(node.parent_id, []).append(node)
    out: list[TreeNode] = []

    def visit(node: TreeNode) -> None:
        for child in children.get(node.session_id, ()):
            visit(child)
        out.append(node)

    visit(nodes[root])
    seen = {node.session_id for node in out}
    # Sessions no revived parent waits on come last, untouched.
    out.extend(node for session_id, node in nodes.items() if session_id not in seen)
    return out


def _write(nodes: dict[str, TreeNode], node: TreeNode, max_revivals: int) -> None:
    if node.decision == "answer":
        assert node.log is not None
        if node.verdict.open_turn is not None:
            node.log.recover()  # it answered and died before its turn_end
        last = node.log.last_message()
        node.answer = last.content if last is not None else ""
        node.outcome = "answered its wait from its log"
        return
    if node.decision != "revive":
        return
    log = node.log
    assert log is not None
    pending = []
    answers: list[ev.Event] = []
    for wait in node.verdict.waits:
        child = nodes.get(wait_child(node.session_id, wait))
        if child is None or child.wait is not wait:
            continue
        if child.decision == "answer":
            assert child.answer is not None
            answers += log.append_many(
                settled_events(wait, child.session_id, child.answer),
                origin=Origin.REVIVAL.value,
                sync=True,
            )
        elif child.decision == "revive" and child.revived:
            pending.append(wait.call_id)
    node.revival = revive(log, max_revivals=max_revivals, pending=pending)
    node.appended = (*answers, *node.revival.appended)
    node.outcome = _outcome(node.revival.reason)
