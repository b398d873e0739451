"""A standalone bench's own section of docs/benchmarks.md, written in place and nothing else touched."""

from __future__ import annotations

from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
# Every section a standalone bench writes starts with a mark of its own.
NEXT_MARK = "<!-- "


def write_section(mark: str, section: str, doc: Path = DOC) -> None:
    """Replace the section that starts at `mark` (up to the next mark) with
    `section`, which starts with `mark`; append it when the page has none."""
    text = doc.read_text()
    start = text.find(mark)
    if start == -1:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    else:
        end = text.find(NEXT_MARK, start + len(mark))
        rest = text[end:] if end != -1 else ""
        text = text[:start] + section + "\n" + ("\n" + rest if rest else "")
    doc.write_text(text)
