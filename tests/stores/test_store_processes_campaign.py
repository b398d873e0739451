"""The supervisor campaign: one long-lived process holds each store open while many
writer processes come and go, about half of them killed with SIGKILL; every
acknowledged event is checked after every writer, here and in a fresh process.

    .venv/bin/pytest -m slow tests/stores/test_store_processes_campaign.py -s -p no:xdist
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import make_store
from turnlog.stores import Store
from turnlog.testing.processes import ProcessContract, ProcessTally, run_writers_beside

WRITERS_PER_STORE = 60
TOTALS: dict[str, ProcessTally] = {}


class _Contract(ProcessContract):
    pass


@pytest.fixture(scope="module", autouse=True)
def report() -> Iterator[None]:
    yield
    for kind, tally in TOTALS.items():
        print(f"\nsupervisor campaign {kind}: {tally}", file=sys.__stderr__)


@pytest.mark.slow
@pytest.mark.parametrize("sweeper", [False, True], ids=["holding", "sweeping"])
@pytest.mark.parametrize("kind", ["jsonl", "sqlite", "postgres"])
def test_the_supervisor_campaign_loses_no_acknowledged_event(
    tmp_path: Path, request: pytest.FixtureRequest, kind: str, sweeper: bool
) -> None:
    store: Store = make_store(kind, tmp_path, request)
    with store:
        tally = run_writers_beside(
            _Contract(),
            store,
            writers=WRITERS_PER_STORE,
            seed=7 + sweeper,
            sessions=3 if sweeper else 1,
            sweeper=sweeper,
        )
    total = TOTALS.setdefault(kind, ProcessTally())
    for field in ("writers", "kills", "acknowledged_checked", "lost", "stale_reads"):
        setattr(total, field, getattr(total, field) + getattr(tally, field))
    assert tally.lost == 0 and tally.stale_reads == 0, tally
