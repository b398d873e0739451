"""Shared fixtures: the stores tests run against, and a PostgreSQL server for them."""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# The shared helpers and programs live in tests/support: importable by name
# from every test (and from each other, as the programs run them).
sys.path.insert(0, str(Path(__file__).with_name("support")))

from matrix_sample import Sample, mark_beyond_samples
from postgres_server import REQUIRE_ENV, postgres_dsn
from turnlog.handle.selfcheck import ENV as SELF_CHECK_ENV
from turnlog.stores import JSONLStore, MemoryStore, SQLiteStore, Store

# Every recovery in every test, in this process and in the processes tests
# start, asserts that the recovered session exports valid for all four
# providers (turnlog.selfcheck).
os.environ[SELF_CHECK_ENV] = "1"

_schemas = itertools.count()

# Tests that must run in one worker, in file order, however the tests are
# distributed: a report that reads what a file's cases gathered in that
# process, and tests sharing a module fixture too costly to build in every
# worker. By file: the test functions, or None for the whole file.
# (test_layout.py checks that each named test exists.)
ONE_WORKER: dict[str, tuple[str, ...] | None] = {
    "tests/ops/test_revival.py": ("test_kill_matrix", "test_kill_matrix_report"),
    "tests/formats/test_rescue.py": ("test_doctor_repairs_by_appending", "test_doctor_report"),
    "tests/ops/test_memory_bounds.py": None,
    # One Prefect server for the file's cases.
    "tests/integrations/engines/test_prefect_engine.py": None,
    # One Temporal dev server for the file's cases.
    "tests/integrations/engines/test_temporal_engine.py": None,
}


# Wide matrices of cases that each start several processes: `make test` runs
# a sample in which every value of every parameter appears at least once, and
# the rest of the cross product runs under `-m slow` (CI runs both). Each says
# why it is wide. (test_layout.py checks that each named test exists.)
SAMPLED: dict[str, Sample] = {
    # Each a covering sample: every value of every parameter at least once.
    "tests/integrations/adk/test_adk_pauses.py::test_decided_by_the_client_in_a_second_process_and_resumed_in_a_third": (
        "pause kind by decision by store, three processes each",
        None,
    ),
    "tests/integrations/adk/test_adk_pauses.py::test_resume_killed_in_the_tool_is_judged_and_never_runs_twice": (
        "pause kind by store, a kill and a resume each",
        None,
    ),
    "tests/integrations/openai_agents/test_openai_agents_pauses.py::test_resume_killed_is_judged_and_never_runs_twice": (
        "hooks by kill point by store",
        None,
    ),
    "tests/integrations/pydantic_ai/test_pydantic_ai_pauses.py::test_decided_in_deferred_tool_results_in_a_second_process": (
        "decision by store",
        None,
    ),
    "tests/integrations/test_integrations.py::test_killed_mid_tool_then_recovered_and_resumed": (
        "framework by parallel calls by repair command",
        None,
    ),
    "tests/integrations/test_integration_docs.py::test_the_docs_section_survives_a_kill_and_revives": (
        "framework by calls by store",
        None,
    ),
    "tests/integrations/test_integration_answered_once.py::test_repaired_from_outside_then_resumed_the_frameworks_way_runs_nothing_again": (
        "framework by repair command",
        None,
    ),
    "tests/integrations/test_approval_docs.py::test_pause_decide_resume_in_separate_processes": (
        "decision by framework",
        None,
    ),
    "tests/runtime/test_pause_kills.py::test_pause_kill_campaign": (
        "kill point by decision by loop by store",
        None,
    ),
    # A list of kill points (or of engines' modes): `make test` keeps the one
    # named, the case the others vary.
    "tests/integrations/engines/test_prefect_engine.py::test_a_killed_flow_run_retried_runs_no_tool_twice": (
        "every kill point of the flow",
        ("tool:charge",),
    ),
    "tests/integrations/engines/test_prefect_engine.py::test_pydantic_ai_prefect_durability_retried_runs_the_tool_once": (
        "every kill point of the agent",
        ("tool",),
    ),
    "tests/integrations/engines/test_temporal_engine.py::test_a_killed_worker_taken_over_runs_no_tool_twice": (
        "every kill point of the workflow",
        ("tool:charge",),
    ),
    "tests/integrations/engines/test_temporal_engine.py::test_pydantic_ai_temporal_durability_runs_the_tool_once": (
        "every kill point of the agent",
        ("tool",),
    ),
    "tests/integrations/engines/test_dbos_engine.py::test_a_killed_worker_recovered_by_dbos_runs_no_tool_twice": (
        "every kill point of the workflow",
        ("tool:charge",),
    ),
    "tests/integrations/pydantic_ai/test_pydantic_ai_dbos.py::test_dbos_replay_of_the_agent_runs_the_tool_once": (
        "every kill point of the agent",
        ("tool",),
    ),
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Before `-m` selects: the cases beyond a sample carry the slow mark by then.
    mark_beyond_samples(items, SAMPLED)


def one_worker_group(nodeid: str) -> str | None:
    """The group of tests `nodeid` must run with in one worker, or None."""
    path, _, rest = nodeid.partition("::")
    if path not in ONE_WORKER:
        return None
    names = ONE_WORKER[path]
    name = rest.partition("[")[0]
    return path if names is None or name in names else None


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """`--dist loadgroup` with the groups of ONE_WORKER: each group is one
    unit of work (the bigger ones handed out first), every other test its own.

    The same as pytest-xdist's `xdist_group` mark would do; that mark renames
    a test's node id, which the pytest this project runs no longer allows.
    Optional, and xdist imported there: a run without xdist needs neither.
    """
    if config.getvalue("dist") != "loadgroup":
        return None
    from worker_schedule import grouped_load

    return grouped_load(config, log, one_worker_group)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL server for the session's tests. Without one, the tests that
    need it skip with the reason, except under TURNLOG_REQUIRE_POSTGRES=1 (CI),
    where that is a failure."""
    with postgres_dsn() as dsn:
        if dsn is None:
            reason = "no PostgreSQL server binaries (initdb, pg_ctl) on this machine"
            if os.environ.get(REQUIRE_ENV) == "1":
                pytest.fail(f"{REQUIRE_ENV}=1 but {reason}")
            pytest.skip(reason)
        yield dsn


def make_store(kind: str, tmp_path: Path, request: pytest.FixtureRequest | None = None) -> Store:
    if kind == "memory":
        return MemoryStore()
    if kind == "jsonl":
        return JSONLStore(tmp_path / "sessions")
    if kind == "sqlite":
        return SQLiteStore(tmp_path / "sessions.db")
    assert request is not None
    from turnlog.stores.postgres import PostgresStore

    # A schema of its own per test: the same server, no test sees another's rows.
    schema = f"t{os.getpid()}_{next(_schemas)}"
    return PostgresStore(request.getfixturevalue("postgres_url"), schema=schema)
