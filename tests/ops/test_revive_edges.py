"""Revival at its edges: a run that gave its answer and died before its turn end, a
handle revived under another id, and sessions that are missing or unreadable."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import forkserver
import turnlog
from entry_point import cli
from turnlog import events as ev
from turnlog.core.fold import fold
from turnlog.core.recovery import interrupted, patch_dangling_tool_calls
from turnlog.core.verdict import verdict

# Writes a whole answer, then dies with SIGKILL before the turn's end.
_ANSWERED_THEN_KILLED = """
import os, signal, sys, turnlog
with turnlog.open(sys.argv[1]) as log:
    log.user("What is 2 + 2?")
    with log.turn(), log.step():
        log.assistant("4.")
        log.sync()
        os.kill(os.getpid(), signal.SIGKILL)
"""


def _answered_then_killed(path: Path) -> None:
    proc = forkserver.run([sys.executable, "-c", _ANSWERED_THEN_KILLED, str(path)], check=False)
    assert proc.returncode == -9


def test_a_run_killed_after_its_final_answer_is_finished_not_revivable(tmp_path: Path) -> None:
    path = tmp_path / "run-1.jsonl"
    _answered_then_killed(path)
    found = turnlog.inspect(path)
    assert (found.status, found.revivable, found.reason) == ("interrupted", False, "finished")

    revived = turnlog.revive(path)
    assert (revived.revived, revived.reason) == (False, "finished")
    # The turn is closed by recovery: nothing owed, nothing revived, no notice.
    written = [e.data for e in revived.appended]
    assert [type(d).__name__ for d in written] == ["StepEnd", "TurnEnd"]
    events = turnlog.stores.JSONLStore(tmp_path).read("run-1")
    assert not any(isinstance(e.data, (ev.RunRevived, ev.ToolResult)) for e in events)
    assert turnlog.inspect(path).status == "finished"
    # Idempotent: a second revive writes nothing.
    again = turnlog.revive(path)
    assert (again.revived, again.reason, again.appended) == (False, "finished", ())


# The same death, on a store named by URL: the rule reads the tail each store keeps.
_ANSWERED_THEN_KILLED_IN = """
import os, signal, sys, turnlog
with turnlog.open(sys.argv[1], "run-1") as log:
    log.user("What is 2 + 2?")
    with log.turn(), log.step():
        log.assistant("4.")
        log.sync()
        os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("kind", ["jsonl", "sqlite", "postgres"])
def test_the_finished_rule_holds_on_every_store(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    from conftest import make_store

    store = make_store(kind, tmp_path, request)
    url = store.url if ":" in store.url else f"jsonl:{store.url}"
    proc = forkserver.run([sys.executable, "-c", _ANSWERED_THEN_KILLED_IN, url], check=False)
    assert proc.returncode == -9
    found = turnlog.inspect(store, "run-1")
    assert (found.status, found.revivable, found.reason) == ("interrupted", False, "finished")
    revived = turnlog.revive(store, "run-1")
    assert (revived.revived, revived.reason) == (False, "finished")
    assert [type(e.data).__name__ for e in revived.appended] == ["StepEnd", "TurnEnd"]
    assert turnlog.inspect(store, "run-1").status == "finished"
    again = turnlog.revive(store, "run-1")
    assert (again.revived, again.reason, again.appended) == (False, "finished", ())


def test_the_command_line_reports_it_finished_too(tmp_path: Path) -> None:
    path = tmp_path / "run-1.jsonl"
    _answered_then_killed(path)
    code, out, _ = cli("inspect", str(path), "--json")
    assert '"reason":"finished"' in out.replace(" ", ""), out
    code, out, err = cli("revive", str(path))
    assert "finished" in out + err, (code, out, err)
    code, out, _ = cli("inspect", str(path), "--json")
    assert '"status":"finished"' in out.replace(" ", ""), out


def test_a_handle_revived_under_another_id_is_refused(tmp_path: Path) -> None:
    with turnlog.open(tmp_path / "run-1.jsonl") as log:
        log.user("hi")
        with pytest.raises(turnlog.UsageError, match="'other-id'"):
            turnlog.revive(log, "other-id")
        # Its own id is fine: the session is idle, so revival is allowed.
        assert turnlog.revive(log, "run-1").revived
    events = turnlog.stores.JSONLStore(tmp_path).read("run-1")
    assert [e.data.revival for e in events if isinstance(e.data, ev.RunRevived)] == [1]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (None, "unreadable"),  # missing
        (b'{"type":"user","sessionId":"abc"}\n', "unreadable"),  # not a turnlog session
    ],
)
def test_reviving_a_missing_or_unreadable_session_reports_it(
    tmp_path: Path, content: bytes | None, reason: str
) -> None:
    path = tmp_path / "run-1.jsonl"
    if content is not None:
        path.write_bytes(content)
    revived = turnlog.revive(path)
    assert (revived.revived, revived.reason) == (False, reason)
    assert revived.hint
    assert turnlog.inspect(path).status == reason
    if content is not None:
        assert path.read_bytes() == content  # not ours: not a byte moved


def test_reviving_a_session_another_process_writes_reports_it_running(tmp_path: Path) -> None:
    path = tmp_path / "run-1.jsonl"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, turnlog\n"
            "with turnlog.open(sys.argv[1]) as log:\n"
            "    log.user('hi')\n"
            "    print('ready', flush=True)\n"
            "    sys.stdin.readline()\n",
            str(path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        revived = turnlog.revive(path)
        assert (revived.revived, revived.reason) == (False, "running")
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=60)


def test_a_report_owed_far_back_is_seen_from_the_tail_and_the_session_is_not_finished(
    tmp_path: Path,
) -> None:
    """The writer stamps each turn boundary with the reports still owed, so a
    tail that begins long after the spawn still knows: the session is not
    finished, and the tail's verdict is the whole log's."""
    store = turnlog.stores.JSONLStore(tmp_path)
    spawn = turnlog.ToolCall(id="s1", name="spawn")
    with turnlog.open(store, "root") as log:
        log.user("start a researcher in the background")
        with log.turn(), log.step():
            log.assistant("", [spawn])
            with log.dispatch(spawn) as running:
                log.append(
                    ev.SubagentSpawned(
                        agent_id="researcher", agent_type="worker", call_id="s1", background=True
                    )
                )
                running.result("started in the background")
        for i in range(50):
            log.user(f"meanwhile {i}")
            with log.turn(), log.step():
                log.assistant(f"ok {i}")
    events = store.read("root")
    full = verdict(events)
    tail = store.read_tail("root")
    assert tail.events[0].seq > 10  # the spawn is far behind the tail
    assert full.reports_owed == ("researcher",) and not full.finished
    assert tail.verdict() == full
    found = turnlog.inspect(store, "root")
    assert (found.status, found.reason, found.revivable) == ("idle", "reports_owed", True)


@pytest.mark.parametrize(
    ("function", "instead"),
    [
        (turnlog.plan, "plan_stored"),
        (verdict, "inspect"),
        (turnlog.is_finished, "inspect"),
        (fold, "open"),
        (interrupted, "inspect"),
        (patch_dangling_tool_calls, "open"),
    ],
)
def test_a_function_that_takes_events_refuses_a_path_and_names_the_one_that_takes_it(
    tmp_path: Path, function: object, instead: str
) -> None:
    path = tmp_path / "x.jsonl"
    for given in (str(path), path, "run-1"):
        with pytest.raises(turnlog.UsageError, match="not a path") as refused:
            function(given)  # type: ignore[operator]
        assert instead in (refused.value.hint or "")


def test_inspect_of_a_missing_session_on_the_command_line_gives_its_status(tmp_path: Path) -> None:
    for where in ([str(tmp_path / "gone.jsonl")], ["gone", "--store", str(tmp_path)]):
        code, out, err = cli("inspect", *where, "--json")
        assert code == 3, err
        found = json.loads(out)
        assert (found["status"], found["revivable"]) == ("unreadable", False)
        assert "gone" in found["problems"][0]["message"]


def test_inspect_of_a_missing_session_tells_a_person_no_such_file(tmp_path: Path) -> None:
    code, out, err = cli("inspect", str(tmp_path / "gone.jsonl"))
    assert code == 3 and out == "", out
    assert "gone.jsonl: no such file" in err and "hint:" in err


@pytest.mark.parametrize("cap", [float("nan"), -1, "3", True, 2.0])
def test_a_revival_cap_that_is_not_a_whole_number_is_a_usage_error(
    tmp_path: Path, cap: object
) -> None:
    path = tmp_path / "run-1.jsonl"
    _answered_then_killed(path)
    for call in (turnlog.revive, turnlog.inspect):
        with pytest.raises(turnlog.UsageError, match="max_revivals"):
            call(path, max_revivals=cap)  # type: ignore[operator]


# Killed after a reply that says nothing: empty, or reasoning alone.
_SAID_NOTHING = """
import os, signal, sys, turnlog
with turnlog.open(sys.argv[1]) as log:
    log.user("What is 2 + 2?")
    with log.turn(), log.step():
        log.assistant([{"type": "thinking", "thinking": "hmm", "signature": "s"}] if sys.argv[2] == "r" else "")
        log.sync()
        os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("reply", ["empty", "r"])
def test_a_reply_that_says_nothing_is_not_a_finished_run(tmp_path: Path, reply: str) -> None:
    path = tmp_path / "run-1.jsonl"
    forkserver.run([sys.executable, "-c", _SAID_NOTHING, str(path), reply], check=False)
    found = turnlog.inspect(path)
    assert (found.status, found.revivable) == ("interrupted", True), found
    assert turnlog.revive(path).revived
