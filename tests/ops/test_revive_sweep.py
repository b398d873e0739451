"""Sweepers racing to revive: real processes on every store, each crash revived once."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import turnlog
from builders import crashed_session, put
from conftest import make_store
from turnlog import events as ev
from turnlog.core.fold import fold
from turnlog.ops.sweep import sweep
from turnlog.providers import PROVIDERS, render, validate
from turnlog.stores import SQLiteStore, Store
from turnlog.stores.jsonl import JSONLStore

SWEEPERS = 4
# What a sweeper says of a session another sweeper got to first.
LOST_RACE = (
    "running",
    "locked: ",
    "already recovered by another sweeper",
    "already revived by another sweeper",
)


def store_url(store: Store) -> str:
    if isinstance(store, JSONLStore):
        return f"jsonl:{store.url}"
    return store.url


def revivals_and_notices(store: Store, session_id: str) -> tuple[int, int]:
    events = store.read(session_id)
    revived = sum(1 for e in events if isinstance(e.data, ev.RunRevived))
    notices = sum(
        1 for e in events if isinstance(e.data, ev.UserMessage) and e.data.injected == "revival"
    )
    return revived, notices


def assert_exports_valid(store: Store, session_id: str) -> None:
    messages = fold(store.read(session_id)).messages
    for provider in PROVIDERS:
        assert validate(provider, render(provider, messages)) == [], (session_id, provider)


def run_sweepers(url: str) -> list[list[dict[str, object]]]:
    """Start every sweeper before waiting on any: they race for the same sessions."""
    sweepers = [
        subprocess.Popen(
            [sys.executable, "-m", "turnlog", "sweep", url, "--revive", "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        for _ in range(SWEEPERS)
    ]
    reports = []
    for sweeper in sweepers:
        out, err = sweeper.communicate(timeout=300)
        assert sweeper.returncode == 0, err
        assert "Traceback" not in err, err
        reports.append(json.loads(out)["sessions"])
    return reports


@pytest.mark.parametrize(("kind", "sessions"), [("jsonl", 40), ("sqlite", 40), ("postgres", 30)])
def test_racing_sweepers_revive_each_crashed_session_once(
    tmp_path: Path, request: pytest.FixtureRequest, kind: str, sessions: int
) -> None:
    store = make_store(kind, tmp_path, request)
    if isinstance(store, SQLiteStore | JSONLStore):
        store.init()
    ids = [f"s{i:02d}" for i in range(sessions)]
    for session_id in ids:
        put(store, crashed_session(session_id))
    url = store_url(store)

    reports = run_sweepers(url)
    revived = [
        item["session_id"] for report in reports for item in report if item["action"] == "revived"
    ]
    counts = {session_id: revivals_and_notices(store, session_id) for session_id in ids}
    twice = {session_id: n for session_id, n in counts.items() if n != (1, 1)}
    assert twice == {}, f"{len(twice)} of {sessions} sessions revived other than once: {twice}"
    assert sorted(revived) == ids
    # The sweepers that lost a race say why they skipped: none of it is an error.
    skipped: Counter[str] = Counter()
    for report in reports:
        for item in report:
            assert item["action"] in ("revived", "skipped"), item
            if item["action"] == "skipped":
                reason = str(item["reason"])
                assert reason.startswith(LOST_RACE), item
                skipped[reason.split(" (")[0].split(":")[0]] += 1
    print(f"{kind}: {sessions} sessions, {SWEEPERS} sweepers, skips {dict(skipped)}")
    for session_id in ids:
        found = turnlog.inspect(store, session_id)
        assert (found.status, found.revivals) == ("idle", 1)
        assert_exports_valid(store, session_id)

    # Run them all again: every session is already revived and not yet run on.
    again = run_sweepers(url)
    assert [item for report in again for item in report if item["action"] != "skipped"] == []
    assert {session_id: revivals_and_notices(store, session_id) for session_id in ids} == {
        session_id: (1, 1) for session_id in ids
    }


@pytest.mark.parametrize("older_than_s", [math.nan, math.inf, -1.0])
def test_sweep_refuses_an_age_that_is_not_a_finite_number_of_seconds(
    tmp_path: Path, older_than_s: float
) -> None:
    store = JSONLStore(tmp_path)
    put(store, crashed_session("young"))
    with pytest.raises(turnlog.UsageError, match="older_than_s"):
        sweep(store, older_than_s=older_than_s)
    assert turnlog.inspect(store, "young").status == "interrupted"  # nothing repaired
