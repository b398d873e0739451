"""Human output for the command line: inspections, plans, timelines, session lists."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from turnlog import events as ev
from turnlog.events import LATE_RESULT_TYPE, Event
from turnlog.ops.inspection import Inspection
from turnlog.text import display_text

STATUS_STYLE = {
    "running": "bold cyan",
    "interrupted": "bold red",
    "paused": "bold yellow",
    "idle": "yellow",
    "finished": "green",
    "empty": "dim",
    "unreadable": "bold magenta",
    "corrupt": "bold magenta",
}
RISK_STYLE = {"tool_outcome_unknown": "bold red", "tool_not_started": "yellow"}
RISK_WORDS = {
    "tool_outcome_unknown": "MAY HAVE RUN: check before retrying",
    "tool_not_started": "did not run: safe to retry",
}


def shorten(text: str, width: int = 72) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def make_table(console: Console, *columns: str) -> Table:
    # Plain columns when piped: no box drawing for tools that read the output.
    table = Table(box=box.SIMPLE_HEAD if console.is_terminal else None, pad_edge=False)
    for column in columns:
        table.add_column(column, overflow="fold")
    return table


def render_inspection(console: Console, found: Inspection) -> None:
    status = Text(found.status, style=STATUS_STYLE.get(found.status, ""))
    console.print(Text.assemble("session ", (found.session_id or "?", "bold"), "  ", status))
    if found.path:
        console.print(f"  file          {found.path}")
    console.print(f"  events        {found.events}")
    console.print(f"  turns         {found.turns}")
    if found.last_activity:
        console.print(f"  last activity {found.last_activity}")
    if found.holder_pid is not None:
        console.print(f"  writer pid    {found.holder_pid}")
    if found.open_turn is not None:
        turn = found.open_turn.turn
        console.print(
            f"  open turn     {turn if turn is not None else '?'} (from seq {found.open_turn.seq})"
        )
    console.print(f"  revivals      {found.revivals} of {found.max_revivals}")
    revivable = "yes" if found.revivable else "no"
    console.print(f"  revivable     {revivable} ({found.reason})")
    if found.torn_tail is not None:
        tail = found.torn_tail
        console.print(
            f"  torn tail     {tail.size_bytes} bytes at offset {tail.offset} "
            "(moved aside by the next writer or `turnlog recover`)"
        )
    if found.owed_calls:
        console.print()
        table = make_table(console, "owed call", "tool", "risk", "rule", "what it means")
        for call in found.owed_calls:
            table.add_row(
                call.call_id,
                call.name or "?",
                Text(call.risk, style=RISK_STYLE.get(call.risk, "")),
                call.rule,
                RISK_WORDS.get(call.risk, ""),
            )
        console.print(table)
    if found.awaiting:
        console.print()
        table = make_table(
            console, "paused call", "tool", "waits for", "since", "until", "decision"
        )
        for one in found.awaiting:
            decision = f"{one.decision} by {one.by}" if one.by else (one.decision or "none yet")
            table.add_row(
                one.call_id,
                one.name or "?",
                one.kind,
                one.since or "?",
                one.until or "",
                decision,
            )
        console.print(table)
    for problem in found.problems:
        where = f" (offset {problem.offset})" if problem.offset is not None else ""
        console.print(Text(f"  problem: {problem.message}{where}", style="magenta"))


def render_events(console: Console, events: Sequence[Event], *, title: str) -> None:
    """One line per event, for plans and recoveries."""
    if not events:
        console.print(f"{title}: nothing")
        return
    console.print(f"{title}:")
    for event in events:
        console.print(Text.assemble("  ", _event_line(event)))


def _calls(data: ev.AssistantMessage) -> str:
    return ", ".join(f"{c.name}({c.id})" for c in data.tool_calls)


def _whole(text: str, width: int = 72) -> str:
    return text


def _event_line(event: Event, *, full: bool = False) -> Text:
    # `full` shows every text whole (`show --full`): the revival notice, a result.
    cut = _whole if full else shorten
    data = event.data
    line = Text(f"#{event.seq:<4} ", style="dim")
    if isinstance(data, ev.Session):
        line.append(f"session {data.session_id}", style="bold")
        if data.parent is not None:
            line.append(
                f"  forked from {data.parent.session_id} ({data.parent.seed_length} events)"
            )
    elif isinstance(data, ev.SystemMessage):
        line.append("system     ", style="blue")
        line.append(cut(display_text(data.content)))
    elif isinstance(data, ev.UserMessage):
        line.append("user       ", style="bold blue")
        if data.injected:
            line.append(f"[{data.injected}] ", style="yellow")
        if data.delivers:
            line.append(f"(report of {data.delivers}) ", style="magenta")
        line.append(cut(display_text(data.content)))
    elif isinstance(data, ev.AssistantMessage):
        line.append("assistant  ", style="bold green")
        line.append(cut(display_text(data.content), 48))
        if data.tool_calls:
            line.append(f"  -> {_calls(data)}", style="green")
    elif isinstance(data, ev.ToolDispatch):
        line.append("dispatch   ", style="cyan")
        line.append(f"{data.name}({data.call_id})")
        if data.idempotency:
            line.append(f" [{data.idempotency}]", style="dim")
        if data.timeout_s is not None:
            line.append(f" deadline {data.timeout_s:g} s", style="dim")
        if data.background:
            line.append(f" background -> {data.join}", style="magenta")
    elif isinstance(data, ev.ToolResult):
        line.append("result     ", style="cyan")
        line.append(f"{data.name}({data.call_id}) ")
        if data.risk:
            line.append(f"{data.risk} {data.rule or ''} ", style=RISK_STYLE.get(data.risk, "red"))
        if data.background:
            line.append("[background: acknowledgement, not the answer] ", style="magenta")
        if data.delivers:
            line.append(f"[report of {data.delivers}] ", style="magenta")
        if data.orphaned:
            line.append("[orphaned: not in the transcript] ", style="magenta")
        elif data.is_error:
            line.append("error ", style="red")
        line.append(cut(display_text(data.content), 56), style="dim")
    elif isinstance(data, ev.ToolPaused):
        line.append("PAUSED     ", style="bold yellow")
        line.append(f"{data.name}({data.call_id}) waits for {data.kind}")
        if data.until:
            line.append(f" until {data.until}", style="dim")
        if data.prompt:
            line.append(f"  {cut(data.prompt, 40)}", style="dim")
    elif isinstance(data, ev.ToolDecision):
        line.append("decision   ", style="bold yellow")
        line.append(f"{data.call_id} {data.decision}")
        if data.by:
            line.append(f" by {data.by}")
        if data.reason:
            line.append(f": {cut(data.reason, 40)}", style="dim")
    elif isinstance(data, ev.TurnStart):
        line.append(f"turn {data.turn if data.turn is not None else '?'} start", style="bold")
    elif isinstance(data, ev.TurnEnd):
        style = {
            "interrupted": "bold red",
            "budget_exhausted": "bold yellow",
            "expired": "bold yellow",
        }.get(data.reason, "bold")
        line.append(
            f"turn {data.turn if data.turn is not None else '?'} end: {data.reason}", style=style
        )
        if data.steps is not None:
            line.append(f" ({data.steps} steps)", style="dim")
    elif isinstance(data, ev.StepStart):
        line.append(f"step {data.step} start", style="dim")
    elif isinstance(data, ev.StepEnd):
        line.append(f"step {data.step} end: {data.outcome or '?'}", style="dim")
    elif isinstance(data, ev.Compaction):
        line.append("compaction ", style="magenta")
        line.append(f"through seq {data.through_seq}: {cut(display_text(data.summary), 48)}")
    elif isinstance(data, ev.RunRevived):
        line.append(f"run revived (revival {data.revival})", style="bold yellow")
    elif isinstance(data, ev.SubagentSpawned | ev.SubagentSettled):
        line.append(f"{event.type} {data.agent_id}", style="magenta")
        if data.background:
            line.append(" [background]", style="magenta")
        if isinstance(data, ev.SubagentSettled) and data.outcome:
            line.append(f" {data.outcome}", style="dim")
    elif isinstance(data, ev.Custom) and data.type == LATE_RESULT_TYPE:
        fields = data.fields
        line.append("late       ", style="yellow")
        line.append(f"{fields.get('name')}({fields.get('call_id')}) after its deadline, ")
        line.append("recorded, not delivered: ", style="yellow")
        content = fields.get("content")
        line.append(
            cut(display_text(content) if isinstance(content, str | list) else str(content), 40),
            style="dim",
        )
    else:
        line.append(event.type, style="dim")
    if event.origin:
        line.append(f"  <{event.origin}>", style="bold yellow")
    return line


def render_timeline(console: Console, events: Iterable[Event], *, full: bool = False) -> None:
    """The session as turns and steps, with synthetic events marked by origin;
    texts shortened to a line unless `full`."""
    depth = 0
    for event in events:
        data = event.data
        if isinstance(data, ev.TurnEnd | ev.StepEnd):
            depth = max(depth - 1, 0)
        console.print(Text.assemble("  " * depth, _event_line(event, full=full)))
        if isinstance(data, ev.TurnStart | ev.StepStart):
            depth += 1


def render_sessions(console: Console, rows: Sequence[dict[str, Any]]) -> None:
    if not rows:
        console.print("no sessions")
        return
    table = make_table(
        console, "session", "status", "turns", "events", "last activity", "owed", "awaiting"
    )
    for row in rows:
        table.add_row(
            str(row["session_id"]),
            Text(row["status"], style=STATUS_STYLE.get(row["status"], "")),
            str(row["turns"]),
            str(row["events"]),
            row["last_activity"] or "",
            str(row["owed_calls"]),
            str(row.get("awaiting", 0)),
        )
    console.print(table)
