"""Model clients for the reference loop: official SDK clients as the loop's model."""

from __future__ import annotations

from turnlog.models.anthropic import AnthropicModel
from turnlog.models.openai import OpenAIChatModel, OpenAIResponsesModel
from turnlog.models.request_check import RequestCheckError, check_request

__all__ = [
    "AnthropicModel",
    "OpenAIChatModel",
    "OpenAIResponsesModel",
    "RequestCheckError",
    "check_request",
]
