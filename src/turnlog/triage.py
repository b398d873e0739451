"""The door of `turnlog.triage`, which lives in `turnlog.ops.inspection`: it only
re-exports the documented names, so code written for the old path keeps working."""

from turnlog.core.damage import (
    Problem as Problem,
)
from turnlog.core.damage import (
    TornTail as TornTail,
)
from turnlog.core.verdict import (
    OwedCall as OwedCall,
)
from turnlog.core.verdict import (
    Verdict as Verdict,
)
from turnlog.core.verdict import (
    decide as decide,
)
from turnlog.errors import (
    CorruptLogError as CorruptLogError,
)
from turnlog.errors import (
    NotASessionError as NotASessionError,
)
from turnlog.errors import (
    SessionNotFoundError as SessionNotFoundError,
)
from turnlog.errors import (
    TurnlogError as TurnlogError,
)
from turnlog.errors import (
    UnreadableRecordError as UnreadableRecordError,
)
from turnlog.errors import (
    UsageError as UsageError,
)
from turnlog.ops.inspection import (
    Inspection as Inspection,
)
from turnlog.ops.inspection import (
    InspectionReason as InspectionReason,
)
from turnlog.ops.inspection import (
    InspectionStatus as InspectionStatus,
)
from turnlog.ops.inspection import (
    OpenTurnRef as OpenTurnRef,
)
from turnlog.ops.inspection import (
    inspect as inspect,
)
from turnlog.ops.inspection import (
    status_of as status_of,
)
from turnlog.stores import (
    open_store as open_store,
)
from turnlog.stores import (
    stored_session as stored_session,
)
from turnlog.stores.base import (
    Holder as Holder,
)
from turnlog.stores.base import (
    Store as Store,
)
