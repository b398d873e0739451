"""The crash-and-recover demo: a scripted agent with real tools, killed mid-call."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from rich.console import Console
from rich.rule import Rule

import turnlog
from turnlog.events import ToolCall, content_text
from turnlog.fold import Message
from turnlog.loop import Reply, Tool, run_turn
from turnlog.render import render_events, render_inspection, render_timeline
from turnlog.revival import revive
from turnlog.triage import inspect

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
            import time

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
    text = content_text(last.content)
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
    agent = turnlog.Agent(id="agent-1", type="demo", label="bookkeeper")
    with turnlog.open(session_path, create=True, agent=agent) as log:
        log.system("You are a careful bookkeeping agent.")
        run_turn(log, scripted_model, tools, "Write the release notes for 1.0.")
        run_turn(log, scripted_model, tools, "Pay invoices 7 and 8, then list the workspace.")


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
    child = subprocess.Popen(
        [sys.executable, "-m", "turnlog.demo", str(session_path), str(workspace)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        if line.strip() != IN_FLIGHT:
            raise turnlog.TurnlogError(
                "the demo agent stopped before its payment was in flight",
                hint="run `python -m turnlog.demo SESSION WORKSPACE` to see its output",
            )
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=CHILD_START_TIMEOUT_S)
    console.print(f"agent pid {child.pid} killed with SIGKILL (exit {child.returncode})")
    ledger = (workspace / "ledger.txt").read_text()
    console.print("the bank's ledger says:")
    console.print("  " + ledger.strip().replace("\n", "\n  "))

    _section(console, "2. turnlog inspect: what the log knows, from its tail")
    render_inspection(console, inspect(session_path))

    _section(console, "3. turnlog plan: what recovery would append")
    events = turnlog.JSONLStore(session_path.parent).read(session_path.stem)
    render_events(console, turnlog.plan(events).events, title="recovery would append")

    _section(console, "4. revive: recover, then carry on as the same agent")
    with turnlog.open(session_path) as log:
        revival = revive(log)
        assert revival.repairs is not None
        render_events(console, revival.repairs.events, title="recovery appended")
        console.print(
            f"revival {revival.revival}: the model is told what happened; no call is replayed"
        )
        run_turn(log, scripted_model, demo_tools(workspace))
    console.print("the ledger afterwards (invoice 8 charged once):")
    console.print("  " + (workspace / "ledger.txt").read_text().strip().replace("\n", "\n  "))

    _section(console, "5. turnlog show: the whole timeline")
    render_timeline(console, turnlog.JSONLStore(session_path.parent).read(session_path.stem))

    prog = _program()
    _section(console, "look again")
    console.print(f"session file: {session_path}")
    for command in ("inspect", "show", "plan", "verify"):
        console.print(f"  {prog} {command} {session_path}")
    console.print(f"  {prog} ls --store {session_path.parent}")
    return session_path


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python -m turnlog.demo SESSION_FILE WORKSPACE_DIR")
    run_agent(Path(sys.argv[1]), Path(sys.argv[2]))
