"""Commands for other tools' session files (Claude Code, Codex): `doctor`
repairs them in their own format, `import` brings them into a store."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final

import click

from turnlog.cli._common import (
    EXIT_FINDINGS,
    EXIT_LOCKED,
    EXIT_OK,
    EXIT_UNREADABLE,
    EXIT_USAGE,
    _console,
    _emit_json,
    _progress,
    _reports_errors,
    _to_builtins,
    json_option,
    store_option,
)
from turnlog.cli.numbers import Seconds
from turnlog.cli.visible import visible
from turnlog.errors import TurnlogError, UsageError
from turnlog.stores import store_from_url

if TYPE_CHECKING:
    from rich.console import Console

    from turnlog.formats.rescue import Failure, Repair, RepairRun


KIND_CHOICE = click.Choice(["claude-code", "codex"])


# A folder's report exits with its worst file: unreadable above live above
# a usage problem above findings.
_SEVERITY: Final = (EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_LOCKED, EXIT_UNREADABLE)


def _worst(codes: Iterable[int]) -> int:
    return max(codes, key=_SEVERITY.index, default=EXIT_OK)


@click.command("doctor")
@click.argument("kind", type=KIND_CHOICE)
@click.argument("path", metavar="FILE|DIR", required=False)
@click.option(
    "--all",
    "scan_all",
    is_flag=True,
    help="Scan a folder (default ~/.claude/projects or ~/.codex/sessions) for sessions that "
    "will not resume, and repair them after one confirmation.",
)
@click.option("--dry-run", is_flag=True, help="Show what would be appended; write nothing.")
@click.option("--yes", is_flag=True, help="Repair without asking (for scripts).")
@click.option(
    "--force",
    is_flag=True,
    help="Repair a file that looks live (open in a process, or modified recently).",
)
@click.option(
    "--live-window",
    "live_window_s",
    type=Seconds(example="600"),
    default=None,
    metavar="SECONDS",
    help="Treat a file modified this recently as live and leave it alone (default: 600 for "
    "Claude Code, which writes nothing while a tool runs or it waits for you; 10 for Codex, "
    "which holds its file open while it runs).",
)
@json_option
@_reports_errors
def doctor_command(
    kind: str,
    path: str | None,
    scan_all: bool,
    dry_run: bool,
    yes: bool,
    force: bool,
    live_window_s: float | None,
    as_json: bool,
) -> None:
    """Repair a Claude Code or Codex session that will not resume, in its own
    format, by appending only.

    Claude Code: one `user` line per unanswered `tool_use` line, answering its
    calls with an error result that says what is known. Codex: one output
    item per orphan call, with the real output where Codex recorded it. A torn
    final fragment is moved to a sidecar first; no other byte changes. A
    healthy or user-interrupted session is left alone; a second run appends
    nothing. A Claude Code session's subagents' own files are repaired with
    it, in the same run (and under --all like any other file); a session is
    left alone while any of its files looks live. With --all, a file that
    cannot be repaired is reported and the scan goes on. Exits 0 when
    repaired or nothing to repair, 1 when --dry-run finds a repair to make, 4
    when a file looks live, 3 when a file could not be read or repaired: the
    worst over all files.
    """
    from turnlog.formats.rescue import Failure, RepairRun

    console = _console()
    found, folder = _diagnose_named(kind, path, scan_all, console, as_json=as_json)
    diagnosed = [item for item in found if not isinstance(item, Failure)]
    failed: list[Failure] = [item for item in found if isinstance(item, Failure)]
    wanted = [item for item in diagnosed if item.needs_repair]
    if not as_json:
        for item in diagnosed:
            _print_diagnosis(console, item)
        if scan_all and not wanted and not failed:
            console.print(f"nothing to repair in {folder}")
    if wanted and not dry_run and not yes:
        _confirm(len(wanted))
    # A folder reports the sessions that need a repair; one file always
    # reports, then its subagents' files that need one.
    listed = wanted if scan_all else diagnosed
    run = RepairRun(force=force, live_window_s=live_window_s)
    done, codes = _repair_each(run, listed, kind, dry_run=dry_run, scan_all=scan_all)
    codes += [_failure_code(unread) for unread in failed]
    if as_json:
        _emit_json(
            {
                "repairs": [_to_builtins(repair) for repair in done],
                "failed": [_to_builtins(unread) for unread in failed],
            }
        )
    else:
        _print_repairs(console, done, failed)
    if dry_run and wanted:
        codes.append(EXIT_FINDINGS)
    worst = _worst(codes)
    if worst != EXIT_OK:
        sys.exit(worst)


def _diagnose_named(
    kind: str, path: str | None, scan_all: bool, console: Console, *, as_json: bool
) -> tuple[list[Any], str | None]:
    """What `doctor` was pointed at, diagnosed: a folder's files (with a
    progress bar), or one file and its subagents' own files. Also the folder."""
    from turnlog.formats.rescue import DEFAULT_FOLDERS, diagnose, scan_folder, subagent_diagnoses

    if scan_all:
        folder = os.path.expanduser(path or DEFAULT_FOLDERS[kind])
        if not os.path.isdir(folder):
            raise UsageError(f"{folder} is not a folder", hint="pass the folder to scan")
        found = scan_folder(
            kind,
            folder,
            progress=lambda files: _progress(console, list(files), "scanning", as_json=as_json),
        )
        return list(found), folder
    if path is None:
        raise UsageError("doctor needs a FILE, or --all to scan a folder")
    named = diagnose(path, kind)
    # A session's subagents killed with it owe results in their own files.
    return [named, *subagent_diagnoses(path, named)], None


def _confirm(count: int) -> None:
    """Ask before appending to files another tool owns; no terminal, no repair."""
    if not sys.stdin.isatty():
        raise UsageError(
            "not repairing without a confirmation",
            hint="pass --yes to repair without asking, or --dry-run to look only",
        )
    if not click.confirm(f"append the repairs to {count} file(s)?", default=False):
        sys.exit(EXIT_FINDINGS)


def _repair_each(
    run: RepairRun, listed: list[Any], kind: str, *, dry_run: bool, scan_all: bool
) -> tuple[list[Repair | Failure], list[int]]:
    """Repair (or, dry, describe) each listed file; the exit codes of those that failed."""
    from turnlog.formats.rescue import Repair, failure

    done: list[Repair | Failure] = []
    codes: list[int] = []
    for index, item in enumerate(listed):
        if dry_run:
            action = "would repair" if item.needs_repair else "nothing to repair"
            done.append(Repair(diagnosis=item, action=action))
            continue
        # The repair reads each file whole again: a scan judged from tails.
        try:
            done.append(run.repair(item.path, kind))
        except (TurnlogError, OSError) as error:
            if not scan_all and index == 0:
                raise
            # One bad file does not stop the others; it is reported with them.
            lost = failure(item.path, error)
            done.append(lost)
            codes.append(_failure_code(lost))
    return done, codes


def _print_repairs(console: Console, done: list[Repair | Failure], failed: list[Failure]) -> None:
    from turnlog.formats.rescue import Failure

    for unread in failed:
        console.print(f"{unread.path}: not read: {unread.error}", style="red")
    for repair in done:
        if isinstance(repair, Failure):
            console.print(f"{repair.path}: not repaired: {repair.error}", style="red")
            if repair.hint:
                console.print(f"  hint: {repair.hint}")
            continue
        where = repair.diagnosis.path
        moved = repair.torn_tail
        if moved is not None:
            console.print(
                f"{where}: moved a torn fragment of {moved.size_bytes} bytes to {moved.sidecar}"
            )
        if repair.action == "repaired" and repair.appended_bytes:
            lines = len(repair.diagnosis.lines)
            console.print(f"{where}: appended {lines} line(s), {repair.appended_bytes} bytes")
        elif repair.action != "repaired":
            console.print(f"{where}: {repair.action}")


def _failure_code(item: Any) -> int:
    """The exit status a failed file stands for, from its error's class."""
    if item.kind == "SessionLockedError":
        return EXIT_LOCKED
    if item.kind == "UsageError":
        return EXIT_USAGE
    return EXIT_UNREADABLE


def _print_diagnosis(console: Console, item: Any) -> None:
    what = f"{item.kind} session {item.session_id}"
    if item.subagent_of is not None:
        what = f"{item.kind} subagent {item.agent_id} of session {item.subagent_of}"
    console.print(f"{item.path}: {what}, {item.status}")
    for owed in item.owed:
        if owed.recorded:
            known = "real output recorded elsewhere"
        elif owed.rule == "R1":
            known = f"{owed.risk} (the file shows it started)"
        else:
            known = f"{owed.risk} (the file does not show whether it started)"
        console.print(f"  owes {owed.call_id} ({owed.name}): {known}")
    if item.torn_tail is not None:
        console.print(
            f"  torn final fragment: {item.torn_tail.size_bytes} bytes at {item.torn_tail.offset}"
        )
    for problem in item.problems:
        where = f"line {problem.line}: " if problem.line else ""
        console.print(f"  found: {where}{problem.message}", style="yellow")


@click.command("import")
@click.argument("kind", type=click.Choice(["claude-code", "codex", "auto"]))
@click.argument("files", metavar="FILE...", nargs=-1, required=True)
@store_option
@json_option
@_reports_errors
def import_command(kind: str, files: tuple[str, ...], store_url: str | None, as_json: bool) -> None:
    """Import Claude Code or Codex sessions (and their subagents) into a turnlog store.

    The files are only read. Each becomes a session of `origin: import` events,
    so `inspect`, `show`, `export`, `recover` and `revive` work on it. A
    subagent's own file becomes a child of the session that spawned it,
    whatever order the files come in. Exits 3 if any file could not be
    imported (the others are).
    """
    from turnlog.formats.rescue import import_file

    store = store_from_url(store_url)
    store.init()
    console = _console()
    results: list[dict[str, Any]] = []
    failed = False
    for path in files:
        try:
            done = import_file(store, path, kind)
        except (TurnlogError, OSError) as error:
            failed = True
            message = error.message if isinstance(error, TurnlogError) else str(error)
            hint = error.hint if isinstance(error, TurnlogError) else ""
            results.append({"path": path, "error": message, "hint": hint})
            if not as_json:
                # The message names the file already when it can.
                shown = message if path in message else f"{path}: {message}"
                click.echo(f"error: {visible(shown)}", err=True)
                if hint:
                    click.echo(f"hint: {visible(hint)}", err=True)
            continue
        results.append(_to_builtins(done))
        if not as_json:
            extra = f", {len(done.subagents)} subagent(s)" if done.subagents else ""
            facts = f"{done.events} events, {done.status}{extra}"
            role = f" (subagent of {done.subagent_of})" if done.subagent_of else ""
            console.print(f"{path}: imported as {done.session_id}{role} ({facts})")
    if as_json:
        _emit_json({"store": store.url, "imported": results})
    if failed:
        sys.exit(EXIT_UNREADABLE)
