"""Text as a terminal may be handed it: control characters shown, never obeyed."""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, and C1 controls: what a terminal
# acts on (ESC starts a sequence that sets the title or clears the screen).
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _picture(found: re.Match[str]) -> str:
    code = ord(found.group())
    if code < 0x20:
        return chr(0x2400 + code)  # its Control Picture: ESC shows as ␛
    return "\u2421" if code == 0x7F else "\ufffd"


def visible(text: str) -> str:
    """`text` with every control character a terminal acts on made visible,
    one character for one (so styled spans keep their places)."""
    return CONTROLS.sub(_picture, text)
