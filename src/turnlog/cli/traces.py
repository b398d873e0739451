"""`export --to otlp-json`: a session's trace to a file and to an OTLP/HTTP endpoint."""

from __future__ import annotations

import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from typing import Any

import click
import msgspec

from turnlog import events as ev
from turnlog.cli._common import _events
from turnlog.errors import TurnlogError, UsageError
from turnlog.stores import Store

#: How long a collector may take to answer one export.
SEND_TIMEOUT_S = 30.0


def parse_headers(pairs: tuple[str, ...]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(
                f"--header {key.strip() or '?'}=... is not KEY=VALUE",
                hint="pass each header as --header 'authorization=Bearer ...'",
            )
        headers[key.strip()] = value
    return headers


def traces_url(endpoint: str) -> str:
    """The URL to POST to: an endpoint with no path gets OTLP's `/v1/traces`."""
    parts = urllib.parse.urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(
            f"--endpoint {endpoint!r} is not an http(s) URL",
            hint="pass the collector's OTLP/HTTP address, e.g. http://localhost:4318",
        )
    if parts.path in ("", "/"):
        return urllib.parse.urlunsplit(parts._replace(path="/v1/traces"))
    return endpoint


def send(
    url: str, body: bytes, headers: dict[str, str], *, timeout_s: float = SEND_TIMEOUT_S
) -> int:
    """POST an OTLP/JSON export; the HTTP status. The headers are never echoed:
    they carry credentials."""
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={**headers, "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as error:
        raise TurnlogError(
            f"the endpoint refused the trace: HTTP {error.code} from {url}",
            hint="check the endpoint's path (OTLP/HTTP takes POST /v1/traces) and its auth "
            "headers (--header)",
        ) from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise TurnlogError(
            f"could not send the trace to {url}: {reason}",
            hint="is the collector running and listening for OTLP/HTTP (port 4318 by default)?",
        ) from None


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
    from turnlog.formats.otlp import trace_request

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
            click.echo(f"error: trace of {item.session_id} not sent: {error.message}", err=True)
        else:
            click.echo(f"sent the trace of {item.session_id} to {url}", err=True)
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
    from turnlog.formats.otlp import trace_request

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
        with open(output, "wb") as out:
            out.write(body + b"\n")
    if url is not None:
        status = send(url, body, headers)
        spans = len(request["resourceSpans"][0]["scopeSpans"][0]["spans"])
        click.echo(f"sent {spans} spans of {session_id} to {url} (HTTP {status})", err=True)
