"""One handle per session per process, shared by every framework object on it."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from turnlog.events import EngineRun
from turnlog.handle.log import Log
from turnlog.integrations.kit.runs import repair
from turnlog.ops.open import open as open_log
from turnlog.stores import Store, open_store


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


def open_engine_run(
    target: str | os.PathLike[str] | Store,
    session_id: str | None,
    run: EngineRun,
    *,
    replay: bool = True,
    **options: Any,
) -> Log:
    """A handle of its own for one durable engine run, which the caller
    closes. Never shared: its writes replay the run's earlier ones from the
    top (`replay=False` inside one step of the run), which a framework
    object sharing it could not follow. Every handle an adapter holds is
    opened in this module: this one, or `acquire`'s."""
    return open_log(target, session_id, engine_run=run, replay=replay, **options)
