"""The terminal console: text from a session is shown, never obeyed."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment

from turnlog.cli.visible import CONTROLS, visible


class SafeConsole(Console):
    """A rich `Console` whose text segments carry no control characters:
    the styling is turnlog's, the words may be anyone's."""

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control is None and CONTROLS.search(segment.text):
                yield Segment(visible(segment.text), segment.style)
            else:
                yield segment
