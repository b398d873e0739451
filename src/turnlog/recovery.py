"""The door of `turnlog.recovery`, which lives in `turnlog.core.recovery` (its `plan`, which
checks itself against the providers, in `turnlog.ops.recover`): it only re-exports the
documented names, so code written for the old path keeps working."""

from turnlog.core.fold import (
    Fold as Fold,
)
from turnlog.core.recovery import (
    Plan as Plan,
    interrupted as interrupted,
    patch_dangling_tool_calls as patch_dangling_tool_calls,
    plan_verdict as plan_verdict,
    result_text as result_text,
    unwind_events as unwind_events,
    unwind_result as unwind_result,
)
from turnlog.core.state import (
    Message as Message,
)
from turnlog.core.verdict import (
    Verdict as Verdict,
    decide as decide,
)
from turnlog.events import (
    Event as Event,
    Origin as Origin,
    Risk as Risk,
    TurnEndReason as TurnEndReason,
)
from turnlog.ops.recover import (
    plan as plan,
)
