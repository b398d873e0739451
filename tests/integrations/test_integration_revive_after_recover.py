"""Every handle's `revive=True` gives the answer `turnlog revive` gives: a session a
shell recovered (or a sweep) and nobody told is revived on open, once."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

import turnlog
from builders import crashed_session, put
from turnlog import events as ev
from turnlog.ops.revival import REVIVAL_BODY
from turnlog.stores import JSONLStore


def _recovered(store: Path) -> None:
    """A session killed mid-turn, then recovered from a shell: idle, not told."""
    put(JSONLStore(store), crashed_session("s"))
    turnlog.recover(store, "s")
    assert turnlog.inspect(store, "s").status == "idle"


def _open_plain(store: Path) -> None:
    with turnlog.open(store, "s", revive=True):
        pass


def _open_agents(store: Path) -> None:
    from turnlog.integrations.openai_agents import TurnlogSession

    async def main() -> None:
        async with TurnlogSession(store, "s", revive=True):
            pass

    asyncio.run(main())


def _open_pydantic(store: Path) -> None:
    from turnlog.integrations.pydantic_ai import TurnlogCapability

    async def main() -> None:
        async with TurnlogCapability(store / "s.jsonl", revive=True) as cap:
            cap.messages()

    asyncio.run(main())


HANDLES: dict[str, Callable[[Path], None]] = {
    "turnlog.open": _open_plain,
    "TurnlogSession": _open_agents,
    "TurnlogCapability": _open_pydantic,
}


def _revivals(store: Path) -> list[ev.Event]:
    return [e for e in JSONLStore(store).iter_events("s") if isinstance(e.data, ev.RunRevived)]


@pytest.mark.parametrize("handle", sorted(HANDLES))
def test_revive_on_open_after_a_shell_recovery_tells_the_model_as_the_cli_does(
    tmp_path: Path, handle: str
) -> None:
    by_handle, by_cli = tmp_path / "handle", tmp_path / "cli"
    _recovered(by_handle)
    shutil.copytree(by_handle, by_cli)

    HANDLES[handle](by_handle)
    told = turnlog.revive(by_cli, "s")
    assert told.revived and told.reason == "revived"

    assert len(_revivals(by_handle)) == len(_revivals(by_cli)) == 1
    with turnlog.open(by_handle, "s", create=False) as log:
        last = log.messages[-1]
    assert last.role == "user" and REVIVAL_BODY.format(revival=1) in ev.content_text(last.content)
    # Opened again, it is already told: nothing more is written.
    size = (by_handle / "s.jsonl").stat().st_size
    HANDLES[handle](by_handle)
    assert (by_handle / "s.jsonl").stat().st_size == size


@pytest.mark.parametrize("handle", sorted(HANDLES))
def test_revive_on_open_leaves_a_finished_session_as_it_is(tmp_path: Path, handle: str) -> None:
    with turnlog.open(tmp_path, "s") as log, log.turn():
        log.user("hi")
        with log.step():
            log.assistant("hello")
    size = (tmp_path / "s.jsonl").stat().st_size
    HANDLES[handle](tmp_path)
    assert (tmp_path / "s.jsonl").stat().st_size == size
    assert _revivals(tmp_path) == []
