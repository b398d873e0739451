"""A pytest plugin that runs the Agents SDK's own tests with TurnlogSession in the
place of the SDK's sessions.

Loaded into a pytest run inside the SDK's unpacked release package (see
`suite.py`): each test module's `SQLiteSession` and `SimpleListSession` (the
SDK's store and its tests' list-backed one) become factories of
`TurnlogSession` on a fresh store under the test's temporary directory, and,
with `TURNLOG_SDK_SUITE_HOOKS=1`, every `Runner` run on such a session gets
`hooks=session.hooks` as the docs ask. Which tests made a session is written
to `TURNLOG_SDK_SUITE_REPORT`, so the suite counts the cases that ran on
turnlog, not every case of the files.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from agents import Runner

from turnlog.integrations.openai_agents import TurnlogSession

STORE = os.environ.get("TURNLOG_SDK_SUITE_STORE", "jsonl")
HOOKS = os.environ.get("TURNLOG_SDK_SUITE_HOOKS") == "1"
REPORT = os.environ.get("TURNLOG_SDK_SUITE_REPORT")

_current: dict[str, Any] = {"root": None, "test": None, "count": 0}
_used: set[str] = set()
_BAD = re.compile(r"[^A-Za-z0-9_-]")


def _root() -> Path:
    root = _current["root"]
    if root is None:
        root = Path(tempfile.mkdtemp(prefix="turnlog-sdk-suite-"))
        _current["root"] = root
    return Path(root)


def _place(db_path: object) -> Path:
    """One turnlog store per SDK database: the same file path is the same
    store (two SQLiteSession objects on one file share its sessions), and
    each in-memory database is a store of its own."""
    if db_path in (None, ":memory:"):
        _current["count"] += 1
        return _root() / f"memory-{_current['count']}"
    return Path(f"{os.fspath(db_path)}.turnlog")  # type: ignore[arg-type]


def _session_id(raw: object) -> str:
    text = str(raw) if raw is not None else "test"
    clean = _BAD.sub("-", text).strip("-") or "test"
    return clean[:100]


def _target(place: Path) -> Any:
    if _current["test"] is not None:
        _used.add(_current["test"])
    if STORE == "sqlite":
        from turnlog.stores import SQLiteStore

        return SQLiteStore(str(place) + ".db")
    return place


class ShimSQLiteSession(TurnlogSession):
    """`SQLiteSession(session_id, db_path=":memory:", session_settings=None)`."""

    def __init__(
        self,
        session_id: str,
        db_path: object = ":memory:",
        session_settings: Any = None,
        **_: Any,
    ) -> None:
        super().__init__(
            _target(_place(db_path)),
            _session_id(session_id),
            session_settings=session_settings,
        )


class ShimListSession(TurnlogSession):
    """`SimpleListSession(session_id="test", history=None)`: the history is
    recorded through `add_items` before the first call that reads or writes."""

    def __init__(self, session_id: str = "test", history: list[Any] | None = None) -> None:
        super().__init__(_target(_place(None)), _session_id(session_id))
        self._seed = list(history or [])

    async def _seeded(self) -> None:
        if self._seed:
            seed, self._seed = self._seed, []
            await TurnlogSession.add_items(self, seed)

    async def get_items(self, limit: int | None = None) -> list[Any]:
        await self._seeded()
        return await super().get_items(limit)

    async def add_items(self, items: list[Any]) -> None:
        await self._seeded()
        await super().add_items(items)

    async def pop_item(self) -> Any | None:
        await self._seeded()
        return await super().pop_item()

    async def clear_session(self) -> None:
        self._seed = []
        await super().clear_session()


def _with_hooks(kwargs: dict[str, Any]) -> dict[str, Any]:
    session = kwargs.get("session")
    if HOOKS and isinstance(session, TurnlogSession):
        given = kwargs.get("hooks")
        kwargs["hooks"] = session.hooks if given is None else session.hooks_with(given)
    return kwargs


def _patch_runner() -> None:
    run, run_sync, run_streamed = Runner.run, Runner.run_sync, Runner.run_streamed

    async def hooked_run(*args: Any, **kwargs: Any) -> Any:
        return await run(*args, **_with_hooks(kwargs))

    def hooked_run_sync(*args: Any, **kwargs: Any) -> Any:
        return run_sync(*args, **_with_hooks(kwargs))

    def hooked_run_streamed(*args: Any, **kwargs: Any) -> Any:
        return run_streamed(*args, **_with_hooks(kwargs))

    Runner.run = staticmethod(hooked_run)  # type: ignore[method-assign]
    Runner.run_sync = staticmethod(hooked_run_sync)  # type: ignore[method-assign]
    Runner.run_streamed = staticmethod(hooked_run_streamed)  # type: ignore[method-assign]


_NAMES = {"SQLiteSession": ShimSQLiteSession, "SimpleListSession": ShimListSession}


def _recording(original: type) -> type:
    """The SDK's own session class, noting which tests build one."""

    class Recorded(original):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            if _current["test"] is not None:
                _used.add(_current["test"])
            super().__init__(*args, **kwargs)

    Recorded.__name__ = original.__name__
    return Recorded


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    only = os.environ.get("TURNLOG_SDK_SUITE_ONLY")
    if only:
        wanted = set(json.loads(Path(only).read_text()))
        kept = [item for item in items if item.nodeid in wanted]
        config.hook.pytest_deselected(items=[item for item in items if item.nodeid not in wanted])
        items[:] = kept
    # With STORE "sdk" the SDK's sessions stay, recorded: the run that
    # selects the cases. Every loaded module of the SDK's tests, helpers included (the deferred
    # writes' helpers build sessions too), sees the shims under the names it
    # imported. Subclasses defined before this (CountingSession) keep theirs.
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "tests" or name.startswith("tests.")):
            continue
        for shimmed, shim in _NAMES.items():
            original = vars(module).get(shimmed)
            if not isinstance(original, type):
                continue
            if STORE != "sdk":
                setattr(module, shimmed, shim)
            elif original.__name__ == shimmed and "Recorded" not in original.__qualname__:
                setattr(module, shimmed, _recording(original))


def pytest_configure(config: pytest.Config) -> None:
    if HOOKS:
        _patch_runner()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    _current["test"] = item.nodeid
    yield
    _current["test"] = None


@pytest.fixture(autouse=True)
def _turnlog_root(tmp_path: Path) -> Any:
    _current["root"] = tmp_path / "turnlog"
    _current["root"].mkdir()
    yield
    _current["root"] = None


def pytest_sessionfinish(session: pytest.Session) -> None:
    if REPORT:
        Path(REPORT).write_text(json.dumps(sorted(_used)))
