"""Commands that read every record of a session: `show` and `verify`."""

from __future__ import annotations

import collections
import datetime as dt
import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import click

from turnlog import events as ev
from turnlog.cli._common import (
    EXIT_FINDINGS,
    _console,
    _emit_json,
    _events,
    _reports_errors,
    _stream_json,
    _to_builtins,
    json_option,
    store_option,
)
from turnlog.cli.numbers import WholeNumber
from turnlog.errors import UsageError
from turnlog.stores import existing_store, resolve_session

if TYPE_CHECKING:
    from turnlog.core.damage import Problem, TornTail
    from turnlog.exports.timeline_html import Verdict


@click.command("show")
@click.argument("session")
@click.option(
    "--turn",
    "turn",
    type=WholeNumber(min_value=1, example="2"),
    metavar="N",
    help="Only turn N: the request that opened it, through its end.",
)
@click.option(
    "--tail",
    "tail",
    type=WholeNumber(min_value=1, example="20"),
    metavar="N",
    help="Only the last N events.",
)
@click.option(
    "--since",
    metavar="TIME",
    help="Only events at or after TIME (ISO 8601, e.g. 2026-12-01T09:00:00Z).",
)
@click.option(
    "--full", is_flag=True, help="Show every text whole (the revival notice, long results)."
)
@click.option(
    "--html",
    "as_html",
    is_flag=True,
    help="Write the timeline as one self-contained HTML page (to -o).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="With --html: the file to write (- for stdout).",
)
@click.option(
    "--redact",
    is_flag=True,
    help="With --html: tool arguments and results shown as their sizes only.",
)
@click.option(
    "--tree",
    is_flag=True,
    help="With --html: the subagents' sessions in the same page, linked from their calls.",
)
@click.option(
    "--kind",
    type=click.Choice(["claude-code", "codex", "auto"]),
    help="SESSION is a Claude Code or Codex transcript file, read and never changed; "
    "each unanswered call shows what `turnlog doctor` would answer.",
)
@store_option
@json_option
@_reports_errors
def show_command(
    session: str,
    turn: int | None,
    tail: int | None,
    since: str | None,
    full: bool,
    as_html: bool,
    output: str | None,
    redact: bool,
    tree: bool,
    kind: str | None,
    store_url: str | None,
    as_json: bool,
) -> None:
    """Show SESSION's timeline: turns, steps, messages, tool calls and their results.

    Events turnlog wrote itself are marked with their origin and risk. The
    filters combine: --turn, then --since, then --tail. With --html -o FILE,
    the same as one HTML page that opens offline (docs/observability.md).
    """
    verdicts: list[Verdict] = []
    read: Iterable[ev.Event]
    children: list[tuple[str, Iterable[ev.Event]]] = []
    if kind is not None:
        session_id, read, verdicts = _foreign(session, kind, store_url)
    else:
        store, session_id = resolve_session(session, store_url)
        read = _events(store, session_id)
        if tree:
            from turnlog.ops.tree import descendants

            below = descendants(store, session_id)[1:]  # the one bounded walk
            children = [(child, _events(store, child)) for child in below]
    events = _selected(read, turn=turn, since=_instant(since), tail=tail)
    if as_html or output is not None or redact or tree:
        torn_tail: TornTail | None = None
        problems: tuple[Problem, ...] = ()
        if kind is None and as_html:
            from turnlog.ops.inspection import inspect

            found = inspect(store, session_id)
            torn_tail, problems = found.torn_tail, found.problems
        _write_html(
            session_id,
            events,
            as_html=as_html,
            output=output,
            redact=redact,
            verdicts=verdicts,
            children=children,
            torn_tail=torn_tail,
            problems=problems,
        )
        return
    if kind is not None:
        _show_foreign(session_id, events, verdicts, full=full, as_json=as_json)
        return
    if as_json:
        _stream_json({"session_id": session_id, "events": (ev.to_builtins(e) for e in events)})
    else:
        from turnlog.cli.render import render_timeline
        from turnlog.core.pauses import describe_pause
        from turnlog.ops.inspection import inspect

        console = _console()
        render_timeline(console, events, full=full)
        found = inspect(store, session_id)
        if found.awaiting:
            # The turn has no end to show: say why it is open, and that it did not crash.
            console.print(f"turn open, {describe_pause(found.awaiting)}", style="bold yellow")
        elif found.status == "paused":
            console.print(
                "turn open, paused: every decision is recorded; the run resumes it",
                style="bold yellow",
            )


def _foreign(
    path: str, kind: str, store_url: str | None
) -> tuple[str, list[ev.Event], list[Verdict]]:
    """A Claude Code or Codex file's events and doctor's verdicts, read only."""
    from turnlog.exports.timeline_html import Verdict
    from turnlog.formats.repair_lines import owed_outputs
    from turnlog.formats.rescue import read_transcript

    if store_url is not None:
        raise UsageError(
            "--kind reads a transcript file, not a store",
            hint="drop --store, or import the file first (turnlog import) and show the session",
        )
    transcript = read_transcript(path, kind)
    verdicts = [
        Verdict(call_id=owed.call_id, risk=owed.risk, rule=owed.rule, text=owed.text)
        for owed in owed_outputs(transcript)
    ]
    return transcript.session_id, transcript.events, verdicts


def _show_foreign(
    session_id: str,
    events: Iterable[ev.Event],
    verdicts: list[Verdict],
    *,
    full: bool,
    as_json: bool,
) -> None:
    if as_json:
        _stream_json(
            {
                "session_id": session_id,
                "events": (ev.to_builtins(e) for e in events),
                "verdicts": [_to_builtins(v.__dict__) for v in verdicts],
            }
        )
        return
    from turnlog.cli.render import render_timeline

    console = _console()
    render_timeline(console, events, full=full)
    for verdict in verdicts:
        answer = f"{verdict.risk} {verdict.rule or ''}"
        console.print(
            f"unanswered {verdict.call_id}: doctor would answer {answer}",
            style="bold red" if verdict.risk == "tool_outcome_unknown" else "yellow",
        )


def _write_html(
    session_id: str,
    events: Iterable[ev.Event],
    *,
    as_html: bool,
    output: str | None,
    redact: bool,
    verdicts: list[Verdict],
    children: list[tuple[str, Iterable[ev.Event]]],
    torn_tail: TornTail | None = None,
    problems: tuple[Problem, ...] = (),
) -> None:
    if not as_html or output is None:
        raise UsageError(
            "-o, --redact and --tree go with --html, and --html needs -o",
            hint=f"turnlog show {session_id} --html -o {session_id}.html (or -o - for stdout)",
        )
    from turnlog.exports.timeline_html import timeline_html

    page = timeline_html(
        session_id,
        events,
        redact=redact,
        verdicts=verdicts,
        children=children,
        torn_tail=torn_tail,
        problems=problems,
    ).encode()
    if output == "-":
        sys.stdout.buffer.write(page)
        sys.stdout.flush()
        return
    from turnlog.cli.outputs import write_output
    from turnlog.exports.timeline_html import PAGE_MARKER

    write_output(output, page, marker=PAGE_MARKER, what="the page")
    click.echo(f"wrote {output} ({len(page):,} bytes): open it in a browser", err=True)


def _instant(text: str | None) -> dt.datetime | None:
    if text is None:
        return None
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(
            f"--since {text!r} is not a time",
            hint="give an ISO 8601 time such as 2026-12-01T09:00:00Z or 2026-12-01",
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=dt.UTC)


def _selected(
    events: Iterable[ev.Event], *, turn: int | None, since: dt.datetime | None, tail: int | None
) -> Iterable[ev.Event]:
    """The events `show` prints, streamed: a long session is never held whole,
    except the last `tail` events."""
    if turn is not None:
        events = _turn_events(events, turn)
    if since is not None:
        moment = since
        events = (
            e for e in events if e.ts is not None and dt.datetime.fromisoformat(e.ts) >= moment
        )
    if tail is not None:
        events = collections.deque(events, maxlen=tail)
    return events


def _turn_events(events: Iterable[ev.Event], number: int) -> Iterator[ev.Event]:
    """Turn `number`'s events: from the first event after the turn before it
    ended (the request that opened it) through its `turn_end`. Turns are
    counted by their `turn_start`s, as the writer numbers them."""
    count = 0
    pending: list[ev.Event] = []
    inside = False
    for event in events:
        data = event.data
        if isinstance(data, ev.TurnStart):
            count += 1
            inside = count == number
            if inside:
                yield from pending
            pending = []
        if inside:
            yield event
            if isinstance(data, ev.TurnEnd):
                return
        elif isinstance(data, ev.TurnEnd):
            pending = []
        elif count == number - 1 and not isinstance(data, ev.Session):
            pending.append(event)


@click.command("verify")
@click.argument("session", required=False)
@store_option
@click.option("--strict", is_flag=True, help="Also require a checksum on every record.")
@json_option
@_reports_errors
def verify_command(session: str | None, store_url: str | None, strict: bool, as_json: bool) -> None:
    """Check SESSION (or every session in --store): checksums, seq order, header,
    vocabulary, turn and step pairing, one result per call.

    Exits 1 listing every problem, 0 when clean.
    """
    from turnlog.ops.verify import verify_session, verify_store

    if session is not None:
        store, session_id = resolve_session(session, store_url)
        found = [verify_session(store, session_id, strict=strict, raise_unreadable=True)]
    else:
        found = verify_store(existing_store(store_url), strict=strict)
    reports = [_to_builtins(report) for report in found]
    ok = all(report["ok"] for report in reports)
    if as_json:
        _emit_json({"ok": ok, "sessions": reports})
    else:
        console = _console()
        for report in reports:
            if report["ok"]:
                console.print(f"{report['session_id']}: ok ({report['events']} events)")
                continue
            console.print(
                f"{report['session_id']}: {len(report['problems'])} problem(s)", style="bold red"
            )
            for problem in report["problems"]:
                where = []
                if problem.get("line") is not None:
                    where.append(f"line {problem['line']}")
                if problem.get("offset") is not None:
                    where.append(f"byte {problem['offset']}")
                prefix = f"{', '.join(where)}: " if where else ""
                console.print(f"  {prefix}{problem['message']}")
        if not reports:
            console.print("no sessions")
    if not ok:
        sys.exit(EXIT_FINDINGS)
