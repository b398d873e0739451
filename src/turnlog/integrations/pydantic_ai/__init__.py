"""turnlog under Pydantic AI: a capability that writes ahead of every tool (see
`turnlog.integrations.pydantic_ai.capability`); under Temporal, see
`turnlog.integrations.pydantic_ai.temporal`."""

from turnlog.integrations.pydantic_ai.capability import (
    TurnlogCapability as TurnlogCapability,
    to_model_messages as to_model_messages,
)
