"""The door of `turnlog.transfer`, which lives in `turnlog.ops.transfer`: it only
re-exports the documented names, so code written for the old path keeps working."""

from turnlog.errors import (
    SessionExistsError as SessionExistsError,
)
from turnlog.errors import (
    SessionLockedError as SessionLockedError,
)
from turnlog.errors import (
    SessionNotFoundError as SessionNotFoundError,
)
from turnlog.errors import (
    TurnlogError as TurnlogError,
)
from turnlog.errors import (
    UnfinishedSessionError as UnfinishedSessionError,
)
from turnlog.events import (
    Event as Event,
)
from turnlog.events import (
    encode_event as encode_event,
)
from turnlog.ops.transfer import (
    COPY_BATCH_EVENTS as COPY_BATCH_EVENTS,
)
from turnlog.ops.transfer import (
    Copied as Copied,
)
from turnlog.ops.transfer import (
    CopyIncompleteError as CopyIncompleteError,
)
from turnlog.ops.transfer import (
    CopyRefusedError as CopyRefusedError,
)
from turnlog.ops.transfer import (
    Progress as Progress,
)
from turnlog.ops.transfer import (
    check_source as check_source,
)
from turnlog.ops.transfer import (
    copy_session as copy_session,
)
from turnlog.ops.transfer import (
    copy_sessions as copy_sessions,
)
from turnlog.ops.transfer import (
    write_events as write_events,
)
from turnlog.stores.base import (
    Store as Store,
)
