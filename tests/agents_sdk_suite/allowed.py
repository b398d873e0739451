"""The deliberate differences between TurnlogSession and the SDK's own sessions
that the SDK's tests see: each case allowed to fail, with its reason.

A failure is allowed by its reason (the error it fails with), never by name:
a case failing for any other reason fails turnlog's suite. docs/integrations.md
lists the same reasons.
"""

from __future__ import annotations

# A history that begins with the assistant speaking (its reply or a call
# before any user message with text) is refused at write: Anthropic's and
# Gemini's APIs reject such a transcript, and turnlog refuses at write what it
# could not recover to a transcript every provider accepts. The SDK's tests
# seed sessions that way to test its own history handling.
ASSISTANT_FIRST = "an assistant message before any user message"
# The tests read attributes of the SDK's test double (`saved_items`) or of
# SQLiteSession's private storage (`_insert_items`), not the Session protocol.
PRIVATE = "object has no attribute"

REASONS = {
    ASSISTANT_FIRST: "a history that starts with the assistant is refused at write",
    PRIVATE: "the test reads a private attribute of the SDK's own session class",
}


def allowed(message: str) -> str | None:
    """The reason a failure with this message is a deliberate difference."""
    return next((key for key in REASONS if key in message), None)
