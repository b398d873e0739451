"""The crash-and-recover demo: a scripted agent with real tools, killed mid-call."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from rich.console import Console
from rich.rule import Rule
from rich.text import Text

import turnlog
from turnlog import providers
from turnlog.cli.render import render_events, render_inspection, render_timeline
from turnlog.core.fold import Message, fold
from turnlog.events import ToolCall
from turnlog.ops.inspection import inspect
from turnlog.ops.revival import revive
from turnlog.runtime.loop import AgentSpec, Reply, Tool, continue_tree, run_turn, subagent_tool
from turnlog.text import display_text

IN_FLIGHT: Final = "IN-FLIGHT"
# The child is killed long before this; the bound keeps a stray child finite.
SLOW_BANK_S: Final = 30.0
CHILD_START_TIMEOUT_S: Final = 60.0


def demo_tools(workspace: Path, *, slow_invoice: int | None = None) -> dict[str, Tool]:
    """Tools with real side effects in a workspace: files, and a payments ledger."""
    ledger = workspace / "ledger.txt"

    def write_file(path: str, text: str) -> str:
        target = workspace / os.path.basename(path)
        target.write_text(text)
        return f"wrote {len(text)} characters to {target.name}"

    def pay(invoice: int, amount_usd: int) -> str:
        with open(ledger, "a") as f:
            f.write(f"invoice {invoice}: paid ${amount_usd}\n")
            f.flush()
            os.fsync(f.fileno())
        if invoice == slow_invoice:
            # The money has moved; the bank's confirmation is slow. The demo
            # kills the agent right here, with the call in flight.
            print(IN_FLIGHT, flush=True)
            time.sleep(SLOW_BANK_S)
        return f"invoice {invoice}: paid ${amount_usd}"

    def list_files() -> str:
        return "\n".join(sorted(p.name for p in workspace.iterdir())) or "(empty)"

    def read_ledger() -> str:
        return ledger.read_text() if ledger.exists() else "(no payments)"

    return {
        "write_file": Tool(run=write_file, idempotency="idempotent"),
        "pay": Tool(run=pay, idempotency="destructive"),
        "list_files": Tool(run=list_files, idempotency="read_only"),
        "read_ledger": Tool(run=read_ledger, idempotency="read_only"),
    }


def scripted_model(messages: Sequence[Message]) -> Reply:
    """A deterministic stand-in for a model: no network, same answers every run."""
    last = messages[-1]
    text = display_text(last.content)
    calls_so_far = sum(len(m.tool_calls) for m in messages)

    def call(name: str, **arguments: object) -> ToolCall:
        return ToolCall(id=f"call_{calls_so_far + 1}_{name}", name=name, arguments=arguments)

    if last.role == "user" and last.injected == "revival":
        return Reply(
            content="I was interrupted mid-payment. Checking the ledger before anything else.",
            tool_calls=(call("read_ledger"),),
        )
    if last.role == "user" and "release notes" in text:
        return Reply(
            content="Writing the release notes.",
            tool_calls=(call("write_file", path="NOTES.md", text="# 1.0\n- first release\n"),),
        )
    if last.role == "user" and "invoices" in text:
        return Reply(
            content="Paying both invoices, then listing the workspace.",
            tool_calls=(
                ToolCall(id="call_pay_7", name="pay", arguments={"invoice": 7, "amount_usd": 120}),
                ToolCall(id="call_pay_8", name="pay", arguments={"invoice": 8, "amount_usd": 80}),
                ToolCall(id="call_ls", name="list_files", arguments={}),
            ),
        )
    if last.role == "tool" and last.name == "read_ledger":
        if "invoice 8" in text:
            return Reply(
                content=(
                    "The ledger shows invoice 8 was charged, so I will not pay it again. "
                    "Listing the workspace, which never ran."
                ),
                tool_calls=(call("list_files"),),
            )
        return Reply(
            content="Invoice 8 was not charged; paying it.",
            tool_calls=(
                ToolCall(
                    id="call_pay_8_retry", name="pay", arguments={"invoice": 8, "amount_usd": 80}
                ),
            ),
        )
    return Reply(content="Done.")


def run_agent(session_path: Path, workspace: Path) -> None:
    """The child process: two turns of work; the second one never finishes."""
    tools = demo_tools(workspace, slow_invoice=8)
    agent = turnlog.events.Agent(id="agent-1", type="demo", label="bookkeeper")
    with turnlog.open(session_path, create=True, agent=agent) as log:
        log.system("You are a careful bookkeeping agent.")
        run_turn(log, scripted_model, tools, "Write the release notes for 1.0.")
        run_turn(log, scripted_model, tools, "Pay invoices 7 and 8, then list the workspace.")


def payer_model(messages: Sequence[Message]) -> Reply:
    """The subagent: pays the invoice it was given; after a revival, checks first."""
    last = messages[-1]
    if last.role == "user" and last.injected == "revival":
        return Reply(
            content="I was interrupted while paying. Checking the ledger first.",
            tool_calls=(ToolCall(id="call_ledger_9", name="read_ledger"),),
        )
    if last.role == "tool" and last.name == "read_ledger":
        if "invoice 9" in display_text(last.content):
            return Reply(content="Invoice 9 was already paid; I did not pay it again.")
        return Reply(
            content="Invoice 9 was not paid; paying it.",
            tool_calls=(
                ToolCall(
                    id="call_pay_9_retry", name="pay", arguments={"invoice": 9, "amount_usd": 50}
                ),
            ),
        )
    if last.role == "user":
        return Reply(
            content="Paying invoice 9.",
            tool_calls=(
                ToolCall(id="call_pay_9", name="pay", arguments={"invoice": 9, "amount_usd": 50}),
            ),
        )
    return Reply(content=f"Done: {display_text(last.content)}")


def manager_model(messages: Sequence[Message]) -> Reply:
    """The parent: hands the payment to a subagent, then reports its answer."""
    last = messages[-1]
    if last.role == "user" and last.injected is None:
        return Reply(
            content="Handing invoice 9 to a payer agent.",
            tool_calls=(
                ToolCall(
                    id="call_delegate_9", name="delegate", arguments={"task": "Pay invoice 9: $50"}
                ),
            ),
        )
    answers = [m for m in messages if m.role == "tool" and m.name == "delegate"]
    told = display_text(answers[-1].content) if answers else "no answer"
    return Reply(content=f"Invoice 9 settled. The payer said: {told}")


def tree_agents(workspace: Path, *, slow_invoice: int | None = None) -> dict[str, AgentSpec]:
    """The manager and its payer subagent, by agent type."""
    payer = AgentSpec(model=payer_model, tools=demo_tools(workspace, slow_invoice=slow_invoice))
    manager = AgentSpec(model=manager_model, tools={"delegate": subagent_tool("payer", payer)})
    return {"manager": manager, "payer": payer}


def run_tree_agent(session_path: Path, workspace: Path) -> None:
    """The child process of the tree demo: the payer subagent never finishes."""
    manager = tree_agents(workspace, slow_invoice=9)["manager"]
    agent = turnlog.events.Agent(id="manager-1", type="manager")
    with turnlog.open(session_path, create=True, agent=agent) as log:
        run_turn(log, manager.model, manager.tools, "Settle invoice 9.")


def _kill_when_in_flight(args: list[str]) -> int:
    """Run a demo agent in a child and SIGKILL it once its payment is in flight."""
    child = subprocess.Popen(
        [sys.executable, "-m", "turnlog.cli.demo_agent", *args], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        if line.strip() != IN_FLIGHT:
            raise turnlog.TurnlogError(
                "the demo agent stopped before its payment was in flight",
                hint=f"run `python -m turnlog.cli.demo_agent {' '.join(args)}` to see its output",
            )
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=CHILD_START_TIMEOUT_S)
    return child.pid


def _without_turnlog(console: Console, session_path: Path) -> None:
    """What the same crash does to a transcript nobody repairs."""
    events = turnlog.JSONLStore(session_path.parent).read(session_path.stem)
    messages = fold(events).messages
    rejected = [
        name
        for name in providers.PROVIDERS
        if providers.validate(name, providers.render(name, messages))
    ]
    first = providers.validate("anthropic", providers.render("anthropic", messages))[0]
    console.print(Text("without turnlog:", style="bold"))
    console.print(
        f"  the next request is refused by {len(rejected)} of {len(providers.PROVIDERS)} "
        f'providers; Anthropic: "{first.message}" (call {first.call_id})'
    )
    # The other common fix: drop the tail from the message that asked. Ask the
    # same scripted model what it does next with what is left.
    state = fold(events)
    asked_at = min(call.first_seq for call in state.owed_calls)
    kept = [message for message in messages if message.seq < asked_at]
    again = [call for call in scripted_model(kept).tool_calls if call.name == "pay"]
    paid = [f"invoice {call.arguments['invoice']}" for call in again]
    console.print(
        f"  dropping the tail instead unbricks it, and the model's next reply asks to pay "
        f"{' and '.join(paid)} again, which the ledger above shows paid"
    )


def _section(console: Console, title: str) -> None:
    console.print()
    console.print(Rule(title, align="left"))


def _program() -> str:
    """How the person who ran the demo would type turnlog again."""
    argv0 = sys.argv[0] if sys.argv and sys.argv[0] else "turnlog"
    relative = os.path.relpath(argv0) if os.path.isabs(argv0) else argv0
    return relative if not relative.startswith("..") and os.sep in relative else "turnlog"


def run_demo(console: Console, directory: str) -> Path:
    """Run the agent in a child, SIGKILL it mid-payment, then show the honest repair."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    session_path = Path(directory) / f"demo-{stamp}-{os.getpid()}.jsonl"
    workspace = Path(tempfile.mkdtemp(prefix="turnlog-demo-"))
    session_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)

    _section(console, "1. an agent pays two invoices; the process is killed mid-payment")
    pid = _kill_when_in_flight([str(session_path), str(workspace)])
    console.print(f"agent pid {pid} killed with SIGKILL")
    ledger = (workspace / "ledger.txt").read_text()
    console.print("the bank's ledger says:")
    console.print("  " + ledger.strip().replace("\n", "\n  "))
    _without_turnlog(console, session_path)

    _section(console, "2. turnlog inspect: what the log knows, from its tail")
    render_inspection(console, inspect(session_path))

    _section(console, "3. turnlog plan: what recovery would append")
    events = turnlog.JSONLStore(session_path.parent).read(session_path.stem)
    render_events(console, turnlog.plan(events).events, title="recovery would append")

    _section(console, "4. revive: recover, then carry on as the same agent")
    with turnlog.open(session_path) as log:
        revival = revive(log)
        assert revival.repairs is not None
        console.print(
            f"recovery appended the {len(revival.repairs.events)} events planned above; "
            f"revival {revival.revival} tells the model, in these words:"
        )
        notice = revival.messages[-1]
        console.print(Text(display_text(notice.content), style="yellow"), soft_wrap=False)
        console.print("no call is replayed: the model decides")
        run_turn(log, scripted_model, demo_tools(workspace))
    console.print("the ledger afterwards (invoice 8 charged once):")
    console.print("  " + (workspace / "ledger.txt").read_text().strip().replace("\n", "\n  "))

    _section(console, "5. turnlog show: the whole timeline")
    render_timeline(console, turnlog.JSONLStore(session_path.parent).read(session_path.stem))

    tree_path = session_path.with_name(session_path.stem + "-tree.jsonl")
    tree_demo(console, tree_path, Path(tempfile.mkdtemp(prefix="turnlog-demo-")))

    # Named apart from `demo-*`, which names the crashed sessions of the demo.
    deadline_path = session_path.with_name("deadline-" + session_path.name.removeprefix("demo-"))
    deadline_demo(console, deadline_path, Path(tempfile.mkdtemp(prefix="turnlog-demo-")))

    from turnlog.exports.timeline_html import timeline_html

    _section(console, "8. turnlog show --html: the timeline as a page")
    page_path = session_path.with_suffix(".html")
    events = turnlog.JSONLStore(session_path.parent).read(session_path.stem)
    page_path.write_text(timeline_html(session_path.stem, events))
    console.print(f"open {page_path} in a browser: the repaired calls are marked with their risk")

    prog = _program()
    _section(console, "look again")
    console.print(f"session file: {session_path}")
    console.print(f"timeline page: {page_path}")
    for command in ("inspect", "show", "plan", "verify"):
        console.print(f"  {prog} {command} {session_path}")
    console.print(f"  {prog} show {session_path} --html -o {page_path}")
    console.print(f"  {prog} export {session_path} --to otlp-json -o trace.json")
    console.print(f"  {prog} ls --store {session_path.parent}")
    console.print(f"  {prog} show {tree_path}")
    console.print(f"  {prog} show {deadline_path}")
    return session_path


def tree_demo(console: Console, root_path: Path, workspace: Path) -> None:
    """A manager delegates a payment to a subagent, which is killed mid-payment;
    the tree is revived with the subagent under its original id."""
    _section(console, "6. a subagent is killed mid-payment; the tree is revived as itself")
    _kill_when_in_flight(["--tree", str(root_path), str(workspace)])
    store, root = turnlog.open_store(root_path)
    assert root is not None
    child = store.children(root)[0]
    console.print(f"manager session {root}, its payer subagent's session {child}")
    for session_id in (root, child):
        found = inspect(store, session_id)
        owed = ", ".join(f"{c.call_id} ({c.risk})" for c in found.owed_calls)
        console.print(f"  {session_id}: {found.status}; owed: {owed}")
    agents = tree_agents(workspace)
    with turnlog.tree.revive_tree(store, root) as tree:
        for node in tree.nodes:
            pending = (
                ", ".join(f"{w.call_id} waits on {w.agent_id}" for w in node.revival.pending)
                if node.revival
                else ""
            )
            console.print(
                f"  revived {node.session_id} as agent {node.agent_id} "
                f"({node.outcome}){'; pending: ' + pending if pending else ''}"
            )
        replies = continue_tree(tree, lambda node: agents[node.agent_type or "manager"])
    console.print(f"payer: {display_text(replies[child].content)}")
    console.print(f"manager: {display_text(replies[root].content)}")
    console.print("the ledger afterwards (invoice 9 charged once):")
    console.print("  " + (workspace / "ledger.txt").read_text().strip().replace("\n", "\n  "))
    assert store.children(root) == [child], "the revived subagent kept its id"


# The bank's confirmation in the deadline demo hangs this long, in a thread
# the loop stops waiting for; the demo ends long before it returns.
HUNG_BANK_S: Final = 5.0
PAYMENT_DEADLINE_S: Final = 0.5


def deadline_model(messages: Sequence[Message]) -> Reply:
    """Pays once; when the payment's outcome is unknown, checks before paying again."""
    last = messages[-1]
    if last.role == "user":
        return Reply(
            content="Paying invoice 10.",
            tool_calls=(
                ToolCall(id="call_pay_10", name="pay", arguments={"invoice": 10, "amount_usd": 30}),
            ),
        )
    if last.role == "tool" and last.name == "pay":
        return Reply(
            content="The payment's outcome is unknown; checking the ledger before anything else.",
            tool_calls=(ToolCall(id="call_ledger_10", name="read_ledger"),),
        )
    if "invoice 10" in display_text(last.content):
        return Reply(
            content="Invoice 10 was charged; the bank was slow to confirm. Not paying again."
        )
    return Reply(content="Invoice 10 was not charged.")


def deadline_demo(console: Console, session_path: Path, workspace: Path) -> None:
    """A payment whose confirmation hangs: past its deadline the call is
    answered outcome unknown (D1), and the run goes on."""
    _section(console, "7. a payment hangs past its deadline; the run goes on")
    tools = demo_tools(workspace)
    ledger = workspace / "ledger.txt"

    def pay(invoice: int, amount_usd: int) -> str:
        with open(ledger, "a") as f:
            f.write(f"invoice {invoice}: paid ${amount_usd}\n")
        time.sleep(HUNG_BANK_S)
        return f"invoice {invoice}: paid ${amount_usd}"

    tools["pay"] = Tool(run=pay, idempotency="destructive", timeout_s=PAYMENT_DEADLINE_S)
    with turnlog.open(session_path, create=True) as log:
        run_turn(log, deadline_model, tools, "Pay invoice 10.")
        for message in log.messages:
            text = display_text(message.content).strip()
            if message.role == "tool":
                rule = f" ({message.risk})" if message.risk else ""
                console.print(Text(f"  result {message.name}{rule}: {text}"))
            elif message.role == "assistant":
                console.print(Text(f"  model: {text}"))
    console.print("the turn ended complete; the payment is not retried")


if __name__ == "__main__":
    arguments = sys.argv[1:]
    tree = arguments[:1] == ["--tree"]
    if tree:
        arguments = arguments[1:]
    if len(arguments) != 2:
        sys.exit("usage: python -m turnlog.cli.demo_agent [--tree] SESSION_FILE WORKSPACE_DIR")
    (run_tree_agent if tree else run_agent)(Path(arguments[0]), Path(arguments[1]))
