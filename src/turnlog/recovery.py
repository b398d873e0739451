"""The door of `turnlog.recovery`, which lives in `turnlog.core.recovery` (its `plan`, which
checks itself against the providers, in `turnlog.ops.recover`): it only re-exports the
documented names, so code written for the old path keeps working."""

from turnlog.core.fold import (
    Fold as Fold,
)
from turnlog.core.recovery import (
    Plan as Plan,
)
from turnlog.core.recovery import (
    interrupted as interrupted,
)
from turnlog.core.recovery import (
    patch_dangling_tool_calls as patch_dangling_tool_calls,
)
from turnlog.core.recovery import (
    plan_verdict as plan_verdict,
)
from turnlog.core.recovery import (
    result_text as result_text,
)
from turnlog.core.recovery import (
    unwind_events as unwind_events,
)
from turnlog.core.recovery import (
    unwind_result as unwind_result,
)
from turnlog.core.state import (
    Message as Message,
)
from turnlog.core.verdict import (
    Verdict as Verdict,
)
from turnlog.core.verdict import (
    decide as decide,
)
from turnlog.events import (
    Event as Event,
)
from turnlog.events import (
    Origin as Origin,
)
from turnlog.events import (
    Risk as Risk,
)
from turnlog.events import (
    TurnEndReason as TurnEndReason,
)
from turnlog.ops.recover import (
    plan as plan,
)
