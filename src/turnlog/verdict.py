"""The door of `turnlog.verdict`, which lives in `turnlog.core.verdict`: it only
re-exports the documented names, so code written for the old path keeps working."""

from turnlog.core.fold import (
    Fold as Fold,
)
from turnlog.core.verdict import (
    REASONING_PARTS as REASONING_PARTS,
)
from turnlog.core.verdict import (
    OwedCall as OwedCall,
)
from turnlog.core.verdict import (
    Verdict as Verdict,
)
from turnlog.core.verdict import (
    Wait as Wait,
)
from turnlog.core.verdict import (
    classify as classify,
)
from turnlog.core.verdict import (
    decide as decide,
)
from turnlog.core.verdict import (
    is_finished as is_finished,
)
from turnlog.core.verdict import (
    only_reasoning as only_reasoning,
)
from turnlog.core.verdict import (
    owed_calls as owed_calls,
)
from turnlog.core.verdict import (
    verdict as verdict,
)
from turnlog.core.verdict import (
    waits_of as waits_of,
)
from turnlog.events import (
    Event as Event,
)
from turnlog.events import (
    Risk as Risk,
)
