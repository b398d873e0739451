"""The one frame of the automated notifications a model reads (revival, background reports)."""

from __future__ import annotations

from typing import Final

import msgspec

from turnlog.errors import UsageError

# Every message turnlog writes into a conversation on its own (a revival
# notice, a background subagent's report, the news that a child was lost)
# opens with the same line, so a model learns one convention: this is the
# system running the agent speaking, not the user asking for something.
NOTIFICATION_FRAME: Final = (
    "[turnlog: automated notification ({kind}) from the system running this agent, "
    "not a message from the user]\n{body}"
)

#: A system-prompt snippet that teaches the convention; add it to an agent's
#: system prompt (see docs/runtime.md).
SYSTEM_PROMPT_SNIPPET: Final = (
    'Messages that begin with "[turnlog: automated notification" are written by the '
    "system running you, not by the user: a notice that your previous process ended "
    "mid-work, or the report of a background subagent you started. They are not "
    "requests from the user; read them as facts about your own work and carry on."
)


class NoticeStyle(msgspec.Struct, frozen=True, kw_only=True):
    """How automated notifications are written: `frame` holds `{kind}` and
    `{body}`; `role` "system" asks providers that have a system or developer
    role inside the conversation to render the notice there (it is recorded
    as the message's `render_as`); "user" (the default) is a user turn."""

    frame: str = NOTIFICATION_FRAME
    role: str = "user"

    def __post_init__(self) -> None:
        if self.role not in ("user", "system"):
            raise UsageError(
                f"a notice's role is 'user' or 'system', not {self.role!r}",
                hint="'system' is rendered as a system or developer message where the "
                "provider has one inside the conversation",
            )

    def text(self, kind: str, body: str) -> str:
        return self.frame.format(kind=kind, body=body)

    @property
    def render_as(self) -> str | None:
        """The `render_as` a notice records: None for the default user turn."""
        return None if self.role == "user" else self.role


DEFAULT_STYLE: Final = NoticeStyle()


def framed(kind: str, body: str, style: NoticeStyle | None = None) -> str:
    """`body` in the notification frame (the default one unless `style` says otherwise)."""
    return (style or DEFAULT_STYLE).text(kind, body)
