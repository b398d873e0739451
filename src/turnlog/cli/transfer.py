"""Commands that carry sessions elsewhere: `fork`, `export` and `copy`."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

import click

from turnlog.cli._common import (
    EXIT_FINDINGS,
    EXIT_LOCKED,
    EXIT_UNREADABLE,
    _console,
    _emit_json,
    _events,
    _exit_code,
    _progress,
    _reports_errors,
    _stream_json,
    _to_builtins,
    json_option,
    store_option,
)
from turnlog.cli.numbers import WholeNumber
from turnlog.cli.visible import visible
from turnlog.core.fold import Fold, Message
from turnlog.core.recovery import patch_dangling_tool_calls
from turnlog.errors import UsageError
from turnlog.stores import open_store, resolve_session, store_from_url

if TYPE_CHECKING:
    from turnlog.ops.transfer import CopyIncompleteError, CopyRefusedError


@click.command("fork")
@click.argument("session")
@click.option(
    "--at",
    "at_seq",
    type=WholeNumber(min_value=0, example="12"),
    required=True,
    help="The last seq the fork inherits.",
)
@click.option("--id", "new_id", help="The new session's id (default: <session>-fork-<n>).")
@store_option
@json_option
@_reports_errors
def fork_command(
    session: str, at_seq: int, new_id: str | None, store_url: str | None, as_json: bool
) -> None:
    """Start a new session from SESSION's events 0..AT, keeping their seqs and the lineage.

    A fork point inside a turn is refused: half a turn is never inherited.
    """
    from turnlog.handle.log import utc_now
    from turnlog.ops.fork import fork_session

    store, session_id = resolve_session(session, store_url)
    new_id = fork_session(store, session_id, at_seq, new_id=new_id, created_at=utc_now())
    path = store.location(new_id)
    if as_json:
        _emit_json(
            {"session_id": new_id, "parent": session_id, "seed_length": at_seq + 1, "path": path}
        )
    else:
        _console().print(
            f"forked {session_id} at seq {at_seq} into {new_id}" + (f" ({path})" if path else "")
        )


class _ProviderChoice(click.Choice[str]):
    """`click.Choice` of the provider names, read from `turnlog.providers` when
    `export` parses its options or prints its help, not when the command line
    is built: every other command leaves the four renderers unloaded."""

    def __init__(self) -> None:
        super().__init__(())

    @property
    def choices(self) -> tuple[str, ...]:
        from turnlog.providers import PROVIDERS

        return (*PROVIDERS, OTLP_JSON)

    @choices.setter
    def choices(self, value: object) -> None:
        # `click.Choice.__init__` stores the (empty) tuple it was given.
        pass


#: The trace format `export --to` writes besides the providers' requests.
OTLP_JSON = "otlp-json"


@click.command("export")
@click.argument("session")
@click.option(
    "--to",
    "provider",
    type=_ProviderChoice(),
    required=True,
    help="The provider API to render the request messages for, or otlp-json for an "
    "OpenTelemetry trace (docs/observability.md).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="otlp-json: the file to write the trace to (- for stdout, the default "
    "unless --endpoint is given).",
)
@click.option("--endpoint", help="otlp-json: also POST the trace to this OTLP/HTTP endpoint.")
@click.option(
    "--header",
    "headers",
    multiple=True,
    metavar="K=V",
    help="otlp-json: a header sent to --endpoint (auth); never printed.",
)
@click.option(
    "--content",
    is_flag=True,
    help="otlp-json: include messages, arguments and results in the spans.",
)
@click.option(
    "--validate", is_flag=True, help="Exit 1 listing every rule the provider would reject."
)
@click.option(
    "--patch-in-memory",
    is_flag=True,
    help="Answer unanswered tool calls in memory only (for logs you may not change).",
)
@store_option
@json_option
@_reports_errors
def export_command(
    session: str,
    provider: str,
    output: str | None,
    endpoint: str | None,
    headers: tuple[str, ...],
    content: bool,
    validate: bool,
    patch_in_memory: bool,
    store_url: str | None,
    as_json: bool,
) -> None:
    """Print SESSION's transcript as PROVIDER request messages (JSON). Writes nothing.

    With --json the output is {"provider", "request", "violations"}. With
    --to otlp-json: SESSION as an OpenTelemetry trace (OTLP/JSON), to
    --output and, with --endpoint, sent to a collector or backend.
    """
    from turnlog.providers import render as render_request, validate as validate_request

    store, session_id = resolve_session(session, store_url)
    if provider == OTLP_JSON:
        from turnlog.cli.traces import export_trace

        export_trace(store, session_id, output, endpoint, headers, content=content)
        return
    # Only the transcript is kept, never the events; the request is written
    # item by item.
    state = Fold(_events(store, session_id)).state
    messages: Sequence[Message] = state.messages
    dangling = patch_dangling_tool_calls(messages)
    paused = state.open_turn is not None and state.open_turn.paused
    fix = _export_fix(
        session, state.open_turn is not None, len(dangling) != len(messages), paused=paused
    )
    if patch_in_memory:
        messages = dangling
    del dangling
    request = render_request(provider, messages)
    del messages, state
    violations = validate_request(provider, request) if validate or as_json else []
    if as_json:
        _stream_json(
            {
                "provider": provider,
                "request": request,
                "violations": [_to_builtins(v) for v in violations],
            }
        )
    else:
        _stream_json(request, indent=True)
    for violation in violations:
        where = f" (call {violation.call_id})" if violation.call_id else ""
        click.echo(f"violation: item {violation.index}: {violation.message}{where}", err=True)
    if validate and violations:
        click.echo(f"hint: {fix}", err=True)
        sys.exit(EXIT_FINDINGS)


def _export_fix(session: str, turn_open: bool, dangling: bool, *, paused: bool = False) -> str:
    """What fixes an export a provider would reject, from what the log shows."""
    if paused:
        return (
            "the session is paused: its calls wait for decisions, not for recovery "
            f"(`turnlog inspect {session}` lists them); decide them (`turnlog approve`, "
            "`turnlog reject`, `turnlog deliver`) and resume the run, or export with "
            "--patch-in-memory to answer them in the request only"
        )
    if turn_open:
        return (
            "the session has a turn that never ended (a crash, or a run still going): "
            f"`turnlog inspect {session}` says which; once no writer holds it, "
            f"`turnlog recover {session}` answers its calls"
        )
    if dangling:
        return (
            "a turn that ended left tool calls unanswered; that is not a crash, so recovery "
            "leaves it as it is: export with --patch-in-memory to answer them in the request only"
        )
    return (
        "no crash caused this, so recovery would change nothing: the rule is broken by what "
        "the log itself holds (for example a conversation that opens with the assistant, "
        "which this provider refuses); edit the request, or export for another provider"
    )


@click.command("copy")
@click.argument("source", metavar="SOURCE")
@click.argument("dest", metavar="DEST")
@click.option(
    "--session",
    "session_ids",
    multiple=True,
    metavar="ID",
    help="A session to copy (repeatable; default: every session in SOURCE).",
)
@click.option(
    "--skip-existing",
    is_flag=True,
    help="Leave sessions DEST already holds as they are and copy the others.",
)
@json_option
@_reports_errors
def copy_command(
    source: str, dest: str, session_ids: tuple[str, ...], skip_existing: bool, as_json: bool
) -> None:
    """Copy sessions from the SOURCE store to the DEST store, event for event.

    Same seq, timestamps, origins and content; a session that exists in DEST
    is never overwritten: without --skip-existing the copy is refused before
    anything is written. Every session is checked before the first is
    written (a damaged one, a live one, a file renamed from another session's
    name refuse the copy); each copy is read back and compared. SOURCE may be
    one .jsonl session file. This is how a store moves from files to a database.
    """
    from turnlog.errors import SessionExistsError
    from turnlog.ops.transfer import CopyIncompleteError, CopyRefusedError, copy_sessions

    source_store, file_session = open_store(source)
    source_store.require()
    if file_session is not None and any(sid != file_session for sid in session_ids):
        raise UsageError(
            f"SOURCE {source} is the session {file_session!r}, and --session names another",
            hint="name the store's directory as SOURCE to pick sessions with --session",
        )
    dest_store = store_from_url(dest)
    if file_session is not None:
        ids = [file_session]
    else:
        ids = list(dict.fromkeys(session_ids)) or source_store.sessions()
    there = [session_id for session_id in ids if dest_store.exists(session_id)]
    if there and not skip_existing:
        # Refused whole, before the first copy: a second run is never left
        # to find half the sessions copied.
        named = ", ".join(repr(session_id) for session_id in there[:5])
        raise SessionExistsError(
            (
                f"session {named} already exists in {dest_store.url}"
                if len(there) == 1
                else f"{len(there)} sessions already exist in {dest_store.url}: {named}"
                + (", …" if len(there) > 5 else "")
            ),
            hint="copy never overwrites: pass --skip-existing to copy the others, or copy "
            "into another store",
        )
    todo = [session_id for session_id in ids if session_id not in set(there)]
    console = _console()
    try:
        copied = copy_sessions(
            source_store,
            todo,
            dest_store,
            progress=lambda ids, what: _progress(console, ids, what, as_json=as_json),
        )
    except CopyRefusedError as error:
        _copy_refused(error, as_json=as_json)
    except CopyIncompleteError as error:
        _copy_incomplete(error, as_json=as_json)
    if as_json:
        _emit_json(
            {
                "source": source_store.url,
                "dest": dest_store.url,
                "copied": copied,
                "skipped": there,
            }
        )
        return
    for item in copied:
        console.print(f"copied {item.session_id} ({item.events} events)")
    for session_id in there:
        console.print(f"skipped {session_id} (already in {dest_store.url})")
    if not copied and not there:
        console.print("no sessions to copy")


def _copy_refused(error: CopyRefusedError, *, as_json: bool) -> NoReturn:
    """Report every session that refused the copy, each with its own hint."""
    codes = {_exit_code(refusal) for _, refusal in error.refused}
    # Exit 4 only when every refusal is a live writer: waiting fixes it.
    code = EXIT_LOCKED if codes == {EXIT_LOCKED} else EXIT_UNREADABLE
    hint = (
        "nothing was written; deal with each session as its hint says and copy again, "
        "or name the sessions to copy with --session ID"
    )
    if as_json:
        _emit_json(
            {
                "error": error.message,
                "hint": hint,
                "exit_code": code,
                "refused": [
                    {"session_id": session_id, "error": refusal.message, "hint": refusal.hint}
                    for session_id, refusal in error.refused
                ],
                "copied": [],
            }
        )
    lines = [f"error: {error.summary}:"]
    for session_id, refusal in error.refused:
        lines.append(f"  {session_id}: {refusal.message}")
        if refusal.hint:
            lines.append(f"    hint: {refusal.hint}")
    lines.append(f"hint: {hint}")
    click.echo("\n".join(lines), err=True)
    sys.exit(code)


def _copy_incomplete(error: CopyIncompleteError, *, as_json: bool) -> NoReturn:
    """Report a copy that failed part way, saying exactly what DEST holds of it."""
    code = _exit_code(error.cause)
    hint = (error.cause.hint + "; then " if error.cause.hint else "") + (
        "run the same copy again with --skip-existing: what was copied is whole and is "
        "left as it is"
    )
    if as_json:
        _emit_json(
            {
                "error": error.message,
                "hint": hint,
                "exit_code": code,
                "copied": error.copied,
                "failed": error.session_id,
                "written": error.written,
                "not_copied": error.not_copied,
            }
        )
    click.echo(f"error: {visible(error.message)}", err=True)
    click.echo(f"hint: {visible(hint)}", err=True)
    sys.exit(code)
