"""Sending a trace over OTLP/HTTP: one POST, one origin, one deadline, no secret printed."""

from __future__ import annotations

import contextlib
import http.client
import re
import signal
import socket
import threading
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass

from turnlog.errors import TurnlogError, UsageError

#: How long one export may take in all: connecting, sending, and the
#: collector's whole answer (a server that drips its answer is cut off).
SEND_DEADLINE_S = 30.0
#: A header's value longer than this is refused before anything is sent.
MAX_HEADER_BYTES = 8192
#: How much of a collector's answer is read (the status is what counts).
_MAX_ANSWER_BYTES = 1 << 20

# RFC 9110's token: the characters a header name may have.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


@dataclass(frozen=True)
class Endpoint:
    """Where traces go: the URL to POST to, and how it may be printed (no
    credentials: a query's values and any userinfo are left out)."""

    url: str
    shown: str


def shown_url(parts: urllib.parse.SplitResult) -> str:
    """The URL as it may be printed: scheme, host, port and path only."""
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port is not None else ""
    query = "?…" if parts.query else ""
    return f"{parts.scheme}://{host}{port}{parts.path}{query}"


def traces_url(endpoint: str) -> Endpoint:
    """The endpoint to POST to: one with no path gets OTLP's `/v1/traces`.
    Refuses what is not an http(s) URL, and credentials in the URL itself."""
    bad = UsageError(
        "--endpoint is not an http(s) URL with a host (and a numeric port, if any)",
        hint="pass the collector's OTLP/HTTP address, e.g. http://localhost:4318",
    )
    try:
        parts = urllib.parse.urlsplit(endpoint)
        parts.port  # noqa: B018  # a port that is not a number raises here
    except ValueError:
        raise bad from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise bad
    if parts.username is not None or parts.password is not None:
        raise UsageError(
            f"--endpoint {shown_url(parts)} carries credentials in the URL",
            hint="send them as a header instead: --header 'authorization=Bearer ...' "
            "(headers are never printed)",
        )
    if parts.path in ("", "/"):
        parts = parts._replace(path="/v1/traces")
    return Endpoint(urllib.parse.urlunsplit(parts), shown_url(parts))


def parse_headers(pairs: tuple[str, ...]) -> dict[str, str]:
    """`KEY=VALUE` (or curl's `Key: value`) pairs as headers. An error names
    the header by its place, never by its text: it may be a secret."""
    headers: dict[str, str] = {}
    for number, pair in enumerate(pairs, start=1):
        before_equals = pair.partition("=")[0]
        sep = ":" if ":" in before_equals else "="
        key, found, value = pair.partition(sep)
        key, value = key.strip(), value.strip() if sep == ":" else value
        if not found or not _TOKEN.fullmatch(key):
            raise UsageError(
                f"header #{number} is not KEY=VALUE with a header name as KEY",
                hint="pass each header as --header 'authorization=Bearer ...'",
            )
        if any(ch in value for ch in "\r\n\0"):
            raise UsageError(
                f"header {key} has a line break or NUL in its value",
                hint="a header's value is one line",
            )
        try:
            size = len(value.encode("latin-1"))
        except UnicodeEncodeError:
            raise UsageError(
                f"header {key} has characters HTTP headers cannot carry",
                hint="a header's value is ASCII (or Latin-1); encode it as the collector "
                "expects (base64, say)",
            ) from None
        if size > MAX_HEADER_BYTES:
            raise UsageError(
                f"header {key} is {size:,} bytes, over {MAX_HEADER_BYTES:,}",
                hint="collectors take auth tokens of a few kilobytes at most",
            )
        headers[key] = value
    return headers


def send(
    endpoint: Endpoint, body: bytes, headers: dict[str, str], *, deadline_s: float = SEND_DEADLINE_S
) -> int:
    """POST an OTLP/JSON export; the HTTP status of a 2xx answer. Anything
    else fails: an error status, a redirect (never followed: the headers
    carry credentials, and the body went to one origin only), no answer
    within `deadline_s` in all."""
    parts = urllib.parse.urlsplit(endpoint.url)
    connection_type = (
        http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    )
    connection = connection_type(parts.hostname or "", parts.port, timeout=deadline_s)
    target = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
    outcome: list[int | BaseException] = []

    def exchange() -> None:
        try:
            connection.request(
                "POST", target, body=body, headers={**headers, "Content-Type": "application/json"}
            )
            answer = connection.getresponse()
            answer.read(_MAX_ANSWER_BYTES)
            outcome.append(answer.status)
        except BaseException as exc:  # handed to the caller's thread, worded there
            outcome.append(exc)

    worker = threading.Thread(target=exchange, name="turnlog-otlp-send", daemon=True)
    started = time.monotonic()
    with _broken_pipe_raises():
        worker.start()
        worker.join(deadline_s)
    if worker.is_alive():
        _abort(connection)
        raise TurnlogError(
            f"the trace was not sent to {endpoint.shown}: no whole answer within "
            f"{time.monotonic() - started:.0f} s",
            hint="is the collector overloaded, or is something else listening there?",
        )
    connection.close()
    result = outcome[0]
    if isinstance(result, BaseException):
        raise TurnlogError(
            f"could not send the trace to {endpoint.shown}: {_reason(result)}",
            hint="is the collector running and listening for OTLP/HTTP (port 4318 by default)?",
        )
    if 300 <= result < 400:
        raise TurnlogError(
            f"the trace was not sent: {endpoint.shown} answered HTTP {result}, a redirect, "
            "which turnlog does not follow (its headers may carry credentials)",
            hint="pass the address the collector serves OTLP/HTTP on as --endpoint",
        )
    if not 200 <= result < 300:
        raise TurnlogError(
            f"the endpoint refused the trace: HTTP {result} from {endpoint.shown}",
            hint="check the endpoint's path (OTLP/HTTP takes POST /v1/traces) and its auth "
            "headers (--header)",
        )
    return result


@contextlib.contextmanager
def _broken_pipe_raises() -> Iterator[None]:
    """A collector that closes the connection while the trace is being sent
    is an error to word, not a SIGPIPE that ends the process unheard (the
    command line takes SIGPIPE's default, for output piped into `head`)."""
    on_main = threading.current_thread() is threading.main_thread()
    if not on_main or not hasattr(signal, "SIGPIPE"):
        yield
        return
    previous = signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGPIPE, previous)


def _abort(connection: http.client.HTTPConnection) -> None:
    """Cut a send off: the worker's blocked read returns with an error."""
    sock = connection.sock
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
    connection.close()


def _reason(error: BaseException) -> str:
    """What went wrong, in words that hold nothing the request carried."""
    if isinstance(error, socket.timeout | TimeoutError):
        return "timed out"
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, socket.gaierror):
        return "the host name does not resolve"
    if isinstance(error, http.client.HTTPException):
        return f"the answer is not HTTP turnlog can read ({type(error).__name__})"
    if isinstance(error, OSError):
        return error.strerror or type(error).__name__
    return type(error).__name__
