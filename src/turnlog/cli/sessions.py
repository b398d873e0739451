"""Commands that read a session's tail: `ls`, `inspect` and `plan`."""

from __future__ import annotations

import sys

import click

from turnlog import events as ev
from turnlog.cli._common import (
    EXIT_FINDINGS,
    EXIT_UNREADABLE,
    _console,
    _emit_json,
    _progress,
    _reports_errors,
    _to_builtins,
    json_option,
    max_revivals_option,
    store_option,
)
from turnlog.cli.numbers import WholeNumber
from turnlog.stores import existing_store, resolve_session


@click.command("ls")
@store_option
@click.option(
    "--limit",
    type=WholeNumber(min_value=1, example="20"),
    default=None,
    metavar="N",
    help="At most N sessions (a page).",
)
@click.option(
    "--after",
    metavar="ID",
    default=None,
    help="Start after this session id (the last id of the previous page).",
)
@click.option(
    "--status",
    "statuses",
    multiple=True,
    type=click.Choice(
        ["running", "interrupted", "paused", "idle", "finished", "empty", "corrupt", "unreadable"]
    ),
    help="Only sessions in this status (repeat for several), such as --status paused.",
)
@json_option
@_reports_errors
def ls_command(
    store_url: str | None,
    limit: int | None,
    after: str | None,
    statuses: tuple[str, ...],
    as_json: bool,
) -> None:
    """List sessions: status, turns, events, last activity, owed and awaited calls.

    Sessions come in id order; --limit and --after page through a large store
    (with --status, a page counts the sessions read, not those listed).
    """
    from turnlog.ops.inspection import inspect

    store = existing_store(store_url)
    ids = [sid for sid in store.sessions() if after is None or sid > after]
    more = limit is not None and len(ids) > limit
    ids = ids[:limit]
    console = _console()
    rows = []
    # A session that cannot be read (a damaged file, another session's file
    # under this name) is listed with its status and says why, never dropped.
    flagged: list[tuple[str, str]] = []
    for session_id in _progress(console, ids, "reading session tails", as_json=as_json):
        found = inspect(store, session_id)
        row = {
            "session_id": session_id,
            "status": found.status,
            "turns": found.turns,
            "events": found.events,
            "last_activity": found.last_activity,
            "owed_calls": len(found.owed_calls),
            "awaiting": len(found.awaiting),
        }
        if statuses and found.status not in statuses:
            continue
        if found.status in ("corrupt", "unreadable") and found.problems:
            row["problem"] = found.problems[0].message
            flagged.append((session_id, found.problems[0].message))
        rows.append(row)
    next_after = ids[-1] if more and ids else None
    if as_json:
        _emit_json({"store": store.url, "sessions": rows, "next_after": next_after})
    else:
        from turnlog.cli.render import render_sessions

        render_sessions(console, rows)
        for session_id, problem in flagged:
            console.print(f"{session_id}: {problem}", style="yellow", markup=False, highlight=False)
        if next_after is not None:
            console.print(f"more: turnlog ls --after {next_after} --limit {limit}")


@click.command("inspect")
@click.argument("session")
@store_option
@max_revivals_option("The revival cap used to say whether the session is revivable.")
@json_option
@_reports_errors
def inspect_command(session: str, store_url: str | None, max_revivals: int, as_json: bool) -> None:
    """Say what state SESSION is in, from its tail. Never writes.

    Exits 3 when the session is unreadable or corrupt, else 0.
    """
    from turnlog.errors import SessionNotFoundError
    from turnlog.ops.inspection import inspect
    from turnlog.stores import store_from_url

    try:
        store, session_id = resolve_session(session, store_url)
    except SessionNotFoundError:
        # To a person, a session that is not there is "no such file" with a
        # hint, as every command says it; to a program (--json), a state to
        # report as the library reports it: status "unreadable", with what
        # was not found.
        if not as_json:
            raise
        if session.endswith(".jsonl"):
            found = inspect(session, max_revivals=max_revivals)
        else:
            found = inspect(store_from_url(store_url), session, max_revivals=max_revivals)
    else:
        found = inspect(store, session_id, max_revivals=max_revivals)
    if as_json:
        document = _to_builtins(found)
        document.pop("bytes_read", None)
        if document["torn_tail"] is not None:
            # The documented key; `size_bytes` is the library's field name.
            document["torn_tail"]["bytes"] = document["torn_tail"]["size_bytes"]
        _emit_json(document)
    else:
        from turnlog.cli.render import render_inspection

        render_inspection(_console(), found)
    if found.status in ("unreadable", "corrupt"):
        sys.exit(EXIT_UNREADABLE)


@click.command("plan")
@click.argument("session")
@store_option
@click.option("--check", is_flag=True, help="Exit 1 when the plan is not empty.")
@json_option
@_reports_errors
def plan_command(session: str, store_url: str | None, check: bool, as_json: bool) -> None:
    """Show the events recovery would append to SESSION, without appending them.

    Reads only the tail, as `recover` does. Exits 4 while a live writer holds
    the session: its open turn is work in progress, not a crash.
    """
    from turnlog.ops.recover import plan_stored

    store, session_id = resolve_session(session, store_url)
    repairs = plan_stored(store, session_id)
    if as_json:
        _emit_json(
            {
                "session_id": session_id,
                "repairs": [
                    {"type": e.type, "data": ev.to_builtins(e)["data"], "origin": e.origin}
                    for e in repairs.events
                ],
                "warnings": list(repairs.warnings),
            }
        )
    else:
        console = _console()
        from turnlog.cli.render import render_events

        render_events(console, repairs.events, title="recovery would append")
        for warning in repairs.warnings:
            console.print(f"warning: {warning}", style="yellow")
    if check and repairs.events:
        sys.exit(EXIT_FINDINGS)
