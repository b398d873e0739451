"""A writer handle that writes for a durable-execution engine's run, replaying it after a crash.

The engine (DBOS, Temporal, Prefect) owns the run: it restarts it after a
crash by running the workflow again from the top. Each turn the run begins
is stamped with the run (`turn_start.engine_run`), so `sweep` leaves it to
the engine, and a handle opened for the same run again finds the run's
earlier writes and meets them instead of writing them twice
(`turnlog.core.replay`).
"""

from __future__ import annotations

from turnlog import events as ev
from turnlog.core.fold import Fold
from turnlog.core.replay import Replay
from turnlog.errors import UsageError
from turnlog.handle.bulk import collector_paused
from turnlog.handle.state import HandleState


def check_engine_run(run: ev.EngineRun) -> None:
    if not run.engine or not run.run_id:
        raise UsageError(
            "an engine run needs the engine's name and its run id",
            hint="pass EngineRun(engine='dbos', run_id=DBOS.workflow_id), for example",
        )


def write_for(held: HandleState, run: ev.EngineRun, *, replay: bool) -> None:
    """Make `held` write for `run`. With `replay`, the whole log is read and
    the handle's fold set back to where the run's first turn began: the run,
    executed again, meets its earlier writes one by one. Without it (a handle
    opened inside one step, which writes only its own tool calls), the handle
    only carries on the run's open turn."""
    with held.lock:
        held.engine_run = run
        if replay:
            with collector_paused():
                events = list(held.store.iter_events(held.session_id))
            start = next(
                (
                    index
                    for index, event in enumerate(events)
                    if isinstance(event.data, ev.TurnStart) and event.data.engine_run == run
                ),
                None,
            )
            if start is not None:
                with collector_paused():
                    fold = Fold(events[:start])
                held.fold = fold
                held.whole = True
                held.replay = Replay(events[start:], fold.apply)
                if held.replay.done:
                    held.replay = None
            else:
                with collector_paused():
                    held.fold = Fold(events)
                held.whole = True
        held.crashed = held.is_crashed()
