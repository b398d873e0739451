"""Rescuing Claude Code and Codex sessions: doctor appends in the file's own
format, never moves a byte but a torn fragment, and import brings them in."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import turnlog
from entry_point import cli
from foreign_fixtures import (
    CLAUDE_CODE_CRASHES,
    CODEX_CRASHES,
    ClaudeCode,
    cc_user_interrupt,
    cx_aborted,
    healthy_turn,
    write,
)
from paths import ROOT
from turnlog.core.fold import fold
from turnlog.formats.rescue import diagnose, read_transcript
from turnlog.providers import PROVIDERS, render, validate

SHARED = ROOT.parent / "shared" / "formats"


def age(path: Path) -> None:
    """Make the file look as a crash left it: untouched for a minute."""
    past = time.time() - 3600
    os.utime(path, (past, past))


def age_all(folder: Path) -> None:
    """`age` every file under `folder`: a session's subagents' files crashed with it."""
    for path in folder.rglob("*"):
        if path.is_file():
            age(path)


def doctor(kind: str, path: Path, *extra: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    code, out, err = cli("doctor", kind, str(path), "--yes", "--json", *extra)
    return code, json.loads(out) if out.strip() else {"stderr": err}


def assert_valid(kind: str, path: Path) -> None:
    transcript = read_transcript(str(path), kind)
    provider = "anthropic" if kind == "claude-code" else "openai-responses"
    messages = fold(transcript.events).messages
    assert validate(provider, render(provider, messages)) == []


CASES = [("claude-code", name, make) for name, make in CLAUDE_CODE_CRASHES.items()] + [
    ("codex", name, make) for name, make in CODEX_CRASHES.items()
]
REPORT: dict[str, str] = {}


@pytest.mark.parametrize(("kind", "name", "make"), CASES, ids=[f"{k}: {n}" for k, n, _ in CASES])
def test_doctor_repairs_by_appending(
    tmp_path: Path, kind: str, name: str, make: Callable[[Path], Path]
) -> None:
    path = make(tmp_path)
    age_all(tmp_path)
    before = path.read_bytes()
    found = diagnose(str(path), kind)
    assert found.status == "crashed" and found.owed, found
    torn = found.torn_tail
    code, done = doctor(kind, path)
    assert code == 0, done
    # The session's subagents' own files are repaired in the same run.
    for child in tmp_path.glob("**/agent-*.jsonl"):
        assert not diagnose(str(child), kind).needs_repair, child
    after = path.read_bytes()
    kept = before[: torn.offset] if torn is not None else before
    assert after.startswith(kept)  # every byte not quarantined stayed where it was
    if torn is not None:
        sidecar = Path(f"{path}.torn-{torn.offset}")
        assert sidecar.read_bytes() == before[torn.offset :]
    again = diagnose(str(path), kind)
    assert not again.owed and not again.needs_repair, again
    assert_valid(kind, path)
    appended = after[len(kept) :]
    code, _ = doctor(kind, path)
    assert code == 0 and path.read_bytes() == after  # a second run appends nothing
    REPORT[f"{kind}: {name}"] = (
        ", ".join(f"{o.call_id} {'real output' if o.recorded else o.risk}" for o in found.owed)
        + (f"; torn fragment of {torn.size_bytes} bytes moved" if torn else "")
        + (f"; {len(found.problems)} problem(s) reported" if found.problems else "")
    )
    lines = [json.loads(line) for line in appended.splitlines() if line.strip()]
    if kind == "claude-code":
        (line,) = lines
        tip = found.lines and json.loads(found.lines[0])
        assert line["type"] == "user" and line["parentUuid"] == tip["parentUuid"]
        assert line["sessionId"] and line["version"] and line["userType"] == "external"
        assert line["timestamp"].endswith("Z") and len(line["uuid"]) == 36
        blocks = line["message"]["content"]
        assert [b["tool_use_id"] for b in blocks] == [o.call_id for o in found.owed]
        assert all(b["is_error"] is True for b in blocks)
    else:
        assert len(lines) == len(found.owed)
        for record, owed in zip(lines, found.owed, strict=True):
            payload = record.get("payload", record)
            assert payload["call_id"] == owed.call_id
            assert payload["type"].endswith("_output")


def test_doctor_report() -> None:
    """The crash shapes and what doctor did with each, for the closing note."""
    expected = {f"{kind}: {name}" for kind, name, _ in CASES}
    if set(REPORT) < expected:
        # Only `--dist loadgroup` (as `make test` runs) keeps the cases and
        # this report in one worker; a failed case fails on its own.
        pytest.skip("the doctor cases did not all run in this process")
    for shape, what in sorted(REPORT.items()):
        print(f"{shape}: {what}")
    assert set(REPORT) == expected


def test_claude_code_repair_text_by_risk_and_order(tmp_path: Path) -> None:
    path = CLAUDE_CODE_CRASHES["parallel, one answered"](tmp_path)
    found = diagnose(str(path), "claude-code")
    assert [o.call_id for o in found.owed] == ["toolu_b"]
    assert found.owed[0].risk == "tool_outcome_unknown"
    assert "whether it ran is unknown" in found.owed[0].text


def test_codex_real_output_is_used_and_says_so(tmp_path: Path) -> None:
    path = CODEX_CRASHES["exec_command_end, no output"](tmp_path)
    (owed,) = diagnose(str(path), "codex").owed
    assert owed.recorded and "built 3 targets" in owed.text
    assert "real output" in owed.text
    custom = CODEX_CRASHES["custom_tool_call, no output"](tmp_path / "c")
    found = diagnose(str(custom), "codex")
    assert json.loads(found.lines[0])["payload"]["type"] == "custom_tool_call_output"


def test_subagent_files_become_child_sessions(tmp_path: Path) -> None:
    for make, agent in (
        (CLAUDE_CODE_CRASHES["2.1 subagent mid-tool"], "a1b2c3d4"),
        (CLAUDE_CODE_CRASHES["2.0 agent file, parent mid-tool"], "feed01"),
    ):
        folder = tmp_path / agent
        path = make(folder)
        transcript = read_transcript(str(path), "claude-code")
        (child,) = transcript.children
        header = child.events[0].data
        assert child.session_id == f"{transcript.session_id}.agents/{agent}"
        assert header.spawned_by.call_id == "toolu_task"  # type: ignore[attr-defined]
    inline = CLAUDE_CODE_CRASHES["1.0 inline side chain"](tmp_path / "inline")
    transcript = read_transcript(str(inline), "claude-code")
    (child,) = transcript.children
    assert child.events[0].data.spawned_by.call_id == "toolu_task"  # type: ignore[attr-defined]
    # The side chain's lines are not the parent's conversation.
    texts = [m.content for m in fold(transcript.events).messages if m.role == "assistant"]
    assert "Tests look fine." not in json.dumps(texts)


def test_progress_line_is_evidence_the_task_started(tmp_path: Path) -> None:
    path = CLAUDE_CODE_CRASHES["2.1 subagent mid-tool"](tmp_path)
    (owed,) = diagnose(str(path), "claude-code").owed
    transcript = read_transcript(str(path), "claude-code")
    found = turnlog.verdict(transcript.events)
    assert [(o.call_id, o.rule) for o in found.owed] == [("toolu_task", "R1")]
    assert owed.call_id == "toolu_task"


@pytest.mark.parametrize(
    ("kind", "make"), [("claude-code", cc_user_interrupt), ("codex", cx_aborted)]
)
def test_user_interrupt_and_healthy_sessions_are_left_alone(
    tmp_path: Path, kind: str, make: Callable[[Path], Path]
) -> None:
    path = make(tmp_path)
    age(path)
    before = path.read_bytes()
    code, done = doctor(kind, path)
    assert code == 0 and done["repairs"][0]["action"] == "nothing to repair"
    assert done["repairs"][0]["diagnosis"]["status"] == "interrupted by the user"
    assert path.read_bytes() == before
    cc = ClaudeCode()
    healthy_turn(cc)
    healthy = write(tmp_path / "h", "healthy.jsonl", cc.data())
    age(healthy)
    code, done = doctor("claude-code", healthy)
    assert code == 0 and done["repairs"][0]["diagnosis"]["status"] == "healthy"


def test_nul_padding_is_reported_not_dropped(tmp_path: Path) -> None:
    path = CLAUDE_CODE_CRASHES["NUL padding mid-file"](tmp_path)
    found = diagnose(str(path), "claude-code")
    assert any("4096 NUL bytes" in p.message for p in found.problems)
    age(path)
    code, out, _ = cli("doctor", "claude-code", str(path), "--dry-run")
    assert code == 1 and "4096 NUL bytes" in out
    assert b"\0" * 4096 in path.read_bytes()


def test_live_file_is_refused_unless_forced(tmp_path: Path) -> None:
    path = CLAUDE_CODE_CRASHES["after tool_use"](tmp_path)
    before = path.read_bytes()
    code, _, err = cli("doctor", "claude-code", str(path), "--yes")
    assert code == 4 and "modified" in err and path.read_bytes() == before
    age(path)
    # Held open by another process (the check skips its own pid): it says
    # "ready" once the file is open, however slow its start.
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import sys, time\nf = open({str(path)!r})\nprint('ready', flush=True)\n"
            "time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        code, _, err = cli("doctor", "claude-code", str(path), "--yes")
        assert code == 4 and "open in process" in err and path.read_bytes() == before
    finally:
        holder.kill()
        holder.wait()
    code, _, _ = cli("doctor", "claude-code", str(path), "--yes", "--force")
    assert code == 0 and path.read_bytes() != before


def test_doctor_asks_and_dry_run_writes_nothing(tmp_path: Path) -> None:
    path = CLAUDE_CODE_CRASHES["after tool_use"](tmp_path)
    age(path)
    before = path.read_bytes()
    code, out, _ = cli("doctor", "claude-code", str(path), "--dry-run")
    assert code == 1 and "toolu_02" in out and path.read_bytes() == before
    code, _, err = cli("doctor", "claude-code", str(path))  # no terminal to ask on
    assert code == 2 and "--yes" in err and path.read_bytes() == before


def test_doctor_refuses_what_is_not_that_kind(tmp_path: Path) -> None:
    with turnlog.open(tmp_path / "ours.jsonl") as log:
        log.user("hi")
    codex = CODEX_CRASHES["after function_call"](tmp_path)
    for path, kind in ((tmp_path / "ours.jsonl", "claude-code"), (codex, "claude-code")):
        age(path)
        before = path.read_bytes()
        code, _, err = cli("doctor", kind, str(path), "--yes")
        assert code == 3 and "left unchanged" in err
        assert path.read_bytes() == before


def test_shared_samples_read_and_need_no_repair(tmp_path: Path) -> None:
    if not SHARED.exists():
        pytest.skip("the shared format samples are not beside this checkout")
    for name, kind in (
        ("claude-code-sample.jsonl", "claude-code"),
        ("codex-sample.jsonl", "codex"),
    ):
        copy = tmp_path / name
        shutil.copy(SHARED / name, copy)
        found = diagnose(str(copy), kind)
        assert not found.owed and not found.problems
        assert_valid(kind, copy)


def test_folder_scan_finds_crashed_sessions_from_their_tails(tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    for index in range(30):
        cc = ClaudeCode(session_id=f"5d1f6a9e-0000-4000-8000-{index:012d}")
        healthy_turn(cc)
        if index % 10 == 0:
            cc.user("deploy")
            cc.assistant(
                "msg_x", {"type": "tool_use", "id": f"toolu_{index}", "name": "Bash", "input": {}}
            )
        path = write(projects / "-home-dev-shop", f"{cc.session_id}.jsonl", cc.data())
        age(path)
    code, out, _ = cli("doctor", "claude-code", "--all", str(projects), "--dry-run", "--json")
    assert code == 1
    code, out, _ = cli("doctor", "claude-code", "--all", str(projects), "--yes", "--json")
    assert code == 0
    repaired = json.loads(out)["repairs"]
    assert sorted(r["diagnosis"]["owed"][0]["call_id"] for r in repaired) == [
        "toolu_0",
        "toolu_10",
        "toolu_20",
    ]
    code, out, _ = cli("doctor", "claude-code", "--all", str(projects), "--yes", "--json")
    assert code == 0 and json.loads(out)["repairs"] == []


@pytest.mark.parametrize(("kind", "name", "make"), CASES, ids=[f"{k}: {n}" for k, n, _ in CASES])
def test_import_then_export_validates(
    tmp_path: Path, kind: str, name: str, make: Callable[[Path], Path]
) -> None:
    path = make(tmp_path / "src")
    store = tmp_path / "store"
    code, out, err = cli("import", kind, str(path), "--store", str(store), "--json")
    assert code == 0, err
    (done,) = json.loads(out)["imported"]
    session = done["session_id"]
    assert turnlog.inspect(store, session).status == "interrupted"
    for provider in PROVIDERS:
        code, out, _ = cli(
            "export",
            session,
            "--store",
            str(store),
            "--to",
            provider,
            "--patch-in-memory",
            "--validate",
            "--json",
        )
        assert code == 0, (provider, out)
    for child in done["subagents"]:
        assert turnlog.inspect(store, child).status in ("interrupted", "finished", "idle")
    # The imported crash recovers like any turnlog session, then exports valid.
    code, _, _ = cli("recover", session, "--store", str(store))
    assert code == 0
    for provider in PROVIDERS:
        code, out, _ = cli("export", session, "--store", str(store), "--to", provider, "--validate")
        assert code == 0, (provider, out)
    # A second import of the same file is refused, and loses nothing.
    code, _, err = cli("import", kind, str(path), "--store", str(store))
    assert code == 3 and "already" in err


def test_a_whole_last_record_without_its_newline_is_kept_not_cut(tmp_path: Path) -> None:
    path = CLAUDE_CODE_CRASHES["after tool_use"](tmp_path)
    path.write_bytes(path.read_bytes().rstrip(b"\n"))  # the newline never reached the disk
    age(path)
    before = path.read_bytes()
    found = diagnose(str(path), "claude-code")
    assert found.torn_tail is None and [o.call_id for o in found.owed] == ["toolu_02"]
    code, _ = doctor("claude-code", path)
    after = path.read_bytes()
    assert code == 0 and after.startswith(before + b"\n")  # a newline first, nothing cut
    assert not diagnose(str(path), "claude-code").needs_repair
    assert not list(tmp_path.glob("*.torn-*"))


def test_library_doctor_proves_the_kind_before_any_byte_moves(tmp_path: Path) -> None:
    from turnlog import NotASessionError
    from turnlog.formats.rescue import doctor as repair

    with turnlog.open(tmp_path / "ours.jsonl") as log:
        log.user("hi")
    ours = tmp_path / "ours.jsonl"
    ours.write_bytes(ours.read_bytes() + b'{"seq":2,"ty')  # a torn tail of our own
    age(ours)
    before = ours.read_bytes()
    for kind in ("claude-code", "codex", "auto"):
        with pytest.raises(NotASessionError):
            repair(str(ours), kind)
    assert ours.read_bytes() == before and not list(tmp_path.glob("*.torn-*"))


def test_a_subagent_file_is_repaired_on_its_side_chain(tmp_path: Path) -> None:
    parent = CLAUDE_CODE_CRASHES["2.1 subagent mid-tool"](tmp_path)
    (agent_file,) = tmp_path.glob("*/subagents/agent-*.jsonl")
    age_all(tmp_path)
    before = parent.read_bytes()
    code, _ = doctor("claude-code", agent_file)
    assert parent.read_bytes() == before  # named alone, a subagent's file is repaired alone
    line = json.loads(agent_file.read_bytes().splitlines()[-1])
    assert code == 0 and line["isSidechain"] is True and line["agentId"] == "a1b2c3d4"
    assert [b["tool_use_id"] for b in line["message"]["content"]] == ["toolu_sub"]


def test_a_whole_record_glued_before_a_cut_fragment_is_kept(tmp_path: Path) -> None:
    """The newline of the last record was lost, then the next append was cut:
    only the cut fragment may move."""
    path = CLAUDE_CODE_CRASHES["after tool_use"](tmp_path)
    whole = path.read_bytes().rstrip(b"\n")
    fragment = b'{"parentUuid":"e9","isSidechain":false,"type":"user","mess'
    path.write_bytes(whole + fragment)
    age(path)
    found = diagnose(str(path), "claude-code")
    assert found.torn_tail is not None and found.torn_tail.offset == len(whole)
    assert [o.call_id for o in found.owed] == ["toolu_02"]  # the glued record still counts
    code, _ = doctor("claude-code", path)
    after = path.read_bytes()
    assert code == 0 and after.startswith(whole + b"\n")  # the repair on a line of its own
    assert Path(f"{path}.torn-{len(whole)}").read_bytes() == fragment
    again = diagnose(str(path), "claude-code")
    assert not again.needs_repair and not again.problems
