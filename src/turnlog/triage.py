"""The door of `turnlog.triage`, which lives in `turnlog.ops.inspection`: it only
re-exports the documented names, so code written for the old path keeps working."""

from turnlog.core.damage import (
    Problem as Problem,
    TornTail as TornTail,
)
from turnlog.core.verdict import (
    OwedCall as OwedCall,
    Verdict as Verdict,
    decide as decide,
)
from turnlog.errors import (
    CorruptLogError as CorruptLogError,
    NotASessionError as NotASessionError,
    SessionNotFoundError as SessionNotFoundError,
    TurnlogError as TurnlogError,
    UnreadableRecordError as UnreadableRecordError,
    UsageError as UsageError,
)
from turnlog.ops.inspection import (
    Inspection as Inspection,
    InspectionReason as InspectionReason,
    InspectionStatus as InspectionStatus,
    OpenTurnRef as OpenTurnRef,
    inspect as inspect,
    status_of as status_of,
)
from turnlog.stores import (
    open_store as open_store,
    stored_session as stored_session,
)
from turnlog.stores.base import (
    Holder as Holder,
    Store as Store,
)
