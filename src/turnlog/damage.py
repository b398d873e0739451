"""The door of `turnlog.damage`, which lives in `turnlog.core.damage`: it only
re-exports the documented names, so code written for the old path keeps working."""

from turnlog.core.damage import (
    Problem as Problem,
    Scan as Scan,
    TornTail as TornTail,
)
from turnlog.events import (
    Event as Event,
)
