"""Provider-valid transcripts: one module per provider, each with `render` and `validate`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, Final

from turnlog.core.fold import Message
from turnlog.errors import UsageError
from turnlog.providers import anthropic, gemini, openai_chat, openai_responses
from turnlog.providers.common import Violation, unique_call_ids

PROVIDERS: Final[dict[str, ModuleType]] = {
    module.NAME: module for module in (anthropic, openai_chat, openai_responses, gemini)
}

__all__ = ["PROVIDERS", "Violation", "render", "validate"]


def _module(provider: str) -> ModuleType:
    try:
        return PROVIDERS[provider]
    except KeyError:
        raise UsageError(
            f"unknown provider {provider!r}",
            hint=f"use one of: {', '.join(PROVIDERS)}",
        ) from None


def render(provider: str, messages: Sequence[Message]) -> dict[str, Any]:
    """The request body fields that carry the conversation, for `provider`.

    Call ids a log reuses are made unique first (see `unique_call_ids`).
    """
    renderer: Callable[[Sequence[Message]], dict[str, Any]] = _module(provider).render
    return renderer(unique_call_ids(messages))


def validate(provider: str, payload: dict[str, Any]) -> list[Violation]:
    """Every pairing rule of `provider` the payload breaks, with its index."""
    validator: Callable[[dict[str, Any]], list[Violation]] = _module(provider).validate
    return validator(payload)
