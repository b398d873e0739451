"""The door of `turnlog.fork`, which lives in `turnlog.ops.fork`: it only
re-exports the documented names, so code written for the old path keeps working."""

from turnlog.core.fold import (
    Fold as Fold,
)
from turnlog.errors import (
    ForkBoundaryError as ForkBoundaryError,
    FormatError as FormatError,
)
from turnlog.events import (
    Event as Event,
)
from turnlog.ops.fork import (
    fork as fork,
    fork_session as fork_session,
)
from turnlog.stores.base import (
    Store as Store,
)
