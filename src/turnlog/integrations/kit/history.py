"""The history a framework hands over checked against the log's transcript."""

from __future__ import annotations

import warnings
from collections.abc import Collection, Sequence
from typing import Any, Literal

from turnlog.errors import TurnlogError, UsageError
from turnlog.handle.log import Log

HistoryCheck = Literal["strict", "warn", "off"]
_HISTORY_CHECKS = ("strict", "warn", "off")


class HistoryMismatchError(TurnlogError):
    """A framework handed turnlog a history that is not the log's transcript."""

    hint = (
        "pass the session's own history (the integration's messages / items), or start "
        "a new session; history='warn' or 'off' lets the run go on"
    )


def check_history_mode(mode: str) -> HistoryCheck:
    if mode not in _HISTORY_CHECKS:
        raise UsageError(
            f"history check {mode!r} is not one of {', '.join(_HISTORY_CHECKS)}",
            hint="strict raises on a mismatch, warn (the default) warns, off does not check",
        )
    return mode  # type: ignore[return-value]


def check_history(
    log: Log,
    given: Sequence[tuple[str, tuple[str, ...]]],
    mode: HistoryCheck,
    *,
    what: str,
    unseen: Collection[int] = (),
) -> None:
    """The history a framework hands over must be the log's transcript or
    extend it. Both sides are compared as (role, call ids) shapes, which is
    what a provider's pairing rules see; the log is never rewritten to match.
    `unseen` are the seqs of log messages the framework never shows by design
    (what turnlog records of a LangGraph interrupt). A mismatch raises in
    `strict`, warns in `warn`, is ignored in `off`."""
    if mode == "off":
        return
    logged = [
        (message.role, tuple(call.id for call in message.tool_calls) or _call_id(message))
        for message in log.messages
        if message.seq not in unseen
    ]
    given = _results_in_call_order([entry for entry in given if entry[0] != "system"])
    logged = _results_in_call_order([entry for entry in logged if entry[0] != "system"])
    if given[: len(logged)] == logged:
        return
    at = next(
        (i for i, (a, b) in enumerate(zip(given, logged, strict=False)) if a != b),
        min(len(given), len(logged)),
    )
    message = (
        f"{what} is not the transcript of session {log.session_id!r} nor an extension of it: "
        f"they differ at message {at} ({len(given)} given, {len(logged)} in the log)"
    )
    if mode == "strict":
        raise HistoryMismatchError(message)
    warnings.warn(message, HistoryMismatchWarning, stacklevel=3)


def _results_in_call_order(
    entries: Sequence[tuple[str, tuple[str, ...]]],
) -> list[tuple[str, tuple[str, ...]]]:
    """The shapes with each run of tool results sorted by call id: parallel
    calls may be answered in any order (the log keeps the order they finished
    in, a framework often the order they were asked in), and every provider
    takes a step's results in any order."""
    out: list[tuple[str, tuple[str, ...]]] = []
    run: list[tuple[str, tuple[str, ...]]] = []
    for entry in [*entries, ("", ())]:
        if entry[0] == "tool":
            run.append(entry)
            continue
        out += sorted(run, key=lambda found: found[1])
        run = []
        if entry[0]:
            out.append(entry)
    return out


def _call_id(message: Any) -> tuple[str, ...]:
    return (message.call_id,) if message.role == "tool" and message.call_id else ()


class HistoryMismatchWarning(UserWarning):
    """The `warn` form of `HistoryMismatchError`."""
