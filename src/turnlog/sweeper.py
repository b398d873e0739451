"""The door of `turnlog.sweeper`, which lives in `turnlog.ops.sweep`: it only
re-exports the documented names, so code written for the old path keeps working."""

from turnlog.errors import (
    SessionLockedError as SessionLockedError,
    TurnlogError as TurnlogError,
    UsageError as UsageError,
)
from turnlog.ops.inspection import (
    inspect as inspect,
)
from turnlog.ops.sweep import (
    SweepAction as SweepAction,
    Swept as Swept,
    sweep as sweep,
)
from turnlog.stores.base import (
    Store as Store,
)
