"""`export --to otlp-json`: a session's trace to a file and to an OTLP/HTTP endpoint."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import click
import msgspec

from turnlog import events as ev
from turnlog.cli._common import _events
from turnlog.cli.otlp_http import parse_headers, send, traces_url
from turnlog.cli.visible import visible
from turnlog.errors import TurnlogError
from turnlog.stores import Store

#: How every trace file turnlog writes begins (OTLP/JSON's one member).
TRACE_MARKER = b'{"resourceSpans":'


def child_turns(store: Store, session_id: str) -> dict[str, int]:
    """Each subagent session's first turn's seq: where its own trace begins,
    for the link from the call that spawned it. Reads each child only up to
    that turn."""
    found: dict[str, int] = {}
    for child in store.children(session_id):
        for event in store.iter_events(child):
            if isinstance(event.data, ev.TurnStart):
                found[child] = event.seq
                break
    return found


#: What a sweep did to a session that is worth a trace: it changed the log.
REPAIRED_ACTIONS = ("recovered", "revived", "expired")


def send_repaired(
    store: Store, done: Sequence[Any], endpoint: str, header_pairs: tuple[str, ...]
) -> int:
    """Send the trace of each session a sweep repaired; how many failed to
    send (each said on stderr, the others still sent)."""
    from turnlog import __version__
    from turnlog.exports.otlp import trace_request

    url, headers = traces_url(endpoint), parse_headers(header_pairs)
    failures = 0
    for item in done:
        if item.action not in REPAIRED_ACTIONS:
            continue
        request = trace_request(
            item.session_id, _events(store, item.session_id), version=__version__
        )
        try:
            send(url, msgspec.json.encode(request), headers)
        except TurnlogError as error:
            failures += 1
            said = visible(f"trace of {item.session_id} not sent: {error.message}")
            click.echo(f"error: {said}", err=True)
        else:
            click.echo(f"sent the trace of {item.session_id} to {url.shown}", err=True)
    return failures


def export_trace(
    store: Store,
    session_id: str,
    output: str | None,
    endpoint: str | None,
    header_pairs: tuple[str, ...],
    *,
    content: bool,
) -> None:
    from turnlog import __version__
    from turnlog.exports.otlp import trace_request

    headers = parse_headers(header_pairs)
    url = traces_url(endpoint) if endpoint else None
    request: dict[str, Any] = trace_request(
        session_id,
        _events(store, session_id),
        content=content,
        version=__version__,
        child_turns=child_turns(store, session_id),
    )
    body = msgspec.json.encode(request)
    if output == "-" or (output is None and url is None):
        sys.stdout.buffer.write(body + b"\n")
        sys.stdout.flush()
    elif output is not None:
        from turnlog.cli.outputs import write_output

        write_output(output, body + b"\n", marker=TRACE_MARKER, what="the trace")
    if url is not None:
        status = send(url, body, headers)
        spans = len(request["resourceSpans"][0]["scopeSpans"][0]["spans"])
        click.echo(f"sent {spans} spans of {session_id} to {url.shown} (HTTP {status})", err=True)
