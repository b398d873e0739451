"""`TurnlogSession` takes `session_settings` and honours its `limit` as the SDK's
own `SQLiteSession` does, side by side on the same items."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import SQLiteSession
from agents.memory import SessionSettings

from turnlog.integrations.openai_agents import TurnlogSession

ITEMS: list[Any] = [
    {"role": "user", "content": "first"},
    {"role": "user", "content": "second"},
    {"role": "user", "content": "third"},
]


def texts(items: list[Any]) -> list[str]:
    out = []
    for item in items:
        content = item["content"]
        out.append(content if isinstance(content, str) else content[0]["text"])
    return out


@pytest.mark.parametrize(
    ("settings", "limit", "expected"),
    [
        (None, None, ["first", "second", "third"]),
        (None, 0, []),
        (None, 2, ["second", "third"]),
        (SessionSettings(limit=1), None, ["third"]),
        ({"limit": 2}, None, ["second", "third"]),
        (SessionSettings(limit=1), 3, ["first", "second", "third"]),
        (SessionSettings(limit=0), None, []),
    ],
)
def test_limits_read_as_the_sdks_own_session_reads_them(
    tmp_path: Path, settings: Any, limit: int | None, expected: list[str]
) -> None:
    async def main() -> tuple[list[Any], list[Any], Any]:
        peer = SQLiteSession("s", str(tmp_path / "peer.db"), session_settings=settings)
        await peer.add_items(ITEMS)
        async with TurnlogSession(tmp_path, "s", session_settings=settings) as ours:
            await ours.add_items(ITEMS)
            return await peer.get_items(limit), await ours.get_items(limit), ours.session_settings

    theirs, ours, kept = asyncio.run(main())
    assert texts(theirs) == expected
    assert texts(ours) == expected
    assert isinstance(kept, SessionSettings)


def test_the_default_settings_are_the_sdks_default(tmp_path: Path) -> None:
    async def main() -> Any:
        async with TurnlogSession(tmp_path, "d") as session:
            return session.session_settings

    assert asyncio.run(main()) == SessionSettings()


def test_close_is_awaitable_and_also_done_when_called_plainly(tmp_path: Path) -> None:
    """`SQLiteSession.close()` is a plain call; TurnlogSession's close works both
    ways (and `asyncio.run(session.close())`), with no warning of a coroutine
    never awaited, and releases the session for the next handle."""
    import warnings

    from turnlog.integrations.openai_agents import TurnlogSession

    async def main() -> None:
        plain = TurnlogSession(tmp_path, "s")
        await plain.add_items([{"role": "user", "content": "hi"}])
        plain.close()
        awaited = TurnlogSession(tmp_path, "s")
        assert await awaited.get_items() == [{"role": "user", "content": "hi"}]
        await awaited.close()

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        asyncio.run(main())
        asyncio.run(TurnlogSession(tmp_path, "s").close())
