"""The door of `turnlog.damage`, which lives in `turnlog.core.damage`: it only
re-exports the documented names, so code written for the old path keeps working."""

from turnlog.core.damage import (
    Problem as Problem,
)
from turnlog.core.damage import (
    Scan as Scan,
)
from turnlog.core.damage import (
    TornTail as TornTail,
)
from turnlog.events import (
    Event as Event,
)
