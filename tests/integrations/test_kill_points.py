"""A kill after every durable append a framework recipe makes: the hooks', the
session's and the framework's own saves through turnlog, each a crash point.

For each framework the program runs once counting its writes
(`kill_points`), then once per write, SIGKILLed right after it; the
session is repaired one of the documented ways and the run resumed. Each
trial checks the ledger (`charge` ran at most once, whatever the point), that
the model's first input on resume answers every call it holds, and that the
run ends with the final answer. The full sweep is slow (`pytest -m slow`);
`make test` keeps the point the outside campaign found (a kill between the
tool's recorded result and the Agents SDK's save), repaired all four ways.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import forkserver
import kill_points
import turnlog
from entry_point import cli
from paths import SUPPORT
from turnlog.events import ToolResult
from turnlog.providers import PROVIDERS
from turnlog.stores.jsonl.store import JSONLStore

PROGRAM = str(SUPPORT / "framework_program.py")
SESSION = "run-1"
FINAL = "all charges settled"

# The ways docs/integrations.md repairs a crashed session before the run
# goes on: the Agents SDK's session options, and the two commands.
AGENTS_REPAIRS = ("revive=True", "recover=True", "turnlog revive", "turnlog recover")
SHELL_REPAIRS = ("turnlog revive", "turnlog recover")


def run(framework: str, mode: str, store: Path, side: Path, *flags: str, **env: str) -> Any:
    return forkserver.run(
        [sys.executable, PROGRAM, framework, mode, str(store), str(side), *flags],
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **env, "OPENAI_AGENTS_DISABLE_TRACING": "1"},
    )


def charges(side: Path) -> Counter[int]:
    return Counter(int(n) for n in side.read_text().split()) if side.exists() else Counter()


def count_points(
    framework: str, here: Path, flags: tuple[str, ...], **env: str
) -> list[tuple[int, str]]:
    """The writes one whole run makes: (number, the types written)."""
    here.mkdir(parents=True, exist_ok=True)
    counted = here / "count"
    done = run(framework, "run", here / "store", here / "side", *flags,
               COUNT_APPENDS=str(counted), **env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return kill_points.points(counted)


def killed_at(framework: str, point: int, here: Path, flags: tuple[str, ...], **env: str) -> Path:
    """A store whose run was SIGKILLed right after its `point`th write."""
    here.mkdir(parents=True, exist_ok=True)
    died = run(framework, "run", here / "store", here / "side", *flags,
               KILL_AFTER_APPEND=str(point), **env)  # fmt: skip
    assert died.returncode == -9, (point, died.stdout, died.stderr)
    return here / "store"


def resume(
    framework: str, repair: str, here: Path, flags: tuple[str, ...], **env: str
) -> dict[str, Any]:
    """Repair the killed run `repair`'s way, run on, and check the trial."""
    store, side = here / "store", here / "side"
    before = charges(side)
    hooked = not env.get("NO_HOOKS")
    held = {
        int(event.data.call_id.rsplit("_", 1)[1])
        for event in JSONLStore(store).iter_events(SESSION)
        if isinstance(event.data, ToolResult) and event.origin is None
    }
    if repair.startswith("turnlog "):
        code, said, err = cli(repair.split()[1], str(store / f"{SESSION}.jsonl"))
        # A run killed after its final answer was written is finished once
        # recovered: `revive` says so, and revives nothing.
        assert code == 0 or "not revived (finished)" in said, (code, said, err)
        assert turnlog.inspect(str(store), SESSION).status != "interrupted"
        opened = {}
    else:
        opened = {"OPEN_WITH": repair.removesuffix("=True")}
    done = run(framework, "resume", store, side, *flags, **opened, **env)
    assert done.returncode == 0, (repair, done.stderr)
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["final"] == FINAL
    counts = charges(side)
    if hooked:
        assert all(n == 1 for n in counts.values()), (repair, counts)
    else:
        # Without hooks nothing of a step is written before the SDK saves it
        # after its tools (docs/integrations.md): a kill inside that save,
        # before the call's result landed, leaves the log no trace of the
        # call, which may then run again. A call the log holds runs once.
        assert all(n == 1 for amount, n in counts.items() if amount in held), (repair, counts)
    # Every call the model is shown on resume comes with its answer, and a
    # charge that ran before the kill is among them: the model was told.
    assert set(out["calls"]) == set(out["outputs"]), out
    # (A thread whose checkpoint holds the final answer calls no model.)
    if before and (hooked or held) and out.get("model_called", True):
        assert out["calls"], out
    return out


def test_agents_sdk_kill_between_the_tools_result_and_the_sdks_save(tmp_path: Path) -> None:
    """The outside campaign's repro: killed right after the hooks recorded
    `charge`'s result, before the SDK saved the step; revived or recovered
    any documented way, the tool runs once and `get_items` hands the call
    back with its recorded result."""
    counted = count_points("openai-agents", tmp_path / "count", ())
    point = next(number for number, types in counted if types == "tool_result")
    crashed = tmp_path / "crashed"
    killed_at("openai-agents", point, crashed, ())
    assert charges(crashed / "side") == Counter({1: 1})
    for repair in AGENTS_REPAIRS:
        here = tmp_path / repair.replace(" ", "-").replace("=", "-")
        shutil.copytree(crashed, here)
        out = resume("openai-agents", repair, here, ())
        assert ["function_call", "call_1_1"] in out["handed"], out
        assert ["function_call_output", "call_1_1"] in out["handed"], out


def sweep(framework: str, tmp_path: Path, flags: tuple[str, ...], **env: str) -> int:
    """Kill after every write of one run; returns how many points were tried."""
    points = count_points(framework, tmp_path / "count", flags, **env)
    repairs = AGENTS_REPAIRS if framework == "openai-agents" else SHELL_REPAIRS
    for point, _ in points:
        here = tmp_path / str(point)
        store = killed_at(framework, point, here, flags, **env)
        resume(framework, repairs[point % len(repairs)], here, flags, **env)
        assert turnlog.inspect(str(store), SESSION).status == "finished"
        for provider in PROVIDERS:
            code, out, _ = cli("export", SESSION, "--store", str(store), "--to", provider,
                               "--validate")  # fmt: skip
            assert code == 0, (point, provider, out)
    print(f"{framework} {flags} {env}: {len(points)} kill points, 0 tools run twice")
    return len(points)


AGENTS_VARIANTS = {
    "plain": {},
    "streamed": {"STREAMED": "1"},
    "plain-no-hooks": {"NO_HOOKS": "1"},
    "streamed-no-hooks": {"STREAMED": "1", "NO_HOOKS": "1"},
}


@pytest.mark.slow
@pytest.mark.parametrize("parallel", [False, True], ids=["one-call", "parallel"])
@pytest.mark.parametrize("variant", list(AGENTS_VARIANTS))
def test_agents_sdk_every_kill_point(tmp_path: Path, variant: str, parallel: bool) -> None:
    flags = ("--parallel",) if parallel else ()
    assert sweep("openai-agents", tmp_path, flags, **AGENTS_VARIANTS[variant]) >= 10


@pytest.mark.slow
@pytest.mark.parametrize("parallel", [False, True], ids=["one-call", "parallel"])
@pytest.mark.parametrize("framework", ["pydantic-ai", "langgraph", "adk"])
def test_framework_every_kill_point(tmp_path: Path, framework: str, parallel: bool) -> None:
    flags = ("--parallel",) if parallel else ()
    assert sweep(framework, tmp_path, flags) >= 6
