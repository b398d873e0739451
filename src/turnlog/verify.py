"""The door of `turnlog.verify`, which lives in `turnlog.ops.verify`: it only
re-exports the documented names, so code written for the old path keeps working."""

from turnlog.core.damage import (
    Problem as Problem,
)
from turnlog.core.fold import (
    Fold as Fold,
)
from turnlog.errors import (
    TurnlogError as TurnlogError,
    UsageError as UsageError,
)
from turnlog.events import (
    Event as Event,
)
from turnlog.ops.verify import (
    EventChecker as EventChecker,
    Report as Report,
    verify_session as verify_session,
    verify_store as verify_store,
)
from turnlog.stores import (
    open_store as open_store,
)
from turnlog.stores.base import (
    Store as Store,
)
