"""Rescue, second pass: one contract per finding of issue 20, on real files where
the finding needs one (the cut harness in test_rescue_cuts covers items 1, 2, 5
and 7 over every crash point)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import forkserver
import turnlog
from entry_point import cli
from foreign_fixtures import (
    SID,
    THINKING,
    ClaudeCode,
    Codex,
    cc_subagent_20,
    cc_whole_21,
    healthy_turn,
    text,
    tool_use,
    write,
)
from paths import TESTS
from turnlog.core.fold import fold
from turnlog.core.verdict import verdict
from turnlog.events import Risk, TurnEnd, TurnStart
from turnlog.formats.foreign import AppendFailedError
from turnlog.formats.rescue import diagnose, doctor, import_file, read_transcript
from turnlog.providers import render, validate
from turnlog.stores import MemoryStore

REAL_CC = TESTS / "fixtures" / "foreign" / "claude-code-2.1.14-coverage-test-fix.jsonl"


def age(path: Path, seconds: float = 3600) -> Path:
    past = time.time() - seconds
    os.utime(path, (past, past))
    return path


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def exports(kind: str, path: Path) -> list[Any]:
    transcript = read_transcript(str(path), kind)
    provider = "anthropic" if kind == "claude-code" else "openai-responses"
    return validate(provider, render(provider, fold(transcript.events).messages))


# -- 1. a progress line proves that call started, nothing about the others --------------


def test_a_hooked_call_beside_an_unhooked_one_is_never_did_not_run(tmp_path: Path) -> None:
    whole = cc_whole_21(tmp_path / "whole").read_bytes().splitlines(keepends=True)
    # Cut right after the hooked Bash call's PreToolUse progress line: WebSearch
    # (no hooks, so no progress line) ran too, its result is two lines later.
    index = next(i for i, line in enumerate(whole) if b"PreToolUse" in line)
    path = age(write(tmp_path, f"{SID}.jsonl", b"".join(whole[: index + 1])))
    assert b'"tool_use_id":"toolu_web"' in b"".join(whole[index + 1 :])
    found = diagnose(str(path), "claude-code")
    owed = {o.call_id: o for o in found.owed}
    assert set(owed) == {"toolu_web", "toolu_make"}
    assert {o.risk for o in owed.values()} == {Risk.OUTCOME_UNKNOWN.value}
    assert owed["toolu_make"].rule == "R1" and "recorded that it started" in owed["toolu_make"].text
    assert owed["toolu_web"].rule == "R4" and "did not run" not in owed["toolu_web"].text


# -- 2. a prompt typed after the crash does not close the crashed turn ------------------


def crashed_then_continue(folder: Path) -> tuple[Path, str]:
    cc = ClaudeCode()
    healthy_turn(cc)
    cc.user("deploy it")
    (call_line,) = cc.assistant("msg_03", tool_use("toolu_02", command="make deploy"))
    # claude --resume, "continue": the request gets a 400 and Claude Code
    # writes the error as a synthetic assistant line.
    cc.user("continue")
    message = {
        "model": "<synthetic>",
        "id": "msg_err",
        "role": "assistant",
        "content": [text("API Error: 400 tool_use ids were found without tool_result blocks")],
    }
    cc.add(cc.envelope("assistant", cc.last, message=message, isApiErrorMessage=True))
    return write(folder, f"{SID}.jsonl", cc.data()), call_line["uuid"]


def test_an_orphan_followed_by_a_new_prompt_is_repaired_on_the_loaded_chain(
    tmp_path: Path,
) -> None:
    path, call_line = crashed_then_continue(tmp_path)
    age(path)
    found = diagnose(str(path), "claude-code")
    assert found.status == "crashed" and [o.call_id for o in found.owed] == ["toolu_02"]
    (repair,) = [json.loads(line) for line in found.lines]
    assert repair["parentUuid"] == call_line == repair["sourceToolAssistantUUID"]
    doctor(str(path), "claude-code")
    assert lines(path)[-1]["parentUuid"] == call_line
    assert not diagnose(str(path), "claude-code").needs_repair
    # The chain Claude Code loads next ends with the repair, and is valid.
    assert exports("claude-code", path) == []


def test_an_imported_turn_closed_by_a_new_prompt_is_not_complete(tmp_path: Path) -> None:
    path, _ = crashed_then_continue(tmp_path)
    transcript = read_transcript(str(path), "claude-code")
    events = transcript.events
    # The 400 Claude Code noted is not the model's words.
    assert transcript.counted["API error line (not model output)"] == 1
    assert "API Error" not in str([m.content for m in fold(events).messages])
    asked = next(
        e.seq for e in events if any(c.id == "toolu_02" for c in getattr(e.data, "tool_calls", ()))
    )
    after = [e.data for e in events if e.seq > asked]
    first_start = next(i for i, d in enumerate(after) if isinstance(d, TurnStart))
    assert not any(isinstance(d, TurnEnd) for d in after[:first_start])
    assert all(d.reason != "interrupted" for d in after if isinstance(d, TurnEnd))


def test_an_imported_orphan_is_owed_after_the_next_prompt(tmp_path: Path) -> None:
    path, _ = crashed_then_continue(tmp_path)
    owed = verdict(read_transcript(str(path), "claude-code").events).owed
    assert [o.call_id for o in owed] == ["toolu_02"]
    assert owed[0].risk == Risk.OUTCOME_UNKNOWN.value


def test_a_codex_orphan_mid_file_keeps_its_turn_open_at_import(tmp_path: Path) -> None:
    cx = Codex()
    cx.user("deploy")
    cx.call("call_X", "make deploy")
    cx.user("are you there?")
    cx.answer("Yes.")
    path = write(tmp_path, "rollout-2026-05-02T08-30-00-mid.jsonl", cx.data())
    events = read_transcript(str(path), "codex").events
    ends = [e.data for e in events if isinstance(e.data, TurnEnd)]
    starts = [e.data for e in events if isinstance(e.data, TurnStart)]
    assert len(starts) == 2 and len(ends) <= 1


# -- 3. a reply cut after its reasoning is not finished ---------------------------------


def test_a_trailing_thinking_only_reply_is_revivable(tmp_path: Path) -> None:
    cc = ClaudeCode()
    healthy_turn(cc)
    cc.user("plan the migration")
    cc.assistant("msg_t", THINKING)
    path = age(write(tmp_path, f"{SID}.jsonl", cc.data()))
    transcript = read_transcript(str(path), "claude-code")
    last = [e.data for e in transcript.events if type(e.data).__name__ == "AssistantMessage"][-1]
    assert last.content == [THINKING]  # kept, signature and all
    assert not verdict(transcript.events).finished
    assert "revivable" in diagnose(str(path), "claude-code").status
    store = tmp_path / "store"
    code, _, err = cli("import", "claude-code", str(path), "--store", str(store))
    assert code == 0, err
    found = turnlog.inspect(store, SID)
    assert found.revivable and found.status != "finished"


def test_a_trailing_reasoning_item_is_revivable_and_exports_valid(tmp_path: Path) -> None:
    cx = Codex()
    cx.user("plan it")
    cx.item(type="reasoning", summary=[], encrypted_content="gAAAA_r")
    path = age(write(tmp_path, "rollout-2026-05-02T08-30-00-r.jsonl", cx.data()))
    events = read_transcript(str(path), "codex").events
    assert not verdict(events).finished
    assert exports("codex", path) == []


# -- 4. Codex reasoning exports valid for OpenAI Responses ------------------------------


def test_codex_reasoning_around_web_searches_exports_valid(tmp_path: Path) -> None:
    cx = Codex()
    cx.user("look it up")
    reasoning = {"type": "reasoning", "summary": [], "encrypted_content": "gAAAA_r"}
    cx.item(**reasoning)
    cx.item(type="web_search_call", status="completed", action={"type": "search", "query": "q"})
    cx.item(**reasoning)
    cx.item(**reasoning)
    cx.answer("Found it.")
    cx.user("and now?")
    cx.item(**reasoning)
    cx.call("call_1", "ls")
    cx.item(**reasoning)  # a crash right after a reasoning item
    path = age(write(tmp_path, "rollout-2026-05-02T08-30-00-w.jsonl", cx.data()))
    transcript = read_transcript(str(path), "codex")
    assert transcript.counted["reasoning item before a web_search_call"] == 1
    doctor(str(path), "codex")
    assert exports("codex", path) == []
    rendered = render("openai-responses", fold(read_transcript(str(path), "codex").events).messages)
    kinds = [item.get("type", "message") for item in rendered["input"]]
    for index, kind in enumerate(kinds):
        if kind == "reasoning":
            assert kinds[index + 1] in ("message", "function_call")


# -- 5. the chain runs through progress lines --------------------------------------------


def test_a_chain_through_progress_lines_keeps_every_prompt(tmp_path: Path) -> None:
    path = cc_whole_21(tmp_path)
    messages = fold(read_transcript(str(path), "claude-code").events).messages
    prompts = [m.content for m in messages if m.role == "user"]
    assert prompts == ["find the release notes and build", "deploy it"]
    assert messages[0].role == "user"
    assert exports("claude-code", path) == []


def test_the_real_2_1_transcript_imports_whole() -> None:
    transcript = read_transcript(str(REAL_CC), "claude-code")
    messages = fold(transcript.events).messages
    assert messages[0].role == "user" and "multiply_numbers" in str(messages[0].content)
    asked = [c.id for m in messages for c in m.tool_calls]
    answered = [m.call_id for m in messages if m.role == "tool"]
    assert len(asked) == 5 and sorted(asked) == sorted(answered)
    assert exports("claude-code", REAL_CC) == []


# -- 6. a subagent file is a child wherever it is found ---------------------------------


def test_a_subagent_file_is_a_child_whatever_the_import_order(tmp_path: Path) -> None:
    main = cc_subagent_20(tmp_path / "proj")
    agent = tmp_path / "proj" / "agent-feed01.jsonl"
    found = diagnose(str(age(agent)), "claude-code")
    assert found.session_id == f"{SID}.agents/feed01"
    assert found.subagent_of == SID and found.agent_id == "feed01"
    store = tmp_path / "store"
    code, out, err = cli(
        "import", "claude-code", str(agent), str(main), "--store", str(store), "--json"
    )
    assert code == 0, err
    first, second = json.loads(out)["imported"]
    assert first["session_id"] == f"{SID}.agents/feed01" and first["subagent_of"] == SID
    assert second["session_id"] == SID  # the parent is not refused
    code, out, _ = cli("doctor", "claude-code", str(agent), "--dry-run")
    assert code == 0 and f"subagent feed01 of session {SID}" in out


# -- 7. a damaged last line is not part of the chain ------------------------------------


def test_a_call_on_a_glued_line_is_not_answered(tmp_path: Path) -> None:
    cc = ClaudeCode()
    healthy_turn(cc)
    cc.user("deploy it")
    cc.assistant("msg_03", tool_use("toolu_02", command="make deploy"))
    data = cc.data()
    head, last = data.rstrip(b"\n").rsplit(b"\n", 1)
    # The tool_use line glued after a cut record: Claude Code skips the line.
    glued = head + b"\n" + b'{"type":"user","mess' + last + b"\n"
    path = age(write(tmp_path, f"{SID}.jsonl", glued))
    found = diagnose(str(path), "claude-code")
    assert "toolu_02" not in [o.call_id for o in found.owed]
    assert any("glued" in p.message for p in found.problems)


# -- 8. one sourceToolAssistantUUID per tool_use line -----------------------------------


def test_parallel_calls_get_one_repair_line_per_tool_use_line(tmp_path: Path) -> None:
    cc = ClaudeCode()
    cc.user("check both")
    response = cc.assistant(
        "msg_p", text("\n\n"), tool_use("toolu_a", command="cat a"), tool_use("toolu_b")
    )
    path = age(write(tmp_path, f"{SID}.jsonl", cc.data()))
    repairs = [json.loads(line) for line in diagnose(str(path), "claude-code").lines]
    assert [r["sourceToolAssistantUUID"] for r in repairs] == [
        response[1]["uuid"],
        response[2]["uuid"],
    ]
    assert [r["parentUuid"] for r in repairs] == [response[1]["uuid"], response[2]["uuid"]]
    assert [[b["tool_use_id"] for b in r["message"]["content"]] for r in repairs] == [
        ["toolu_a"],
        ["toolu_b"],
    ]
    doctor(str(path), "claude-code")
    assert exports("claude-code", path) == []


def test_the_real_file_names_the_tool_use_line_in_every_result() -> None:
    """What the repair copies: in the real 2.1 file each result's
    sourceToolAssistantUUID is its own tool_use line, which is its parent."""
    records = lines(REAL_CC)
    results = [r for r in records if "sourceToolAssistantUUID" in r]
    assert len(results) == 5
    assert all(r["sourceToolAssistantUUID"] == r["parentUuid"] for r in results)


# -- 9. regular files only --------------------------------------------------------------


def run_cli(*args: str, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    return forkserver.run(
        [sys.executable, "-m", "turnlog", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_a_fifo_is_refused_not_read(tmp_path: Path) -> None:
    fifo = tmp_path / f"{SID}.jsonl"
    os.mkfifo(fifo)
    done = run_cli("doctor", "claude-code", str(fifo), "--dry-run")
    assert done.returncode == 3 and "not a regular file" in done.stderr
    done = run_cli("import", "claude-code", str(fifo), "--store", str(tmp_path / "s"))
    assert done.returncode == 3


def test_a_subagent_link_to_dev_zero_is_counted_not_read(tmp_path: Path) -> None:
    main = cc_subagent_20(tmp_path / "proj")
    (tmp_path / "proj" / "agent-feed01.jsonl").unlink()
    os.symlink("/dev/zero", tmp_path / "proj" / "agent-zero.jsonl")
    os.makedirs(tmp_path / "proj" / SID / "subagents")
    os.symlink("/dev/zero", tmp_path / "proj" / SID / "subagents" / "agent-z2.jsonl")
    done = run_cli("import", "claude-code", str(main), "--store", str(tmp_path / "s"), "--json")
    assert done.returncode == 0, done.stderr
    (imported,) = json.loads(done.stdout)["imported"]
    assert imported["counted"]["subagent file not read (not a regular file, or unreadable)"] == 2


# -- 10. --all goes on past a bad file and reports every one -----------------------------


def crashed(folder: Path, session_id: str) -> Path:
    cc = ClaudeCode(session_id=session_id)
    cc.user("deploy it")
    cc.assistant("msg_1", tool_use("toolu_1", command="make deploy"))
    return write(folder, f"{session_id}.jsonl", cc.data())


def test_doctor_all_reports_every_file_and_exits_with_the_worst(tmp_path: Path) -> None:
    projects = tmp_path / "projects" / "-home-dev-shop"
    good_a = age(crashed(projects, "aaaaaaaa-0000-4000-8000-000000000001"))
    live = crashed(projects, "bbbbbbbb-0000-4000-8000-000000000002")  # modified just now
    good_c = age(crashed(projects, "cccccccc-0000-4000-8000-000000000003"))
    os.mkfifo(projects / "dddddddd-0000-4000-8000-000000000004.jsonl")
    os.symlink(projects, projects / "loop")  # a symlink loop is walked once
    before_live = live.read_bytes()
    done = run_cli("doctor", "claude-code", "--all", str(tmp_path / "projects"), "--yes", "--json")
    assert done.returncode == 3, done.stderr  # unreadable is the worst here
    report = json.loads(done.stdout)
    actions = {
        Path(r.get("path") or r["diagnosis"]["path"]).name: r["action"] for r in report["repairs"]
    }
    assert actions[good_a.name] == actions[good_c.name] == "repaired"
    assert actions[live.name] == "failed"
    assert live.read_bytes() == before_live
    (unread,) = report["failed"]
    assert unread["path"].endswith("dddddddd-0000-4000-8000-000000000004.jsonl")
    assert len(report["repairs"]) == 3  # each file once, loop or not


# -- 11. a huge first line; a sessionId that is no name ---------------------------------


def test_a_first_line_over_1_mib_is_still_a_transcript(tmp_path: Path) -> None:
    cc = ClaudeCode()
    cc.user("look: " + "A" * (2 << 20))
    cc.assistant("msg_1", tool_use("toolu_1"))
    path = age(write(tmp_path, f"{SID}.jsonl", cc.data()))
    found = diagnose(str(path), "claude-code")
    assert found.status == "crashed"


def test_a_session_id_with_a_nul_is_reported_not_a_traceback(tmp_path: Path) -> None:
    cc = ClaudeCode(session_id="abc\0../../etc")
    cc.user("deploy")
    cc.assistant("msg_1", tool_use("toolu_1"))
    path = age(write(tmp_path, f"{SID}.jsonl", cc.data()))
    found = diagnose(str(path), "claude-code")
    assert found.session_id == SID
    assert any("sessionId" in p.message for p in found.problems)
    store = tmp_path / "store"
    code, _, err = cli("import", "claude-code", str(path), "--store", str(store))
    assert code == 0, err


# -- 12. a full disk mid-repair leaves the file as it was -------------------------------


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Any:
    mount = tmp_path / "tiny"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip("mounting a tmpfs needs root")
    yield mount
    subprocess.run(["umount", str(mount)], check=False)


def test_a_short_append_is_cut_back(tiny_disk: Path) -> None:
    cc = ClaudeCode()
    cc.user("deploy")
    cc.assistant("msg_1", tool_use("toolu_1", command="make deploy"))
    data = cc.data()
    # End the file 60 bytes short of a page, then fill the disk: the repair
    # line (hundreds of bytes) gets at most those 60.
    pad = (4096 - 60 - len(data) % 4096) % 4096
    cc2 = ClaudeCode()
    cc2.user("deploy" + " " * pad)
    cc2.assistant("msg_1", tool_use("toolu_1", command="make deploy"))
    data = cc2.data()
    path = tiny_disk / f"{SID}.jsonl"
    path.write_bytes(data)
    fd = os.open(tiny_disk / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass  # the disk is full
    finally:
        os.close(fd)
    age(path)
    with pytest.raises(AppendFailedError) as raised:
        doctor(str(path), "claude-code")
    assert "cut back" in raised.value.message
    assert path.read_bytes() == data


# -- 13. liveness of a writer that does not hold the file open ---------------------------


def test_claude_code_is_given_minutes_and_the_window_is_explicit(tmp_path: Path) -> None:
    path = age(crashed(tmp_path, SID), seconds=60)
    code, _, err = cli("doctor", "claude-code", str(path), "--yes")
    assert code == 4 and "--live-window" in err
    code, _, err = cli("doctor", "claude-code", str(path), "--yes", "--live-window", "30")
    assert code == 0, err
    cx = Codex()
    cx.user("deploy")
    cx.call("call_1")
    rollout = age(write(tmp_path, "rollout-2026-05-02T08-30-00-l.jsonl", cx.data()), seconds=60)
    code, _, err = cli("doctor", "codex", str(rollout), "--yes")
    assert code == 0, err


# -- 14. a future mtime; an error names its path once -----------------------------------


def test_a_future_mtime_is_not_refused_forever(tmp_path: Path) -> None:
    path = crashed(tmp_path, SID)
    future = time.time() + 3600
    os.utime(path, (future, future))
    code, _, err = cli("doctor", "claude-code", str(path), "--yes")
    assert code == 0, err
    assert "-3" not in err


def test_an_import_error_names_the_path_once(tmp_path: Path) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_text('{"hello": 1}\n')
    code, _, err = cli("import", "claude-code", str(path), "--store", str(tmp_path / "s"))
    assert code == 3 and err.count(str(path)) == 1


def test_import_file_keeps_a_child_already_imported(tmp_path: Path) -> None:
    main = cc_subagent_20(tmp_path / "proj")
    store = MemoryStore()
    child = import_file(store, str(tmp_path / "proj" / "agent-feed01.jsonl"))
    parent = import_file(store, str(main))
    assert child.subagent_of == SID and parent.session_id == SID
    again = import_file(store, str(tmp_path / "proj" / "agent-feed01.jsonl"))
    assert again.status == "already imported with its parent"
    shutil.rmtree(tmp_path / "proj")


def test_a_codex_id_that_is_no_name_is_reported(tmp_path: Path) -> None:
    cx = Codex()
    cx.lines[0] = cx.lines[0].replace(b'"id":"', b'"id":"../\\u0000')
    cx.user("deploy")
    cx.call("call_1")
    path = age(write(tmp_path, "rollout-2026-05-02T08-30-00-n.jsonl", cx.data()))
    found = diagnose(str(path), "codex")
    assert found.session_id == "rollout-2026-05-02T08-30-00-n"
    assert any("session id" in p.message for p in found.problems)


def test_the_real_2_0_crash_point_gets_a_repair_per_tool_use_line(tmp_path: Path) -> None:
    """The real 2.0.28 prefix ends right after two parallel WebSearch lines; in
    the whole file the first search's result comes next: it ran. Neither is
    said not to have run, and each repair line hangs off its own call's line."""
    real = REAL_CC.parent / "claude-code-2.0.28-full-session-five.jsonl"
    path = age(write(tmp_path, real.name, real.read_bytes()))
    found = diagnose(str(path), "claude-code")
    assert [(o.call_id, o.risk, o.rule) for o in found.owed] == [
        ("toolu_0164rGfmRNVyh2Wsrs9EEyjo", Risk.OUTCOME_UNKNOWN.value, "R4"),
        ("toolu_01WVLEr7BxFvuXXkeYEH7Xua", Risk.OUTCOME_UNKNOWN.value, "R4"),
    ]
    repairs = [json.loads(line) for line in found.lines]
    assert [r["parentUuid"] for r in repairs] == [
        "cd9e1e2b-3066-40a6-907a-fe663ab27992",
        "ca3b1312-2908-44b8-9321-54e74ce45623",
    ]
    assert all(r["sessionId"] == "10cd5911-8704-4996-9e33-32010589c357" for r in repairs)
    assert all(r["version"] == "2.0.28" for r in repairs)
    doctor(str(path), "claude-code")
    assert exports("claude-code", path) == []


def test_a_hook_attachment_is_evidence_that_call_started(tmp_path: Path) -> None:
    """Claude Code 2.1.85 and later record hooks as attachment lines."""
    cc = ClaudeCode("2.1.90")
    cc.user("clean up")
    (line_a,) = cc.assistant("msg_1", tool_use("toolu_a", command="rm -rf build"))
    (line_b,) = cc.assistant("msg_1", tool_use("toolu_b", command="ls"))
    for call_id, exit_code in (("toolu_a", 0), ("toolu_b", 2)):
        attachment = {
            "type": "hook_success",
            "hookEvent": "PreToolUse",
            "hookName": "PreToolUse:Bash",
            "toolUseID": call_id,
            "exitCode": exit_code,
        }
        cc.add(cc.envelope("attachment", cc.last, attachment=attachment), chain=False)
    path = age(write(tmp_path, f"{SID}.jsonl", cc.data()))
    owed = {o.call_id: o.rule for o in diagnose(str(path), "claude-code").owed}
    # A hook that blocked its call proves nothing either way.
    assert owed == {"toolu_a": "R1", "toolu_b": "R4"}
    assert line_a["uuid"] != line_b["uuid"]
