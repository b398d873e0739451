"""The door of `turnlog.revival`, which lives in `turnlog.ops.revival`: it only
re-exports the documented names, so code written for the old path keeps working."""

from turnlog.core.notices import (
    NoticeStyle as NoticeStyle,
    framed as framed,
)
from turnlog.core.recovery import (
    Plan as Plan,
)
from turnlog.core.state import (
    Message as Message,
)
from turnlog.core.verdict import (
    Wait as Wait,
)
from turnlog.errors import (
    CorruptLogError as CorruptLogError,
    FormatError as FormatError,
    SessionHeldHereError as SessionHeldHereError,
    SessionLockedError as SessionLockedError,
    SessionNotFoundError as SessionNotFoundError,
    StoreIOError as StoreIOError,
    TurnlogError as TurnlogError,
    UnreadableRecordError as UnreadableRecordError,
    UsageError as UsageError,
)
from turnlog.events import (
    Origin as Origin,
)
from turnlog.handle.log import (
    Log as Log,
)
from turnlog.ops.revival import (
    REVIVAL_BODY as REVIVAL_BODY,
    REVIVAL_NOTICE as REVIVAL_NOTICE,
    Revival as Revival,
    RevivalReason as RevivalReason,
    revive as revive,
)
from turnlog.stores.base import (
    Store as Store,
)
