"""ADK's sessions in a turnlog store: ids scoped by app and user, deletion, shared state."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import count
from typing import Any

from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError as AdkNotFoundError
from google.adk.events.event import Event as AdkEvent
from google.adk.sessions.base_session_service import GetSessionConfig
from google.adk.sessions.session import Session
from google.adk.sessions.state import State

from turnlog import events as ev
from turnlog.errors import SessionExistsError, SessionNotFoundError, TurnlogError
from turnlog.handle.log import Log
from turnlog.integrations.adk.events import ADK_EVENT, adk_events, timestamp_s
from turnlog.integrations.kit.handles import shared_state
from turnlog.stores import Store
from turnlog.stores.base import AGENTS_SUFFIX, validate_session_id

# `delete_session` never deletes (the log is append-only): it appends this.
DELETED = "x_adk_deleted"
# How much of the ADK id a scoped turnlog id keeps readable, and how many hex
# digits of the digest follow it: 80 bits, so two (app, user, id) triples
# sharing a scoped id would take around 2**40 sessions in one store.
_READABLE_CHARS = 64
_DIGEST_HEX = 20
_UNSAFE = re.compile(r"[^A-Za-z0-9_\-]")

# The events of one stored session, read under its writer's lock when this
# process holds it (see `TurnlogSessionService._events`).
EventsOf = Callable[[str], list[ev.Event]]


class AdkSessionExistsError(SessionExistsError, AlreadyExistsError):
    """`create_session` with an id the app's user already has a session under.

    An ADK `AlreadyExistsError` too, so code written for ADK's own services
    catches it unchanged."""

    hint = (
        "pick another session id, or get the existing session with get_session; "
        "a deleted session's id can be used again"
    )


class AdkSessionNotFoundError(SessionNotFoundError, AdkNotFoundError):
    """`append_event` on a session this app's user does not have (never
    created, or deleted). An ADK `SessionNotFoundError` (a `ValueError`) too,
    as ADK's own services raise."""

    hint = (
        "create the session with create_session first, or check its app name, "
        "user id and session id; a deleted session takes no new events"
    )


def scoped_session_id(app_name: str, user_id: str, session_id: str) -> str:
    """The turnlog id of ADK session `session_id` of `app_name`'s `user_id`
    when that id cannot be used as it is (see `candidate_ids`).

    The ADK id with every character but letters, digits, `_` and `-` made `_`
    and cut to 64 characters, then `-` and the first 20 hex digits of the
    SHA-256 of `json.dumps([app_name, user_id, session_id])`. It holds no
    `/` and no `.`, so it is always a root session: never inside another
    session's subagent tree (`<parent>.agents/<child>`)."""
    readable = _UNSAFE.sub("_", session_id)[:_READABLE_CHARS]
    # Python's default JSON is ASCII (anything else escaped), so every string,
    # a lone surrogate included, has one encoding to hash.
    key = json.dumps([app_name, user_id, session_id])
    digest = hashlib.sha256(key.encode("ascii")).hexdigest()[:_DIGEST_HEX]
    return f"{readable}-{digest}"


def usable_as_is(session_id: str) -> bool:
    """An ADK id that can be a root turnlog session's id unchanged: a valid id
    with no `/` (which would make it a subagent's) and not ending `.agents`
    (a parent's subagent folder's name)."""
    if "/" in session_id or session_id.endswith(AGENTS_SUFFIX):
        return False
    try:
        validate_session_id(session_id)
    except TurnlogError:
        return False
    return True


def candidate_ids(app_name: str, user_id: str, session_id: str) -> Iterator[str]:
    """The turnlog ids an ADK session may be stored under, in the order they
    are tried: the ADK id itself when usable as is, then the scoped id, then
    the scoped id with `-2`, `-3`, ... for a session created again after
    earlier ones under the same ids were deleted (they keep their ids)."""
    if usable_as_is(session_id):
        yield session_id
    scoped = scoped_session_id(app_name, user_id, session_id)
    yield scoped
    for generation in count(2):
        yield f"{scoped}-{generation}"


@dataclass
class AdkHeader:
    """What a session's header says about the ADK session it holds."""

    turnlog_id: str
    app_name: str
    user_id: str
    session_id: str
    created_ts: str | None
    state: dict[str, Any] = field(default_factory=dict)

    def names(self, app_name: str, user_id: str | None, session_id: str | None = None) -> bool:
        """The header is this app's (this user's, this ADK id's) session."""
        return (
            self.app_name == app_name
            and user_id in (None, self.user_id)
            and session_id in (None, self.session_id)
        )


def read_adk_header(store: Store, turnlog_id: str) -> AdkHeader | None:
    """The ADK part of a stored session's header; None for a session that is
    not an ADK session (another integration's, a plain turnlog session)."""
    header = store.read_header(turnlog_id)
    data = header.data if header is not None else None
    if header is None or not isinstance(data, ev.Session):
        return None
    adk = (data.meta or {}).get("adk")
    if not isinstance(adk, dict) or "app_name" not in adk or "user_id" not in adk:
        return None
    return AdkHeader(
        turnlog_id=turnlog_id,
        app_name=str(adk["app_name"]),
        user_id=str(adk["user_id"]),
        # Sessions written before ids were scoped have no `session_id`: their
        # turnlog id is the ADK id, and they are read as they always were.
        session_id=str(adk.get("session_id", turnlog_id)),
        created_ts=header.ts,
        state=dict(adk.get("state") or {}),
    )


def deleted_here(log: Log) -> list[bool]:
    """Whether a service in this process deleted the session `log` writes
    (a one-item list to set), shared by every service on that writer."""
    return shared_state(log, "adk-deleted", lambda: [False])


def is_deleted(events: list[ev.Event]) -> bool:
    """`delete_session` hid the session (it appended its marker)."""
    return any(isinstance(e.data, ev.Custom) and e.data.type == DELETED for e in events)


def locate(
    store: Store, app_name: str, user_id: str, session_id: str, events_of: EventsOf
) -> AdkHeader | None:
    """The header of the live session of ADK session `session_id` of
    `app_name`'s `user_id`, found among its candidate ids (see
    `candidate_ids`); None when it has none (never created, or deleted).

    A candidate taken by another session (another app's or user's, a non-ADK
    one, a deleted one) is passed over; the walk ends at the first free
    scoped id, past which nothing was ever created."""
    for candidate in candidate_ids(app_name, user_id, session_id):
        if not store.exists(candidate):
            if candidate == session_id:
                continue  # the ADK id is free, yet a scoped one may be taken
            return None
        header = read_adk_header(store, candidate)
        mine = header is not None and header.names(app_name, user_id, session_id)
        if mine and not is_deleted(events_of(candidate)):
            return header
    raise AssertionError("unreachable: candidate_ids never ends")  # pragma: no cover


def free_id(store: Store, app_name: str, user_id: str, session_id: str) -> str:
    """The id a new session is created under: the ADK id when it is free and
    usable, else the first free scoped id."""
    for candidate in candidate_ids(app_name, user_id, session_id):
        if not store.exists(candidate):
            return candidate
    raise AssertionError("unreachable: candidate_ids never ends")  # pragma: no cover


def app_headers(store: Store, app_name: str) -> list[AdkHeader]:
    """The header of every ADK session of the app in the store, deleted ones included."""
    headers = (read_adk_header(store, turnlog_id) for turnlog_id in store.sessions())
    return [h for h in headers if h is not None and h.app_name == app_name]


@dataclass
class SharedState:
    """The `app:` keys of an app's sessions and the `user:` keys of each of
    its users, without their prefixes: the newest write of each key wins, in
    the order turnlog appended them (deleted sessions' writes count, as ADK's
    own services keep shared state when a session is deleted)."""

    app: dict[str, Any] = field(default_factory=dict)
    users: dict[str, dict[str, Any]] = field(default_factory=dict)

    def merged_into(self, state: dict[str, Any], user_id: str) -> dict[str, Any]:
        """A session's own state with the app's and its user's keys set over
        it, as ADK's own services merge them."""
        merged = dict(state)
        merged.update({State.APP_PREFIX + k: v for k, v in self.app.items()})
        user = self.users.get(user_id, {})
        merged.update({State.USER_PREFIX + k: v for k, v in user.items()})
        return merged


def shared_keys(
    headers: list[AdkHeader], events_of: Callable[[str], list[ev.Event] | None]
) -> SharedState:
    """The shared state of the sessions `headers` names (`events_of` gives
    None for a session it cannot read: its own `get_session` reports it)."""
    # (turnlog ts, user, key, value): the ts strings are ISO UTC with
    # microseconds, so they sort as time does; the sort is stable, so writes
    # of one session in one microsecond keep their order.
    changes: list[tuple[str, str, str, Any]] = []
    for header in headers:
        created = header.created_ts or ""
        changes.extend((created, header.user_id, k, v) for k, v in header.state.items())
        for event in events_of(header.turnlog_id) or []:
            if isinstance(event.data, ev.Custom) and event.data.type == ADK_EVENT:
                delta = (event.data.fields["event"].get("actions") or {}).get("state_delta") or {}
                changes.extend((event.ts or "", header.user_id, k, v) for k, v in delta.items())
    changes.sort(key=lambda change: change[0])
    shared = SharedState()
    for _, user_id, key, value in changes:
        if key.startswith(State.APP_PREFIX):
            shared.app[key.removeprefix(State.APP_PREFIX)] = value
        elif key.startswith(State.USER_PREFIX):
            user = shared.users.setdefault(user_id, {})
            user[key.removeprefix(State.USER_PREFIX)] = value
    return shared


def own_state(state: dict[str, Any] | None) -> dict[str, Any]:
    """A state dict without its `temp:` keys, which ADK never stores."""
    return {k: v for k, v in (state or {}).items() if not k.startswith(State.TEMP_PREFIX)}


def session_from_log(header: AdkHeader, stored: list[ev.Event], shared: SharedState) -> Session:
    """The ADK session a stored session holds, every event in it, its state
    merged with the shared keys; last updated at its last event's timestamp
    (its creation's, with no event), as ADK's own services stamp it."""
    session = Session(
        id=header.session_id,
        app_name=header.app_name,
        user_id=header.user_id,
        state=own_state(header.state),
        last_update_time=timestamp_s(header.created_ts),
    )
    for event in adk_events(stored):
        if event.actions and event.actions.state_delta:
            session.state.update(event.actions.state_delta)
        session.events.append(event)
    if session.events:
        session.last_update_time = session.events[-1].timestamp
    session.state = shared.merged_into(session.state, header.user_id)
    return session


def recent_events(events: list[AdkEvent], config: GetSessionConfig) -> list[AdkEvent]:
    """The events `config` asks for, picked as ADK's in-memory service picks
    them: the last `num_recent_events`, then of those the run at the end
    stamped at or after `after_timestamp`."""
    if config.num_recent_events is not None:
        events = events[-config.num_recent_events :] if config.num_recent_events else []
    if config.after_timestamp is not None:
        first = len(events)
        while first > 0 and events[first - 1].timestamp >= config.after_timestamp:
            first -= 1
        events = events[first:]
    return events
