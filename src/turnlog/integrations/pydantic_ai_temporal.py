"""The door to `turnlog.integrations.pydantic_ai.temporal`, at the path the docs first gave."""

from turnlog.integrations.pydantic_ai.temporal import (
    ACTIVITIES as ACTIVITIES,
    TurnlogTemporalCapability as TurnlogTemporalCapability,
)
