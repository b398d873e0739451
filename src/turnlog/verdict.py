"""The door of `turnlog.verdict`, which lives in `turnlog.core.verdict`: it only
re-exports the documented names, so code written for the old path keeps working."""

from turnlog.core.fold import (
    Fold as Fold,
)
from turnlog.core.verdict import (
    REASONING_PARTS as REASONING_PARTS,
    OwedCall as OwedCall,
    Verdict as Verdict,
    Wait as Wait,
    classify as classify,
    decide as decide,
    is_finished as is_finished,
    only_reasoning as only_reasoning,
    owed_calls as owed_calls,
    verdict as verdict,
    waits_of as waits_of,
)
from turnlog.events import (
    Event as Event,
    Risk as Risk,
)
