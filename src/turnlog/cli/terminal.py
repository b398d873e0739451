"""The terminal console: text from a session is shown, never obeyed."""

from __future__ import annotations

import re
from collections.abc import Iterable

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment

# C0 controls but tab and newline, DEL, and C1 controls: what a terminal
# acts on (ESC starts a sequence that sets the title or clears the screen).
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _visible(found: re.Match[str]) -> str:
    code = ord(found.group())
    if code < 0x20:
        return chr(0x2400 + code)  # its Control Picture: ESC shows as ␛
    return "\u2421" if code == 0x7F else "\ufffd"


def visible(text: str) -> str:
    """`text` with every control character a terminal acts on made visible,
    one character for one (so styled spans keep their places)."""
    return _CONTROLS.sub(_visible, text)


class SafeConsole(Console):
    """A rich `Console` whose text segments carry no control characters:
    the styling is turnlog's, the words may be anyone's."""

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control is None and _CONTROLS.search(segment.text):
                yield Segment(visible(segment.text), segment.style)
            else:
                yield segment
