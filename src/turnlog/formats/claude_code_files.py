"""The files of one Claude Code session: its subagents' own files, and the main file of each."""

from __future__ import annotations

import glob
import os
from typing import Any

from turnlog.formats.foreign import ForeignFileError, open_regular


def agent_files(path: str, session_id: str, counted: dict[str, int]) -> list[str]:
    """The subagents' own files of the session whose main file is `path` (it
    need not exist): 2.0 `agent-<id>.jsonl` beside it naming the session,
    2.1 `<session>/subagents/`. Regular files only: a FIFO or a link to a
    device is counted, never read."""
    folder = os.path.dirname(os.path.abspath(path))
    candidates = sorted(
        glob.glob(
            os.path.join(glob.escape(folder), glob.escape(session_id), "subagents", "*.jsonl")
        )
    )
    found: list[str] = []
    for candidate in candidates:
        if _regular(candidate, counted):
            found.append(candidate)
    for candidate in sorted(glob.glob(os.path.join(glob.escape(folder), "agent-*.jsonl"))):
        if os.path.abspath(candidate) == os.path.abspath(path):
            continue
        head = _head(candidate, counted)
        if head is not None and f'"sessionId":"{session_id}"'.encode() in head.replace(b" ", b""):
            found.append(candidate)
    return found


def main_file_of(agent_path: str, session_id: str) -> str:
    """Where the main file of the session `session_id` is, for a subagent's own
    file of it: beside it (2.0), or beside the `<session>/subagents/` folder
    holding it (2.1). The file may not exist."""
    folder = os.path.dirname(os.path.abspath(agent_path))
    if os.path.basename(folder) == "subagents" and (
        os.path.basename(os.path.dirname(folder)) == session_id
    ):
        folder = os.path.dirname(os.path.dirname(folder))
    return os.path.join(folder, f"{session_id}.jsonl")


def _regular(path: str, counted: dict[str, int]) -> bool:
    try:
        os.close(open_regular(path))
    except (OSError, ForeignFileError):
        key = "subagent file not read (not a regular file, or unreadable)"
        counted[key] = counted.get(key, 0) + 1
        return False
    return True


def _head(path: str, counted: dict[str, int]) -> bytes | None:
    try:
        fd = open_regular(path)
    except (OSError, ForeignFileError):
        key = "subagent file not read (not a regular file, or unreadable)"
        counted[key] = counted.get(key, 0) + 1
        return None
    try:
        return os.read(fd, 4096)
    finally:
        os.close(fd)


def agent_of(lines: list[dict[str, Any]], path: str) -> str | None:
    """The agent id of a subagent's own file (every line on a side chain), or None."""
    linked = [r for r in lines if r.get("uuid")]
    if not linked or not all(r.get("isSidechain") is True for r in linked):
        return None
    found = next((r["agentId"] for r in linked if isinstance(r.get("agentId"), str)), None)
    if found is None:
        name = os.path.basename(path).removesuffix(".jsonl")
        found = name.removeprefix("agent-") if name.startswith("agent-") else None
    return found
