"""The door of `turnlog.fold`, which lives in `turnlog.core.fold`: it only
re-exports the documented names, so code written for the old path keeps working."""

from turnlog.core.fold import (
    Fold as Fold,
    fold as fold,
)
from turnlog.core.state import (
    Message as Message,
    SessionState as SessionState,
)
from turnlog.core.transcript import (
    compacted as compacted,
)
from turnlog.events import (
    Event as Event,
    Origin as Origin,
)
