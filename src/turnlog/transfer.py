"""The door of `turnlog.transfer`, which lives in `turnlog.ops.transfer`: it only
re-exports the documented names, so code written for the old path keeps working."""

from turnlog.errors import (
    SessionExistsError as SessionExistsError,
    SessionLockedError as SessionLockedError,
    SessionNotFoundError as SessionNotFoundError,
    TurnlogError as TurnlogError,
    UnfinishedSessionError as UnfinishedSessionError,
)
from turnlog.events import (
    Event as Event,
    encode_event as encode_event,
)
from turnlog.ops.transfer import (
    COPY_BATCH_EVENTS as COPY_BATCH_EVENTS,
    Copied as Copied,
    CopyIncompleteError as CopyIncompleteError,
    CopyRefusedError as CopyRefusedError,
    Progress as Progress,
    check_source as check_source,
    copy_session as copy_session,
    copy_sessions as copy_sessions,
    write_events as write_events,
)
from turnlog.stores.base import (
    Store as Store,
)
