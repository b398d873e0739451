"""The door of `turnlog.write_order`, which lives in `turnlog.core.write_order`: it only
re-exports the documented names, so code written for the old path keeps working."""

from turnlog.core.fold import (
    Fold as Fold,
)
from turnlog.core.write_order import (
    CHECKED_TYPES as CHECKED_TYPES,
    ORDER_RULES as ORDER_RULES,
    order_error as order_error,
)
from turnlog.errors import (
    UsageError as UsageError,
    WriteOrderError as WriteOrderError,
)
from turnlog.events import (
    Origin as Origin,
    TurnEndReason as TurnEndReason,
)
