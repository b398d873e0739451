"""Which sessions a JSONL store's directory holds: its files, and its subagents' folders."""

from __future__ import annotations

import os
from typing import Final

from turnlog.errors import UsageError
from turnlog.stores.base import AGENTS_SUFFIX, MAX_AGENT_DEPTH, validate_session_id
from turnlog.stores.jsonl.oserrors import translate

#: A session file is `<session_id>.jsonl`.
SUFFIX: Final = ".jsonl"


def collect_sessions(directory: str, prefix: str, out: list[str], *, deep: bool) -> None:
    """Append to `out` the id of every `<stem>.jsonl` entry of `directory`
    (`prefix` + stem: a subagent's id names its parent), whatever the entry
    is, and, with `deep`, those under each `<stem>.agents/` folder."""
    try:
        names = os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as exc:
        raise translate(exc, "list", directory) from exc
    present = set(names)
    for name in names:
        if not name.endswith(SUFFIX):
            continue
        stem = name[: -len(SUFFIX)]
        try:
            session_id = validate_session_id(prefix + stem)
        except UsageError:
            continue
        out.append(session_id)
        # Only a session that spawned subagents has a folder to descend
        # into: a store of many sessions lists each folder once.
        folder = stem + AGENTS_SUFFIX
        if deep and folder in present and session_id.count("/") < MAX_AGENT_DEPTH:
            collect_sessions(
                os.path.join(directory, folder), session_id + AGENTS_SUFFIX + "/", out, deep=True
            )
