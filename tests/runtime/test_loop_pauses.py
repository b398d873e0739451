"""The reference loops pause for approval and for outside results, and resume with decisions."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

import turnlog
from turnlog import Approve, Deliver, Reject, Reply, Tool, ToolCall, events as ev
from turnlog.core.fold import Message
from turnlog.errors import UsageError
from turnlog.stores import MemoryStore


class Bank:
    def __init__(self) -> None:
        self.paid: list[int] = []

    def pay(self, amount: int) -> str:
        self.paid.append(amount)
        return f"paid {amount}"


def asks(*calls: ToolCall) -> turnlog.runtime.agents.Model:
    def model(messages: Sequence[Message]) -> Reply:
        if messages[-1].role == "user":
            return Reply(tool_calls=calls)
        return Reply(content=" | ".join(str(m.content) for m in messages if m.role == "tool"))

    return model


def pay(call_id: str, amount: int) -> ToolCall:
    return ToolCall(id=call_id, name="pay", arguments={"amount": amount})


def test_a_predicate_pauses_only_the_calls_it_names() -> None:
    bank, store = Bank(), MemoryStore()
    tools = {"pay": Tool(run=bank.pay, needs_approval=lambda args: args["amount"] > 100)}
    model = asks(pay("small", 5), pay("large", 500))
    with turnlog.open(store, "s") as log:
        reply = turnlog.run_turn(log, model, tools, "pay both")
        assert reply.paused and [a.call_id for a in reply.awaiting] == ["large"]
        assert bank.paid == [5]
        before = len(store.read("s"))
        # Undecided: a resume returns the pause again and writes nothing.
        assert turnlog.run_turn(log, model, tools).awaiting == reply.awaiting
        assert len(store.read("s")) == before
        done = turnlog.run_turn(log, model, tools, decisions={"large": Approve(by="alice")})
    assert not done.paused and bank.paid == [5, 500]
    assert done.content == "paid 5 | paid 500"


def test_a_rejected_call_never_runs_and_the_model_reads_why() -> None:
    bank = Bank()
    tools = {"pay": Tool(run=bank.pay, needs_approval=True)}
    with turnlog.open(MemoryStore(), "s") as log:
        turnlog.run_turn(log, asks(pay("c1", 5)), tools, "pay")
        done = turnlog.run_turn(
            log, asks(), tools, decisions={"c1": Reject(by="alice", reason="wrong account")}
        )
    assert bank.paid == []
    assert "alice declined it (wrong account)" in str(done.content)


def test_decisions_that_disagree_with_the_log_are_refused_whole() -> None:
    bank, store = Bank(), MemoryStore()
    tools = {"pay": Tool(run=bank.pay, needs_approval=True)}
    with turnlog.open(store, "s") as log:
        turnlog.run_turn(log, asks(pay("c1", 5), pay("c2", 6)), tools, "pay")
        before = store.read("s")
        bad: list[dict[str, turnlog.runtime.approvals.DecisionInput]] = [
            {"c1": Approve(), "ghost": Approve()},
            {"c1": Deliver(content="paid")},
            {"c1": "yes"},  # type: ignore[dict-item]
        ]
        for decisions in bad:
            with pytest.raises(UsageError):
                turnlog.run_turn(log, asks(), tools, decisions=decisions)
            assert store.read("s") == before
        with pytest.raises(UsageError, match="turn is paused"):
            turnlog.run_turn(log, asks(), tools, "and another thing")
        assert store.read("s") == before
    assert bank.paid == []


def test_decisions_are_recorded_in_one_write_each_with_its_origin() -> None:
    """All or nothing: three decisions (approve, reject, deliver) land in one
    store write, so no crash leaves some recorded and the rest undecided; the
    rejection's answer is turnlog's on the person's behalf (origin "decision")."""
    tools = {
        "pay": Tool(run=Bank().pay, needs_approval=True),
        "ship": Tool(run=lambda: "shipped", external=True),
    }
    calls = (pay("c1", 5), pay("c2", 6), ToolCall(id="s1", name="ship"))
    with turnlog.open(MemoryStore(), "s") as log:
        turnlog.run_turn(log, asks(*calls), tools, "go")
        writes: list[list[ev.Event]] = []
        log.subscribe(lambda batch, durable: writes.append(list(batch)))
        turnlog.runtime.approvals.record_decisions(
            log,
            {
                "c1": Approve(by="alice"),
                "c2": Reject(by="alice", reason="twice"),
                "s1": Deliver(content="arrived", by="erp"),
            },
        )
    (written,) = writes
    assert [(type(e.data).__name__, e.origin) for e in written] == [
        ("ToolDecision", None),
        ("ToolDecision", "decision"),
        ("ToolResult", "decision"),
        ("ToolDecision", None),
        ("ToolResult", None),
    ]


def test_an_external_tool_waits_for_its_delivered_result() -> None:
    ran: list[str] = []
    tools = {"ship": Tool(run=lambda: ran.append("here") or "shipped", external=True)}
    with turnlog.open(MemoryStore(), "s") as log:
        reply = turnlog.run_turn(log, asks(ToolCall(id="s1", name="ship")), tools, "ship it")
        assert [a.kind for a in reply.awaiting] == ["external"]
        done = turnlog.run_turn(
            log, asks(), tools, decisions={"s1": Deliver(content="arrived", by="erp")}
        )
        events = log.store.read(log.session_id)
    assert ran == [] and done.content == "arrived"
    (decision,) = [e.data for e in events if isinstance(e.data, ev.ToolDecision)]
    assert (decision.decision, decision.by) == ("delivered", "erp")


def test_the_asyncio_loop_pauses_and_resumes_the_same_way() -> None:
    bank = Bank()
    tools = {"pay": Tool(run=bank.pay, needs_approval=True)}

    async def main() -> tuple[Reply, Reply]:
        async with turnlog.aopen(MemoryStore(), "s") as log:
            paused = await turnlog.arun_turn(log, asks(pay("c1", 5)), tools, "pay")
            assert turnlog.inspect(log.store, "s").status == "paused"
            done = await turnlog.arun_turn(log, asks(), tools, decisions={"c1": Approve()})
            return paused, done

    paused, done = asyncio.run(main())
    assert paused.paused and not done.paused and bank.paid == [5]
    assert done.content == "paid 5"
