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
)
from turnlog.core.state import (
    SessionState as SessionState,
)
from turnlog.core.verdict import (
    Verdict as Verdict,
)
from turnlog.core.verdict import (
    decide as decide,
)
from turnlog.errors import (
    TurnlogError as TurnlogError,
)
from turnlog.errors import (
    UsageError as UsageError,
)
from turnlog.events import (
    Event as Event,
)
from turnlog.events import (
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
