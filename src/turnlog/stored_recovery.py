"""The door of `turnlog.stored_recovery`, which lives in `turnlog.ops.recover`: it only
re-exports the documented names, so code written for the old path keeps working."""

from turnlog.core.damage import (
    TornTail as TornTail,
)
from turnlog.core.recovery import (
    Plan as Plan,
)
from turnlog.errors import (
    SessionLockedError as SessionLockedError,
    UnfinishedSessionError as UnfinishedSessionError,
)
from turnlog.ops.recover import (
    Recovery as Recovery,
    plan_stored as plan_stored,
    recover as recover,
)
from turnlog.stores.base import (
    Store as Store,
)
