"""The door of `turnlog.notices`, which lives in `turnlog.core.notices`: it only
re-exports the documented names, so code written for the old path keeps working."""

from turnlog.core.notices import (
    DEFAULT_STYLE as DEFAULT_STYLE,
    NOTIFICATION_FRAME as NOTIFICATION_FRAME,
    SYSTEM_PROMPT_SNIPPET as SYSTEM_PROMPT_SNIPPET,
    NoticeStyle as NoticeStyle,
    framed as framed,
)
from turnlog.errors import (
    UsageError as UsageError,
)
