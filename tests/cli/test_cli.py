"""The command line through its entry point: every command, human and --json, every exit code."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import turnlog
from builders import write_session
from paths import ROOT, TESTS
from turnlog import events as ev
from turnlog.cli import main

FIXTURES = TESTS / "fixtures"
DOCS = ROOT / "docs" / "cli.md"


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    runner = CliRunner()
    result = runner.invoke(main, list(args), env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def as_json(*args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    code, out, _ = run(*args, "--json")
    return code, json.loads(out)


@pytest.fixture
def sessions(tmp_path: Path) -> Path:
    for fixture in FIXTURES.glob("*.jsonl"):
        shutil.copy(fixture, tmp_path / fixture.name)
    return tmp_path


# -- hand-written fixtures plan as the decision table says ----------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("rule-r1", [("c1", "tool_outcome_unknown", "R1")]),
        ("rule-r2", [("b", "tool_not_started", "R2")]),
        ("rule-r3-r4", [("x", "tool_not_started", "R3"), ("y", "tool_outcome_unknown", "R4")]),
        ("finished", []),
    ],
)
def test_fixtures_plan_as_the_table_says(sessions: Path, name: str, expected: list) -> None:  # type: ignore[type-arg]
    code, document = as_json("plan", str(sessions / f"{name}.jsonl"))
    assert code == 0
    results = [r for r in document["repairs"] if r["type"] == "tool_result"]
    assert [
        (r["data"]["call_id"], r["data"]["risk"], r["data"]["rule"]) for r in results
    ] == expected
    assert all(r["origin"] == "recovery" for r in document["repairs"])
    code, found = as_json("inspect", str(sessions / f"{name}.jsonl"))
    assert [(c["call_id"], c["risk"], c["rule"]) for c in found["owed_calls"]] == expected


# -- inspect ---------------------------------------------------------------------


def test_inspect_json_keys_and_status(sessions: Path) -> None:
    code, found = as_json("inspect", str(sessions / "rule-r1.jsonl"))
    assert code == 0
    for key in (
        "session_id",
        "status",
        "revivable",
        "reason",
        "events",
        "turns",
        "open_turn",
        "owed_calls",
        "revivals",
        "torn_tail",
        "problems",
    ):
        assert key in found
    assert found["status"] == "interrupted" and found["revivable"] is True
    assert found["open_turn"] == {"seq": 2, "turn": 1}
    assert found["events"] == 6
    code, found = as_json("inspect", str(sessions / "finished.jsonl"))
    assert (found["status"], found["revivable"], found["reason"]) == ("finished", False, "finished")


def test_inspect_human(sessions: Path) -> None:
    code, out, _ = run("inspect", str(sessions / "rule-r2.jsonl"))
    assert code == 0
    assert "interrupted" in out and "tool_not_started" in out and "did not run" in out


def test_inspect_by_id_in_a_store(sessions: Path) -> None:
    code, found = as_json("inspect", "rule-r1", "--store", str(sessions))
    assert found["session_id"] == "rule-r1"
    code, out, _ = run("inspect", "rule-r1", env={"TURNLOG_STORE": str(sessions)})
    assert code == 0 and "rule-r1" in out


def test_inspect_running_session(tmp_path: Path) -> None:
    with turnlog.open(tmp_path / "live.jsonl") as log:
        log.append(turnlog.events.TurnStart(turn=1, revivals=0))
        code, found = as_json("inspect", str(tmp_path / "live.jsonl"))
        assert code == 0 and found["status"] == "running" and found["holder_pid"] == os.getpid()
        assert found["revivable"] is False


def test_inspect_torn_tail(sessions: Path) -> None:
    path = sessions / "rule-r1.jsonl"
    with open(path, "ab") as f:
        f.write(b'{"seq":6,"type":"tool_res')
    code, found = as_json("inspect", str(path))
    assert code == 0 and found["status"] == "interrupted"
    assert found["torn_tail"]["offset"] == path.stat().st_size - 25
    assert found["torn_tail"]["bytes"] == 25


# -- plan and recover ------------------------------------------------------------------


def test_plan_check_and_recover_idempotent(sessions: Path) -> None:
    path = str(sessions / "rule-r2.jsonl")
    assert run("plan", path, "--check")[0] == 1
    code, out, _ = run("plan", path)
    assert code == 0 and "tool_not_started" in out
    code, document = as_json("recover", path)
    assert code == 0
    assert [e["type"] for e in document["appended"]] == ["tool_result", "step_end", "turn_end"]
    code, out, _ = run("recover", path)
    assert code == 0 and "nothing to recover" in out
    assert run("plan", path, "--check")[0] == 0
    code, found = as_json("inspect", path)
    assert found["status"] != "interrupted"


def test_recover_quarantines_torn_tail(sessions: Path) -> None:
    path = sessions / "rule-r1.jsonl"
    valid_size = path.stat().st_size
    with open(path, "ab") as f:
        f.write(b"\x00" * 100)
    code, out, _ = run("recover", str(path))
    assert code == 0 and "torn tail of 100 bytes" in out
    sidecar = sessions / f"rule-r1.jsonl.torn-{valid_size}"
    assert sidecar.read_bytes() == b"\x00" * 100
    assert b"\x00" not in path.read_bytes()


def test_recover_refuses_a_live_writer_unless_forced(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    with turnlog.open(path) as log:
        log.append(turnlog.events.TurnStart(turn=1, revivals=0))
        code, out, err = run("recover", str(path))
        assert code == 4
        assert str(os.getpid()) in err and "hint:" in err
        code, document = as_json("recover", str(path))
        assert code == 4 and document["exit_code"] == 4
        code, out, err = run("recover", str(path), "--force")
        assert code == 0 and "end: interrupted" in out and not err


# -- show, ls, verify, fork ------------------------------------------------------------


def test_show_marks_synthetic_events(sessions: Path) -> None:
    path = str(sessions / "rule-r1.jsonl")
    run("recover", path)
    code, out, _ = run("show", path)
    assert code == 0
    assert "<recovery>" in out and "tool_outcome_unknown" in out and "interrupted" in out
    code, document = as_json("show", path)
    assert document["events"][-1]["origin"] == "recovery"
    assert document["events"][0]["type"] == "session"


def test_show_marks_an_orphaned_settlement(tmp_path: Path) -> None:
    # A hand-made log whose compaction swallowed the request of a call in flight.
    path = tmp_path / "swallowed.jsonl"
    write_session(
        path,
        [
            ev.UserMessage(content="go"),
            ev.TurnStart(turn=1),
            ev.AssistantMessage(tool_calls=[ev.ToolCall(id="c1", name="pay")]),
            ev.ToolDispatch(call_id="c1", name="pay"),
            ev.Compaction(through_seq=3, summary="paying"),
        ],
    )
    assert run("recover", str(path))[0] == 0
    code, out, _ = run("show", str(path))
    assert code == 0 and "orphaned" in out
    code, document = as_json("show", str(path))
    (settled,) = [e for e in document["events"] if e["type"] == "tool_result"]
    assert settled["data"]["orphaned"] is True and settled["origin"] == "recovery"
    code, document = as_json("export", str(path), "--to", "anthropic", "--validate")
    assert code == 0 and document["violations"] == []


def test_piped_output_never_folds_a_cell(tmp_path: Path) -> None:
    # Ids and timestamps stay whole on one line when a program reads the output.
    session_id = "a-session-id-longer-than-an-eighty-column-terminal-" + "0123456789" * 4
    with turnlog.open(tmp_path, session_id) as log:
        log.user("hi")
    for command in (
        ["ls", "--store", str(tmp_path)],
        ["inspect", session_id, "--store", str(tmp_path)],
    ):
        code, out, _ = run(*command)
        assert code == 0
        assert any(session_id in line for line in out.splitlines()), out


def test_show_picks_a_turn_a_time_or_a_tail_and_prints_whole_texts(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    with turnlog.open(path) as log:
        for number in (1, 2, 3):
            log.user(f"request {number}")
            with log.turn(), log.step():
                log.assistant(f"answer {number} " + "word " * 40)
        stamps = [e.ts for e in log.store.read("long")]
    code, document = as_json("show", str(path), "--turn", "2")
    shown = [e["data"].get("content", "")[:9] for e in document["events"]]
    assert code == 0 and shown[0] == "request 2" and "answer 2 " in shown
    assert document["events"][-1]["type"] == "turn_end"
    assert not any(text.startswith(("request 1", "request 3")) for text in shown)
    code, document = as_json("show", str(path), "--tail", "3")
    assert [e["seq"] for e in document["events"]] == [
        len(stamps) - 3,
        len(stamps) - 2,
        len(stamps) - 1,
    ]
    since = stamps[-2]
    code, document = as_json("show", str(path), "--since", since)
    assert code == 0 and all(e["ts"] >= since for e in document["events"])
    assert document["events"] and len(document["events"]) < len(stamps)
    code, out, _ = run("show", str(path), "--turn", "3")
    assert "answer 3" in out and "word word" in out and "…" in out
    code, out, _ = run("show", str(path), "--turn", "3", "--full")
    assert ("word " * 39).strip() in out and "…" not in out
    code, out, err = run("show", str(path), "--since", "yesterday")
    assert code == 2 and "ISO 8601" in err


def test_ls(sessions: Path) -> None:
    code, document = as_json("ls", "--store", str(sessions))
    assert code == 0
    rows = {row["session_id"]: row for row in document["sessions"]}
    assert set(rows) == {"finished", "rule-r1", "rule-r2", "rule-r3-r4"}
    assert rows["rule-r3-r4"]["owed_calls"] == 2 and rows["finished"]["status"] == "finished"
    code, out, _ = run("ls", "--store", str(sessions))
    assert code == 0 and "rule-r2" in out and "interrupted" in out
    # A mistyped store is an error with a hint, not an empty store.
    code, document = as_json("ls", "--store", str(sessions / "nowhere"))
    assert code == 2 and "no turnlog store" in document["error"] and document["hint"]


def test_verify(sessions: Path) -> None:
    code, document = as_json("verify", "--store", str(sessions))
    assert code == 0 and document["ok"]
    assert run("verify", "--strict", str(sessions / "finished.jsonl"))[0] == 1
    path = sessions / "rule-r2.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].replace(b"step_start", b"step_staRt")
    path.write_bytes(b"".join(lines))
    code, out, _ = run("verify", str(path))
    assert code == 1 and "line 3" in out and "step_staRt" in out
    code, document = as_json("verify", str(path))
    assert document["ok"] is False and document["sessions"][0]["problems"][0]["line"] == 3


def test_verify_finds_bookkeeping_problems(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(
        '{"seq":0,"type":"session","data":{"session_id":"bad"}}\n'
        '{"seq":1,"type":"turn_end","data":{"reason":"complete"}}\n'
        '{"seq":2,"type":"tool_result","data":{"call_id":"ghost"}}\n'
    )
    code, document = as_json("verify", str(path))
    messages = [p["message"] for p in document["sessions"][0]["problems"]]
    assert code == 1
    assert any("closes no open turn" in m for m in messages)
    assert any("never requested" in m for m in messages)


def test_fork(sessions: Path) -> None:
    code, document = as_json("fork", str(sessions / "finished.jsonl"), "--at", "4")
    assert code == 0 and document["session_id"] == "finished-fork-1"
    events = turnlog.JSONLStore(sessions).read("finished-fork-1")
    assert events[0].data.parent == turnlog.events.Parent(session_id="finished", seed_length=5)  # type: ignore[union-attr]
    code, out, err = run("fork", str(sessions / "rule-r1.jsonl"), "--at", "4")
    assert code == 2 and "seq 2" in err and "hint:" in err
    code, out, err = run("fork", str(sessions / "finished.jsonl"), "--at", "99")
    assert code == 2 and "outside the log" in err
    code, out, _ = run("fork", str(sessions / "finished.jsonl"), "--at", "1", "--id", "mine")
    assert code == 0 and "mine" in out


@pytest.mark.parametrize("provider", ["anthropic", "openai-chat", "openai-responses", "gemini"])
def test_export_validate_and_patch(sessions: Path, provider: str) -> None:
    path = str(sessions / "rule-r1.jsonl")
    code, out, err = run("export", path, "--to", provider, "--validate")
    assert code == 1 and "c1" in err and "hint:" in err
    json.loads(out)
    code, out, err = run("export", path, "--to", provider, "--validate", "--patch-in-memory")
    assert code == 0, err
    assert run("plan", path, "--check")[0] == 1  # the patch wrote nothing
    run("recover", path)
    code, document = as_json("export", path, "--to", provider, "--validate")
    assert code == 0 and document["violations"] == [] and document["provider"] == provider


def test_export_validate_hint_says_what_is_wrong(sessions: Path, tmp_path: Path) -> None:
    # A crashed session: recovery is the fix.
    path = str(sessions / "rule-r1.jsonl")
    code, _, err = run("export", path, "--to", "anthropic", "--validate")
    assert code == 1 and "turn that never ended" in err and "turnlog recover" in err
    # Recovered, but a closed turn (hand-made) left a call unanswered: not a
    # crash, so the hint must not send the user to `recover` again.
    closed = tmp_path / "closed.jsonl"
    write_session(
        closed,
        [
            ev.UserMessage(content="go"),
            ev.TurnStart(turn=1),
            ev.AssistantMessage(tool_calls=[ev.ToolCall(id="c9", name="t")]),
            ev.TurnEnd(turn=1),
        ],
    )
    code, _, err = run("export", str(closed), "--to", "anthropic", "--validate")
    assert code == 1 and "--patch-in-memory" in err and "turnlog recover" not in err
    # Nothing owed anywhere: the content itself breaks a provider's rule.
    opening = tmp_path / "opening.jsonl"
    write_session(opening, [ev.AssistantMessage(content="Hello, I speak first.")])
    code, _, err = run("export", str(opening), "--to", "anthropic", "--validate")
    assert code == 1 and "opens with the assistant" in err
    assert "turnlog recover" not in err and "--patch-in-memory" not in err


# -- bad input never gives a traceback ----------------------------------------------


def _bad_inputs(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "empty.jsonl").write_bytes(b"")
    (tmp_path / "garbage.jsonl").write_bytes(os.urandom(4096))
    (tmp_path / "adir.jsonl").mkdir()
    shutil.copy(TESTS / "fixtures" / "rule-r1.jsonl", tmp_path / "ok.jsonl")
    foreign = tmp_path / "foreign.jsonl"
    foreign.write_text('{"type":"user","uuid":"u1","message":{"role":"user","content":"hi"}}\n')
    huge = tmp_path / "huge.jsonl"
    with open(huge, "wb") as f:
        f.write(b'{"seq":0,"type":"session","data":{"session_id":"huge","meta":{"x":"')
        f.write(b"x" * (100 * 1024 * 1024))
        f.write(b'"}}}\n')
    return {
        "empty": str(tmp_path / "empty.jsonl"),
        "garbage": str(tmp_path / "garbage.jsonl"),
        "directory": str(tmp_path / "adir.jsonl"),
        "missing": str(tmp_path / "missing.jsonl"),
        "foreign": str(foreign),
        "huge": str(huge),
        "not-jsonl": str(tmp_path / "notes.txt"),
    }


def test_bad_input_never_gives_a_traceback(tmp_path: Path) -> None:
    # Through the real entry point, as a process: a traceback would reach
    # stderr there (click's test runner never shows one).
    (tmp_path / "notes.txt").write_text("hello")
    for label, path in _bad_inputs(tmp_path).items():
        for command in (
            ["inspect"],
            ["plan"],
            ["recover"],
            ["show"],
            ["verify"],
            ["fork", "--at", "0"],
        ):
            done = subprocess.run(
                [sys.executable, "-m", "turnlog", *command, path],
                capture_output=True,
                text=True,
                stdin=subprocess.DEVNULL,
                timeout=60,
            )
            assert "Traceback" not in done.stderr, (label, command, done.stderr)
            allowed = (0, 3) if (label, command) == ("empty", ["inspect"]) else (1, 2, 3)
            assert done.returncode in allowed, (label, command, done.returncode, done.stderr)
            if done.returncode in (2, 3) and command != ["inspect"]:
                assert "error:" in done.stderr and "hint:" in done.stderr, (label, command)


def test_real_entry_point_exit_codes(tmp_path: Path, sessions: Path) -> None:
    exe = [sys.executable, "-m", "turnlog"]
    usage = subprocess.run([*exe, "plan"], capture_output=True, text=True)
    assert usage.returncode == 2
    missing = subprocess.run(
        [*exe, "show", str(tmp_path / "nope.jsonl")], capture_output=True, text=True
    )
    assert (
        missing.returncode == 3 and "hint:" in missing.stderr and "Traceback" not in missing.stderr
    )
    ok = subprocess.run(
        [*exe, "inspect", str(sessions / "finished.jsonl"), "--json"],
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0 and json.loads(ok.stdout)["status"] == "finished"


# -- the demo ----------------------------------------------------------------------------


def test_demo_crashes_then_recovers(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "turnlog", "demo", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    before = out.split("3. turnlog plan")[0]
    assert "interrupted" in before
    assert "tool_outcome_unknown" in before and "tool_not_started" in before
    session = next(p for p in tmp_path.glob("demo-*.jsonl") if not p.stem.endswith("-tree"))
    code, found = as_json("inspect", str(session))
    assert code == 0 and found["status"] == "finished" and found["revivals"] == 1
    assert run("plan", str(session), "--check")[0] == 0
    assert str(session) in out
    # The tree part: the payer subagent revived under its original id, paid once.
    root = session.with_name(session.stem + "-tree.jsonl")
    child = root.with_suffix(".agents") / "payer-call_delegate_9.jsonl"
    assert sorted(p.name for p in root.with_suffix(".agents").iterdir()) == [child.name]
    for path in (root, child):
        code, found = as_json("inspect", str(path))
        assert (found["status"], found["revivals"]) == ("finished", 1)
    assert "as agent payer-call_delegate_9 (revived)" in out
    assert "pending: call_delegate_9 waits on payer-call_delegate_9" in out
    # It ends by writing its session's timeline page, and says where.
    page = session.with_suffix(".html")
    assert f"timeline page: {page}" in out
    assert 'data-risk="tool_outcome_unknown"' in page.read_text()
    assert out.count("invoice 9: paid $50") == 1
    # What happens without turnlog, from the same crash: refused, or paid twice.
    assert "refused by 4 of 4 providers" in out
    assert "asks to pay invoice 7 and invoice 8 again" in out
    # The revival notice shown whole, once; the plan is not listed a second time.
    assert "carry on from where you stopped" in " ".join(out.split())
    assert "recovery appended:" not in out
    # Piped, the demo keeps a terminal's width: its rules do not run on.
    assert max(len(line) for line in out.splitlines()) <= 500


def test_every_command_s_help_shows_an_example() -> None:
    def commands(group: click.Group, prefix: str = "") -> list[str]:
        found = []
        for name, command in group.commands.items():
            if isinstance(command, click.Group):
                found += commands(command, f"{prefix}{name} ")
            else:
                found.append(f"{prefix}{name}")
        return found

    for path in commands(main):
        code, out, _ = run(*path.split(), "--help")
        assert code == 0 and "Example:" in out, path
        assert f"turnlog {path} " in out.split("Example:")[1], path


def test_shell_completion_as_documented() -> None:
    # The documented set-up line prints a completion script, and the script's
    # own call completes a command name.
    turnlog_script = str(Path(sys.executable).with_name("turnlog"))
    script = subprocess.run(
        [turnlog_script],
        env={**os.environ, "_TURNLOG_COMPLETE": "bash_source"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "_turnlog_completion" in script and "complete " in script
    done = subprocess.run(
        [turnlog_script],
        env={
            **os.environ,
            "_TURNLOG_COMPLETE": "bash_complete",
            "COMP_WORDS": "turnlog insp",
            "COMP_CWORD": "1",
        },
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "inspect" in done.split()[0]
    assert "_TURNLOG_COMPLETE=bash_source turnlog" in DOCS.read_text()


# -- docs match the code -------------------------------------------------------------------


def test_every_command_and_option_is_documented() -> None:
    doc = DOCS.read_text()
    for name, command in main.commands.items():
        assert f"## turnlog {name}" in doc, f"docs/cli.md does not document `turnlog {name}`"
        for param in command.params:
            for opt in getattr(param, "opts", []):
                if opt.startswith("--"):
                    section = doc.split(f"## turnlog {name}")[1].split("\n## ")[0]
                    assert opt in section, f"`turnlog {name}` option {opt} missing from docs/cli.md"
    for code in range(5):
        assert re.search(rf"^\|\s*{code}\s*\|", doc, re.M), f"exit code {code} undocumented"


def test_ls_pages_through_a_store(tmp_path: Path) -> None:
    for i in range(5):
        turnlog.open(tmp_path / f"p{i}.jsonl", create=True).close()
    seen: list[str] = []
    after: list[str] = []
    while True:
        code, page = as_json("ls", "--store", str(tmp_path), "--limit", "2", *after)
        assert code == 0
        seen += [row["session_id"] for row in page["sessions"]]
        if page["next_after"] is None:
            break
        after = ["--after", page["next_after"]]
    assert seen == [f"p{i}" for i in range(5)]


def test_one_calling_convention_for_stored_sessions(tmp_path: Path) -> None:
    # What `turnlog.open` takes (a path, or a store and id) names a stored
    # session for inspect, plan_stored, recover and revive alike.
    from builders import crashed_session, put

    store = turnlog.JSONLStore(tmp_path)
    for name in ("a", "b", "c"):
        put(store, crashed_session(name))
    assert turnlog.inspect(tmp_path / "a.jsonl").status == "interrupted"
    assert turnlog.inspect(str(tmp_path), "a").status == "interrupted"
    from turnlog.ops.recover import plan_stored

    assert plan_stored(tmp_path / "a.jsonl") == plan_stored(store, "a")
    assert turnlog.recover(tmp_path / "a.jsonl").plan
    assert turnlog.recover(str(tmp_path), "b").plan
    revived = turnlog.revive(tmp_path / "c.jsonl")
    assert revived.revived and turnlog.inspect(store, "c").revivals == 1
    with pytest.raises(turnlog.UsageError, match="names a store"):
        turnlog.recover(str(tmp_path))
    # The CLI names the store the same way everywhere: --store.
    put(store, crashed_session("d"))
    code, document = as_json("sweep", "--store", str(tmp_path))
    done = {s["session_id"]: s["action"] for s in document["sessions"]}
    assert code == 0 and done == {"d": "recovered"}
    code, _, err = run("sweep", str(tmp_path), "--store", str(tmp_path / "other"))
    assert code == 2 and "two stores" in err
