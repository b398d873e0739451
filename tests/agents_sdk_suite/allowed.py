"""The deliberate differences between TurnlogSession and the SDK's own sessions
that the SDK's tests see: each case allowed to fail, with its reason.

A failure is allowed by its reason (the error it fails with), never by name:
a case failing for any other reason fails turnlog's suite. docs/integrations.md
lists the same reasons.
"""

from __future__ import annotations

# A run with the hooks whose whole history holds no user message with text
# (the SDK's tests hand a run only a pending shell call): the hooks write each
# reply and call ahead of the tool, as a transcript message, and no provider
# takes a transcript the assistant opens, so the write is refused. (Saved
# items the assistant opens are kept as saved, and out of the transcript,
# with or without the hooks.)
ASSISTANT_FIRST = "an assistant message before any user message"
# The tests read attributes of the SDK's test double (`saved_items`) or of
# SQLiteSession's private storage (`_insert_items`), not the Session protocol.
PRIVATE = "object has no attribute"

REASONS = {
    ASSISTANT_FIRST: "with the hooks, a run that no user message opens is refused",
    PRIVATE: "the test reads a private attribute of the SDK's own session class",
}


def allowed(message: str) -> str | None:
    """The reason a failure with this message is a deliberate difference."""
    return next((key for key in REASONS if key in message), None)
