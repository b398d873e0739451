"""Commands that record decisions about paused calls: `approve`, `reject` and `deliver`."""

from __future__ import annotations

import json
from typing import Any

import click

from turnlog import events as ev
from turnlog.cli._common import (
    _console,
    _emit_json,
    _reports_errors,
    _to_builtins,
    json_option,
    store_option,
)
from turnlog.errors import UsageError
from turnlog.stores import resolve_session

_by_option = click.option(
    "--by", metavar="WHO", default=None, help="Who decided (a person, a service); kept in the log."
)


def _decide(session: str, store_url: str | None, act: Any, as_json: bool, verb: str) -> None:
    """Open SESSION for writing, record the decision with `act(log)`, say what was written."""
    from turnlog.core.pauses import describe_pause
    from turnlog.ops.open import open as open_log

    store, session_id = resolve_session(session, store_url)
    with open_log(store, session_id, create=False) as log:
        written = act(log)
        left = log.awaiting
    events = written if isinstance(written, list) else [written]
    if as_json:
        _emit_json(
            {
                "session_id": session_id,
                "appended": [ev.to_builtins(event) for event in events],
                "awaiting": [_to_builtins(one) for one in left],
            }
        )
        return
    from turnlog.cli.render import render_events

    console = _console()
    render_events(console, events, title=verb)
    if left:
        console.print(f"still {describe_pause(left)}")
    else:
        console.print("every paused call is decided: resume the run to act on the decisions")


@click.command("approve")
@click.argument("session")
@click.argument("call_id")
@store_option
@_by_option
@click.option("--reason", default=None, help="Why it was approved; kept in the log.")
@json_option
@_reports_errors
def approve_command(
    session: str,
    call_id: str,
    store_url: str | None,
    by: str | None,
    reason: str | None,
    as_json: bool,
) -> None:
    """Approve the paused CALL_ID of SESSION: the run, once resumed, runs it once.

    The decision is written (synced) before anything acts on it; the tool
    itself runs only when the agent's run resumes, write-ahead as every call.
    """
    _decide(
        session,
        store_url,
        lambda log: log.approve(call_id, by=by, reason=reason),
        as_json,
        "approved",
    )


@click.command("reject")
@click.argument("session")
@click.argument("call_id")
@store_option
@_by_option
@click.option("--reason", default=None, help="Why it was declined; the model reads it.")
@json_option
@_reports_errors
def reject_command(
    session: str,
    call_id: str,
    store_url: str | None,
    by: str | None,
    reason: str | None,
    as_json: bool,
) -> None:
    """Reject the paused CALL_ID of SESSION: the tool never runs, and the model
    reads that it was declined (rule A1)."""
    _decide(
        session,
        store_url,
        lambda log: log.reject(call_id, by=by, reason=reason),
        as_json,
        "rejected",
    )


@click.command("deliver")
@click.argument("session")
@click.argument("call_id")
@click.argument("content")
@store_option
@_by_option
@click.option("--error", "is_error", is_flag=True, help="The delivered result is an error.")
@click.option(
    "--json-content",
    is_flag=True,
    help="CONTENT is JSON (a list of content parts) rather than plain text.",
)
@json_option
@_reports_errors
def deliver_command(
    session: str,
    call_id: str,
    content: str,
    store_url: str | None,
    by: str | None,
    is_error: bool,
    json_content: bool,
    as_json: bool,
) -> None:
    """Deliver CONTENT as the result of the paused CALL_ID of SESSION (a call
    that waits for an outside result or a person's answer)."""
    value: Any = content
    if json_content:
        try:
            value = json.loads(content)
        except json.JSONDecodeError as exc:
            raise UsageError(
                f"CONTENT is not JSON: {exc}",
                hint="leave out --json-content to deliver plain text",
            ) from None
    _decide(
        session,
        store_url,
        lambda log: log.deliver(call_id, value, by=by, is_error=is_error),
        as_json,
        "delivered",
    )
