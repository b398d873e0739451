"""Whole-log commands in bounded memory: peaks bounded by a record, not by the file.

Each command runs in a fresh interpreter through the real entry point, with
`tracemalloc` started after the imports and stdout sent to /dev/null, so the
peak is what the command itself allocates. Bounds, not timings.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import turnlog
from turnlog import events as ev

RESULT_BYTES = 8_000
TURNS = 1_200  # about 11 MB: large beside the bounds below

MEASURE = """
import json, os, sys, tracemalloc
import turnlog.cli, turnlog.cli.render, turnlog.providers  # imports before the measure
# Each command's own module too: compiling it (a fresh clone has no cached
# bytecode) is not memory the command holds for the log.
import turnlog.cli.records, turnlog.cli.sessions, turnlog.cli.repair
devnull = os.open(os.devnull, os.O_WRONLY)
os.dup2(devnull, 1)
tracemalloc.start()
try:
    turnlog.cli.main(sys.argv[1:], standalone_mode=False)
except SystemExit as exc:
    code = exc.code
else:
    code = 0
peak = tracemalloc.get_traced_memory()[1]
print(json.dumps({"peak": peak, "code": code}), file=sys.stderr)
"""

APPEND = """
import json, sys, tracemalloc
import turnlog
import turnlog.handle.log, turnlog.stores.jsonl  # imports before the measure
open_log = turnlog.open
tracemalloc.start()
with open_log(sys.argv[1]) as log:
    log.user("one more")
    with log.turn():
        log.assistant("done")
peak = tracemalloc.get_traced_memory()[1]
print(json.dumps({"peak": peak, "code": 0}), file=sys.stderr)
"""


@pytest.fixture(scope="module")
def big_session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("big") / "big.jsonl"
    with turnlog.open(path, durability="none") as log:
        for turn in range(TURNS):
            log.user(f"request {turn}")
            with log.turn(), log.step():
                message = log.assistant("", [turnlog.ToolCall(id=f"c{turn}", name="read")])
                call = message.data.tool_calls[0]  # type: ignore[union-attr]
                with log.dispatch(call) as running:
                    running.result("x" * RESULT_BYTES)
        # A crashed last turn, so plan has something to say.
        log.user("last")
        log.append(ev.TurnStart(turn=TURNS + 1, revivals=0))
        log.assistant("", [turnlog.ToolCall(id="last", name="pay")])
    return path


def peak_bytes(script: str, *args: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=300
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["code"] in (0, None), done.stderr
    return int(report["peak"])


@pytest.mark.parametrize(
    "command",
    [["verify"], ["verify", "--strict"], ["show"], ["show", "--json"], ["plan"], ["inspect"]],
    ids=" ".join,
)
def test_whole_log_commands_hold_a_record_not_the_log(
    big_session: Path, command: list[str]
) -> None:
    size = big_session.stat().st_size
    peak = peak_bytes(MEASURE, *command, str(big_session))
    print(f"{' '.join(command)}: peak {peak / 1e6:.1f} MB on a {size / 1e6:.0f} MB log")
    # The read buffer (1 MiB) and a few records; the log is five times larger.
    assert size > 10_000_000
    assert peak < 2_000_000, peak


def test_export_holds_the_transcript_once(big_session: Path) -> None:
    size = big_session.stat().st_size
    for provider in ("anthropic", "openai-responses"):
        peak = peak_bytes(MEASURE, "export", "--to", provider, str(big_session))
        print(f"export --to {provider}: peak {peak / 1e6:.1f} MB on a {size / 1e6:.0f} MB log")
        assert peak <= 1.5 * size, (provider, peak, size)


def test_reopening_to_append_reads_the_tail_only(big_session: Path, tmp_path: Path) -> None:
    copy = tmp_path / "big.jsonl"
    copy.write_bytes(big_session.read_bytes())
    turnlog.recover(turnlog.JSONLStore(tmp_path), "big")
    peak = peak_bytes(APPEND, str(copy))
    print(f"reopen and append: peak {peak / 1e6:.2f} MB")
    assert peak < 1_000_000, peak
    assert turnlog.verify.verify_session(turnlog.JSONLStore(tmp_path), "big", strict=True).ok
