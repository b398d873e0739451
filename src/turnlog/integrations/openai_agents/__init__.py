"""turnlog under the OpenAI Agents SDK: a `Session` and `RunHooks` that write ahead
(see `turnlog.integrations.openai_agents.session`)."""

from turnlog.integrations.openai_agents.session import (
    TurnlogHooks as TurnlogHooks,
    TurnlogSession as TurnlogSession,
)
