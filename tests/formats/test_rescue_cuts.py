"""Rescue verdicts against what a transcript proves: real and published-structure
sessions cut at every line and at random offsets, damaged the ways crashes damage
files, then diagnosed, repaired and exported.

The counts a run measured are printed (run with `-s`) and checked: no call is
ever called "did not run" when the uncut file shows it ran, no repair answers a
call asked only on a line the tool cannot load, and every repaired file exports
valid, recovered or not.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from foreign_fixtures import (
    CLAUDE_CODE_CRASHES,
    CODEX_CRASHES,
    cc_whole_21,
    cx_whole,
)
from paths import TESTS
from turnlog.core.fold import fold
from turnlog.core.verdict import verdict
from turnlog.errors import NotASessionError
from turnlog.events import Risk
from turnlog.formats.foreign import parse
from turnlog.formats.rescue import diagnose, doctor, read_transcript
from turnlog.ops.recover import plan
from turnlog.providers import render, validate

CORPUS = TESTS / "fixtures" / "foreign"
# Real files of public projects (tests/fixtures/foreign/README.md).
REAL = [
    ("claude-code", CORPUS / "claude-code-2.1.14-coverage-test-fix.jsonl"),
    ("claude-code", CORPUS / "claude-code-2.0.28-full-session-five.jsonl"),
    ("claude-code", CORPUS / "claude-code-2.0.29-task-in-flight.jsonl"),
    ("codex", CORPUS / "codex-0.40.0-rollout-2025-09-24T19-22-20.jsonl"),
]
BUILT: list[tuple[str, Callable[[Path], Path]]] = [
    ("claude-code", cc_whole_21),
    ("codex", cx_whole),
    *(("claude-code", make) for make in CLAUDE_CODE_CRASHES.values()),
    *(("codex", make) for make in CODEX_CRASHES.values()),
]
COUNTS: Counter[str] = Counter()
RANDOM_CUTS_PER_FILE = 12


def sessions(tmp_path: Path) -> Iterator[tuple[str, str, bytes]]:
    """(kind, name, bytes) of every uncut session: the real corpus and the built ones."""
    for kind, path in REAL:
        yield kind, path.name, path.read_bytes()
    for index, (kind, make) in enumerate(BUILT):
        folder = tmp_path / f"built-{index}"
        path = make(folder)
        yield kind, f"{make.__name__}", path.read_bytes()


def lines_of(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def asks_for_calls(kind: str, line: bytes) -> bool:
    try:
        record: Any = json.loads(line)
    except ValueError:
        return False
    if not isinstance(record, dict):
        return False
    if kind == "claude-code":
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        return record.get("type") == "assistant" and any(
            isinstance(b, dict) and b.get("type") == "tool_use" for b in content or ()
        )
    payload = record.get("payload", record)
    return isinstance(payload, dict) and payload.get("type") in (
        "function_call",
        "custom_tool_call",
        "local_shell_call",
    )


def answered_later(kind: str, rest: bytes, call_id: str) -> bool:
    """The uncut file shows a result for `call_id` after the cut: the call ran."""
    needle = f'"tool_use_id":"{call_id}"' if kind == "claude-code" else f'"call_id":"{call_id}"'
    for line in lines_of(rest):
        squeezed = line.replace(b" ", b"")
        if needle.encode() in squeezed and (
            b"tool_result" in squeezed or b"_output" in squeezed or b"exec_command_end" in squeezed
        ):
            return True
    return False


def loadable_calls(kind: str, data: bytes) -> set[str]:
    """Call ids asked on lines the tool itself loads (whole, undamaged lines)."""
    out: set[str] = set()
    for record in parse(data).records:
        if record.damaged:
            continue
        line = json.dumps(record.data).encode()
        if not asks_for_calls(kind, line):
            continue
        if kind == "claude-code":
            for block in record.data["message"]["content"]:
                if block.get("type") == "tool_use":
                    out.add(block["id"])
        else:
            payload = record.data.get("payload", record.data)
            out.add(str(payload.get("call_id") or payload.get("id")))
    return out


def exports_valid(kind: str, path: Path) -> None:
    """The repaired file, as imported, exports valid; so does it once recovered."""
    transcript = read_transcript(str(path), kind)
    provider = "anthropic" if kind == "claude-code" else "openai-responses"
    messages = fold(transcript.events).messages
    if not messages:
        # Cut before the first message: there is no conversation to send.
        return
    assert validate(provider, render(provider, messages)) == [], path
    recovered = [*transcript.events, *plan(transcript.events).events]
    assert validate(provider, render(provider, fold(recovered).messages)) == [], path
    COUNTS["exports validated"] += 2


def aged(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    past = time.time() - 3600
    os.utime(path, (past, past))
    return path


def judge_and_repair(kind: str, path: Path, rest: bytes) -> None:
    """Diagnose a cut file, check each verdict against the uncut rest, repair it,
    and check that the repair kept every byte, settled it and exports valid."""
    before = path.read_bytes()
    found = diagnose(str(path), kind)
    loadable = loadable_calls(kind, before)
    for owed in found.owed:
        COUNTS["owed verdicts checked"] += 1
        assert owed.call_id in loadable, f"answers a call the tool never loads: {owed}"
        if owed.risk == Risk.NOT_STARTED.value:
            COUNTS["tool_not_started verdicts"] += 1
            if answered_later(kind, rest, owed.call_id):
                COUNTS["tool_not_started verdicts false"] += 1
        if answered_later(kind, rest, owed.call_id):
            COUNTS["owed calls that ran (result later in the uncut file)"] += 1
    done = doctor(str(path), kind, force=True)
    after = path.read_bytes()
    torn = found.torn_tail
    kept = before[: torn.offset] if torn is not None else before
    assert after.startswith(kept)
    if done.action == "repaired":
        COUNTS["files repaired"] += 1
    again = diagnose(str(path), kind)
    assert not again.needs_repair, again
    assert doctor(str(path), kind, force=True).appended_bytes == 0
    exports_valid(kind, path)


def damaged_variants(lines: list[bytes], index: int) -> Iterator[tuple[str, bytes]]:
    """The cut after `lines[index]`, followed by what real crashes leave."""
    head = b"".join(lines[: index + 1])
    following = lines[index + 1 :]
    if following:
        nxt = following[0]
        yield "NUL run before a whole line", head + b"\0" * 512 + nxt
        yield "a cut line glued to nothing (torn)", head + nxt[: len(nxt) // 2]
    if len(following) >= 2:
        first, second = following[0], following[1]
        yield "two whole records glued", head + first.rstrip(b"\n") + second
        yield "a cut record spliced before the next", head + first[: len(first) // 2] + second


def resumed_with_a_prompt(cut: bytes) -> bytes:
    """What `claude --resume` and "continue" append after a crash: the prompt,
    then Claude Code's note of the 400 it got, in the session's own envelope."""
    last = json.loads(lines_of(cut)[-1])
    envelope = {k: last[k] for k in ("isSidechain", "userType", "cwd", "sessionId", "version")}
    prompt = {
        "parentUuid": last["uuid"],
        **envelope,
        "type": "user",
        "message": {"role": "user", "content": "continue"},
        "uuid": "5e5e5e5e-0000-4000-8000-000000000001",
        "timestamp": "2026-12-01T00:00:00.000Z",
    }
    error = {
        "parentUuid": prompt["uuid"],
        **envelope,
        "type": "assistant",
        "message": {
            "model": "<synthetic>",
            "id": "c0ffee00-0000-4000-8000-000000000002",
            "role": "assistant",
            "content": [
                {
                    "type": "text",
                    "text": "API Error: 400 tool_use ids were found "
                    "without tool_result blocks immediately after",
                }
            ],
        },
        "isApiErrorMessage": True,
        "uuid": "5e5e5e5e-0000-4000-8000-000000000002",
        "timestamp": "2026-12-01T00:00:01.000Z",
    }
    return cut + b"".join(json.dumps(r).encode() + b"\n" for r in (prompt, error))


def resumed_cut_is_still_repaired(path: Path, cut: bytes) -> None:
    """Item 2: the orphans of a cut stay owed once a prompt was typed after
    the crash, and each repair hangs off the line that asked for its calls."""
    owed = [o.call_id for o in diagnose(str(aged(path, cut)), "claude-code").owed]
    if not owed:
        return
    asked_on = {}
    for parsed in parse(cut).records:
        record = parsed.data
        content = (record.get("message") or {}).get("content")
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") == "tool_use":
                asked_on[block["id"]] = record["uuid"]
    found = diagnose(str(aged(path, resumed_with_a_prompt(cut))), "claude-code")
    assert [o.call_id for o in found.owed] == owed
    for line in found.lines:
        repair = json.loads(line)
        ids = {b["tool_use_id"] for b in repair["message"]["content"]}
        assert {asked_on[i] for i in ids} == {repair["parentUuid"]}
    COUNTS["cuts resumed with a new prompt, still repaired"] += 1
    judge_and_repair("claude-code", path, b"")


def test_every_cut_of_every_session(tmp_path: Path) -> None:
    # What this test checks at its end is what it counted itself, whatever
    # else ran before it in this process.
    COUNTS.clear()
    rng = random.Random(20)
    for kind, name, data in sessions(tmp_path / "uncut"):
        COUNTS["sessions"] += 1
        lines = lines_of(data)
        work = tmp_path / "cuts"
        work.mkdir(exist_ok=True)
        target = work / (name if name.endswith(".jsonl") else f"{name}.jsonl")
        for index in range(len(lines)):
            cut = b"".join(lines[: index + 1])
            rest = data[len(cut) :]
            COUNTS["cuts at a line end"] += 1
            if asks_for_calls(kind, lines[index]):
                COUNTS["cuts right after a line asking for calls"] += 1
                if kind == "claude-code":
                    resumed_cut_is_still_repaired(target, cut)
            judge_and_repair(kind, aged(target, cut), rest)
            for _, damaged in damaged_variants(lines, index):
                COUNTS["damaged cuts"] += 1
                judge_and_repair(kind, aged(target, damaged), b"")
        for _ in range(RANDOM_CUTS_PER_FILE):
            offset = rng.randrange(1, len(data))
            COUNTS["cuts at a random offset"] += 1
            if offset < len(lines[0]) - 1:
                # Inside the first line: nothing proves what the file is.
                before = aged(target, data[:offset]).read_bytes()
                with pytest.raises(NotASessionError):
                    doctor(str(target), kind, force=True)
                assert target.read_bytes() == before
                COUNTS["random cuts inside the first line (refused, unchanged)"] += 1
                continue
            judge_and_repair(kind, aged(target, data[:offset]), data[offset:])
            for sidecar in work.glob("*.torn-*"):
                sidecar.unlink()
    print("\nrescue cut counts:", json.dumps(dict(sorted(COUNTS.items())), indent=1))
    assert COUNTS["tool_not_started verdicts false"] == 0
    assert COUNTS["tool_not_started verdicts"] == 0
    assert COUNTS["cuts right after a line asking for calls"] >= 20
    assert COUNTS["owed calls that ran (result later in the uncut file)"] > 0
    assert COUNTS["cuts resumed with a new prompt, still repaired"] >= 10


def test_imported_cuts_never_say_not_started(tmp_path: Path) -> None:
    """The same cuts imported: recovery's verdicts on the imported events claim
    only what the file proves (a progress line proves that call started, and
    nothing about its siblings)."""
    for kind, _, data in sessions(tmp_path / "uncut"):
        lines = lines_of(data)
        for index in range(len(lines)):
            path = tmp_path / "cut.jsonl"
            path.write_bytes(b"".join(lines[: index + 1]))
            events = read_transcript(str(path), kind).events
            for owed in verdict(events).owed:
                assert owed.risk != Risk.NOT_STARTED.value, (kind, index, owed)
