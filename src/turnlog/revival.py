"""The door of `turnlog.revival`, which lives in `turnlog.ops.revival`: it only
re-exports the documented names, so code written for the old path keeps working."""

from turnlog.core.notices import (
    NoticeStyle as NoticeStyle,
)
from turnlog.core.notices import (
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
)
from turnlog.errors import (
    FormatError as FormatError,
)
from turnlog.errors import (
    SessionHeldHereError as SessionHeldHereError,
)
from turnlog.errors import (
    SessionLockedError as SessionLockedError,
)
from turnlog.errors import (
    SessionNotFoundError as SessionNotFoundError,
)
from turnlog.errors import (
    StoreIOError as StoreIOError,
)
from turnlog.errors import (
    TurnlogError as TurnlogError,
)
from turnlog.errors import (
    UnreadableRecordError as UnreadableRecordError,
)
from turnlog.errors import (
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
)
from turnlog.ops.revival import (
    REVIVAL_NOTICE as REVIVAL_NOTICE,
)
from turnlog.ops.revival import (
    Revival as Revival,
)
from turnlog.ops.revival import (
    RevivalReason as RevivalReason,
)
from turnlog.ops.revival import (
    revive as revive,
)
from turnlog.stores.base import (
    Store as Store,
)
