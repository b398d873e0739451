"""turnlog under LangGraph: a tool-call wrapper that writes ahead, and thread
recovery (see `turnlog.integrations.langgraph.wrapper`)."""

from turnlog.integrations.langgraph.wrapper import (
    TurnlogToolWrapper as TurnlogToolWrapper,
    recover_thread as recover_thread,
)
