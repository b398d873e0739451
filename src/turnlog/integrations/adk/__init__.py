"""turnlog under Google's Agent Development Kit: a session service and a plugin that
write ahead (see `turnlog.integrations.adk.service`)."""

from turnlog.integrations.adk.plugin import TurnlogPlugin as TurnlogPlugin
from turnlog.integrations.adk.service import TurnlogSessionService as TurnlogSessionService
from turnlog.integrations.adk.state import (
    AdkSessionExistsError as AdkSessionExistsError,
    AdkSessionNotFoundError as AdkSessionNotFoundError,
    scoped_session_id as scoped_session_id,
)
