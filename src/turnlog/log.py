"""The door of `turnlog.log`, which lives in `turnlog.handle.log` (its `open` in
`turnlog.ops.open`): it only re-exports the documented names, so code written for the
old path keeps working."""

from turnlog.core.damage import (
    TornTail as TornTail,
)
from turnlog.core.fold import (
    Fold as Fold,
)
from turnlog.core.recovery import (
    Plan as Plan,
)
from turnlog.core.state import (
    Message as Message,
    SessionState as SessionState,
)
from turnlog.core.verdict import (
    Verdict as Verdict,
    decide as decide,
)
from turnlog.errors import (
    TurnlogError as TurnlogError,
    UsageError as UsageError,
)
from turnlog.events import (
    Event as Event,
    ToolCall as ToolCall,
)
from turnlog.handle.dispatch import (
    Dispatch as Dispatch,
)
from turnlog.handle.log import (
    Log as Log,
)
from turnlog.ops.open import (
    open as open,
)
from turnlog.stores.base import (
    Store as Store,
)
