"""turnlog under agent frameworks: one module per framework, imported only when used;
here, what they share: one handle per session per process, tool idempotency, the
history check, the turn and step boundaries a framework's hooks imply, and the
pause of a call a framework stops on."""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from turnlog import events as ev
from turnlog.core.pauses import awaiting_call
from turnlog.errors import SessionInterruptedError, TurnlogError, UsageError
from turnlog.events import check_idempotency
from turnlog.handle.log import Log
from turnlog.ops.open import open as open_log
from turnlog.stores import Store, open_store

HistoryCheck = Literal["strict", "warn", "off"]
_HISTORY_CHECKS = ("strict", "warn", "off")

# -- one handle per session per process -------------------------------------------------


@dataclass
class _Shared:
    log: Log
    refs: int
    # What the handles on this writer must agree on (the items hidden from
    # the Agents SDK, the thread messages LangGraph wrappers recorded, the
    # run a turn belongs to), one entry per integration.
    state: dict[str, Any] = field(default_factory=dict)


_T = TypeVar("_T")


# A web handler builds a framework session object per request, as it does with
# the frameworks' own sessions. The writer lock is per session, so a second
# `Log` on the same session in this process would be refused (it is held
# here). The integrations share one `Log` per session instead, counted: the
# last handle released closes it. A `Log` is safe to share between threads
# and asyncio tasks.
_HANDLES: dict[tuple[str, str, str], _Shared] = {}
_HANDLES_LOCK = threading.Lock()


def _key(store: Store, session_id: str) -> tuple[str, str, str]:
    place = getattr(store, "directory", None) or getattr(store, "path", None)
    where = os.path.realpath(place) if isinstance(place, str) else str(store.url)
    return (type(store).__name__, where, session_id)


def acquire(
    target: str | os.PathLike[str] | Store,
    session_id: str | None = None,
    *,
    recover: bool = False,
    revive: bool = False,
    **options: Any,
) -> Log:
    """The process's shared `Log` for a session, opened on first use.

    `recover=True` / `revive=True` repair a crashed session as `turnlog.open`
    does, also when the handle is already open here. A turn left open with
    nothing owed (a run that stopped between steps, or a LangGraph run whose
    `finish` was not called) claims nothing about any call: it is closed as
    `interrupted`, as recovery would close it. A session with calls owed stays
    crashed and refuses writes until it is recovered.
    """
    store, session_id = open_store(target, session_id)
    with _HANDLES_LOCK:
        shared = _HANDLES.get(_key(store, session_id)) if session_id is not None else None
        if shared is not None and not shared.log.closed:
            shared.refs += 1
            log = shared.log
        else:
            log = open_log(store, session_id, **options)
            _HANDLES[_key(store, log.session_id)] = _Shared(log, 1)
    try:
        repair(log, recover=recover, revive=revive)
    except BaseException:
        release(log)
        raise
    return log


def shared_state(log: Log, key: str, factory: Callable[[], _T]) -> _T:
    """State every handle on this writer shares, made by `factory` on first use.
    A writer that is not shared (closed, or opened outside `acquire`) gets a
    fresh one each time, which is all such a writer ever has."""
    with _HANDLES_LOCK:
        shared = _HANDLES.get(_key(log.store, log.session_id))
        if shared is None or shared.log is not log:
            return factory()
        if key not in shared.state:
            shared.state[key] = factory()
        value: _T = shared.state[key]
        return value


def release(log: Log) -> None:
    """Give back a handle from `acquire`; the last one closes the `Log`."""
    with _HANDLES_LOCK:
        key = _key(log.store, log.session_id)
        shared = _HANDLES.get(key)
        if shared is None or shared.log is not log:
            log.close()
            return
        shared.refs -= 1
        if shared.refs > 0:
            return
        del _HANDLES[key]
        # Closed under the lock: a handle acquired right after must not find
        # the session still locked by this closing one.
        log.close()


def repair(log: Log, *, recover: bool = False, revive: bool = False) -> None:
    """Close a turn left open with nothing owed; recover or revive a crashed one
    when asked (see `acquire`)."""
    with log.lock:
        if not log.crashed and not revive:
            return
        if revive:
            # Also for a session recovered already (by `turnlog recover` or a
            # sweep) and not yet told: the model learns its process died, as
            # `turnlog revive` tells it. A healthy session is left as it is.
            from turnlog.ops.revival import refuse_engine_owned, revive as revive_log

            revived = revive_log(log)
            refuse_engine_owned(revived)
            capped = revived.reason in ("revival_cap", "revival_disabled")
            if not revived.revived and capped and log.crashed:
                # The cap exists to stop a crash loop; a handle that falls back
                # to recovery and runs on says so, or a loop goes unnoticed.
                warnings.warn(
                    f"session {log.session_id!r} is past its revival cap "
                    f"({revived.revival} revivals): recovered without a resume notice, "
                    "and the run goes on",
                    RevivalCapWarning,
                    stacklevel=4,
                )
        # Past the revival cap nothing is revived, and recovery still closes
        # the turn, as `turnlog.open(..., revive=True)` does.
        if log.crashed and (recover or revive or not log.owed_calls()):
            log.recover()


class RevivalCapWarning(UserWarning):
    """A handle opened with `revive=True` found the session past its revival
    cap: it was recovered (owed calls answered, no resume notice) and the run
    goes on. Turn the warning into an error to stop a crash loop there."""


def fail_run(log: Log, exc: BaseException) -> None:
    """The framework's run raised or was cancelled in this process: close the
    turn it left open as the reference loop does (`Log.fail_turn`): a
    dispatched call unanswered is outcome unknown (U1), an undispatched one
    did not start (U2), the turn ends `error` (or `cancelled`). The next run
    on the session starts clean."""
    with log.lock:
        if log.closed or log.crashed or not log.turn_open:
            return
        log.fail_turn(exc)


def refuse_unfinished(log: Log, *, how: str) -> None:
    """A run is starting while an earlier run of this process left its turn
    open (an exception no hook of the framework saw): its words would land
    inside that turn. Refused; `how` says how to close it."""
    with log.lock:
        if log.crashed or not log.turn_open:
            return
        owed = ", ".join(log.owed_calls()) or "none"
    raise SessionInterruptedError(
        f"session {log.session_id!r}: an earlier run in this process ended without ending "
        f"its turn (owed: {owed}); a new run would start inside that turn",
        hint=how,
    )


def refuse_interrupted(log: Log, *, how: str | None = None) -> None:
    """A framework run must not start inside a crashed turn: its owed calls
    would stay owed under the new run's messages. Recovery answers them first."""
    if not log.crashed:
        return
    owed = ", ".join(log.owed_calls())
    where = log.store.location(log.session_id) or log.session_id
    raise SessionInterruptedError(
        f"session {log.session_id!r} was interrupted mid-turn (owed: {owed}); "
        "a new run would start inside that turn",
        hint=(how + ", or " if how else "")
        + f"run `turnlog recover {where}` (or open it with recover=True / revive=True) "
        "first, then resume on the same session",
    )


# -- what a user knows about a tool -----------------------------------------------------


def check_idempotency_map(mapping: Mapping[str, str] | None) -> dict[str, str]:
    """A tool-name → idempotency mapping, every value checked."""
    return {name: check_idempotency(value, tool=name) for name, value in (mapping or {}).items()}


def tool_idempotency(
    name: str | None, declared: Mapping[str, str], metadata: Mapping[str, Any] | None = None
) -> str | None:
    """What the user declared about a tool: the integration's mapping first,
    then the tool's own metadata (`{"idempotency": ...}`), else nothing."""
    if name is not None and name in declared:
        return declared[name]
    if metadata and "idempotency" in metadata:
        return check_idempotency(metadata["idempotency"], tool=name)
    return None


# -- the run extends the log ------------------------------------------------------------


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


# -- turn and step boundaries -----------------------------------------------------------

# The turn and step boundaries a framework's hooks imply, written the way the
# reference loop writes them. Each runs under the handle's lock (the sync
# wrapper) or on its writer thread (`AsyncLog.call`), so a check and the
# append it leads to are one step.


#: The durable engines whose current run a hook can name itself (tested
#: with each): DBOS runs the agent's hooks in its workflow and Prefect in
#: its flow, in-process, and both run it again from the top after a crash.
ENGINES = ("dbos", "prefect")


def check_engine(engine: str) -> None:
    if engine not in ENGINES:
        raise UsageError(
            f"unknown engine {engine!r}; a hook names the runs of {', '.join(ENGINES)}",
            hint="under Temporal, whose workflow code may not write files, use "
            "TurnlogTemporalCapability (turnlog.integrations.pydantic_ai_temporal), which "
            "writes through activities (docs/engines.md)",
        )


def engine_run_id(engine: str) -> str:
    """The id of the engine's run this code runs in (the DBOS workflow, the
    Prefect flow run). Raises outside one: a run the engine does not own
    could not be found again after a crash."""
    run_id: str | None = None
    if engine == "dbos":
        from dbos import DBOS

        run_id = DBOS.workflow_id
    elif engine == "prefect":
        from prefect.runtime import flow_run

        run_id = flow_run.id
    if not run_id:
        raise UsageError(
            f"the run is not inside a {engine} workflow",
            hint=f"run the agent inside the {engine} workflow (or flow) that owns it",
        )
    return str(run_id)


def begin_turn_if_none(log: Log) -> None:
    """Open a turn unless one is open."""
    with log.lock:
        if not log.turn_open:
            log.append(log.next_turn_start())


def begin_step(log: Log, *, open_step: bool = True) -> None:
    """A model request is about to be made: a turn if none is open, the open
    step ended, the next one started (or only ensured, with `open_step=False`,
    for items recorded outside the hooks)."""
    with log.lock:
        begin_turn_if_none(log)
        turn = log.open_turn
        assert turn is not None
        if turn.open_step is not None:
            if not open_step:
                return
            log.append(ev.StepEnd(turn=turn.turn, step=turn.steps, outcome="ok"))
        log.append(ev.StepStart(turn=turn.turn, step=turn.steps + 1))


@dataclass(frozen=True)
class AheadCall:
    """A call the framework runs itself, to be dispatched ahead of it."""

    call_id: str
    name: str | None
    idempotency: str | None = None


def dispatch_ahead(log: Log, calls: Sequence[AheadCall]) -> list[str]:
    """Write a durable `tool_dispatch` for each call the framework runs itself
    (an output function, a handoff), before it can run: such a call has no
    tool hook of its own, and an undispatched call in a turn that dispatched
    others reads "did not run" after a crash (rule R2), which is false for
    code that ran. A dispatch makes it "may have run" (R1), and its answer is
    then recorded as any dispatched call's. Only a call the open turn asked
    for and has neither dispatched nor answered is written, so calling this
    again for the same call (a hook that fires per validation) writes nothing.
    Returns the ids written."""
    with log.lock:
        turn = log.open_turn
        if turn is None:
            return []
        waiting = {
            call.call_id
            for call in turn.calls
            if call.requested and not call.answered and call.dispatch is None
        }
        ahead = []
        for call in calls:
            if call.call_id in waiting:
                waiting.discard(call.call_id)
                ahead.append(call)
        if not ahead:
            return []
        log.append_many(
            [
                ev.ToolDispatch(call_id=call.call_id, name=call.name, idempotency=call.idempotency)
                for call in ahead
            ],
            sync=True,
        )
        return [call.call_id for call in ahead]


# A pause's prompt, as a framework's call shows it: at most this long.
PAUSE_PROMPT_MAX = 4096


def call_prompt(name: str, args: Any) -> str:
    """What a person deciding a paused call is shown: the call, its arguments."""
    from turnlog.text import foreign_text

    shown = args if isinstance(args, dict) else foreign_text(args)
    return f"{name}({shown})"[:PAUSE_PROMPT_MAX]


def hold_call(
    log: Log, call_id: str, *, kind: str, decided_in: str, prompt: str | None = None
) -> bool:
    """Pause a call the open turn asked for and has neither dispatched,
    answered nor paused (synced). False when it is not one to pause: paused
    before, or already started or answered (a resumed step)."""
    with log.lock:
        if awaiting_call(log.awaiting, call_id) is not None:
            return False
        turn = log.open_turn
        call = next((c for c in turn.calls if c.call_id == call_id), None) if turn else None
        if call is None or call.dispatch is not None or call.answered:
            return False
        log.pause(call_id, kind=kind, decided_in=decided_in, prompt=prompt)
        return True


def end_step_paused(log: Log) -> None:
    """End the open step `paused` when a call of the turn waits undecided and
    none is owed: the step stopped on that pause."""
    with log.lock:
        turn = log.open_turn
        if (
            turn is not None
            and turn.open_step is not None
            and not turn.owed
            and any(one.decision is None for one in log.awaiting)
        ):
            log.append(ev.StepEnd(turn=turn.turn, step=turn.steps, outcome="paused"))


def end_turn(log: Log) -> bool:
    """The run answered: end the open step and the turn, unless calls are owed
    (then the turn is left for recovery to judge). True when it ended."""
    with log.lock:
        turn = log.open_turn
        if turn is None or turn.owed:
            return False
        if turn.open_step is not None:
            log.append(ev.StepEnd(turn=turn.turn, step=turn.steps, outcome="ok"))
        log.append(ev.TurnEnd(reason="complete", turn=turn.turn, steps=turn.steps))
        return True


# The refusal of a call the log has answered, importable beside the other
# errors the handles raise; its module holds the rule.
from turnlog.integrations.answered import AnsweredCallError as AnsweredCallError  # noqa: E402
