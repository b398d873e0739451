"""Claude Code and Codex transcripts built the way the tools write them, and cut
the way a crash cuts them (formats as documented in the shared formats notes)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

SID = "5d1f6a9e-0000-4000-8000-00000000c0de"
CX = "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5"


def dumps(record: dict[str, Any]) -> bytes:
    return json.dumps(record, separators=(",", ":")).encode() + b"\n"


class ClaudeCode:
    """Lines of one Claude Code session, chained by parentUuid."""

    def __init__(self, version: str = "2.1.0", *, session_id: str = SID) -> None:
        self.version = version
        self.session_id = session_id
        self.lines: list[dict[str, Any]] = []
        self.count = 0
        self.last: str | None = None

    def _uuid(self) -> str:
        self.count += 1
        return f"e{self.count:07d}-0000-4000-8000-{abs(hash(self.session_id)) % 10**12:012d}"

    def envelope(self, kind: str, parent: str | None, **extra: Any) -> dict[str, Any]:
        uuid = self._uuid()
        line = {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/home/dev/shop",
            "sessionId": self.session_id,
            "version": self.version,
            "gitBranch": "main",
            "type": kind,
            **extra,
            "uuid": uuid,
            "timestamp": f"2026-10-02T00:36:{self.count % 60:02d}.000Z",
        }
        return line

    def add(self, line: dict[str, Any], *, chain: bool = True) -> dict[str, Any]:
        self.lines.append(line)
        if chain:
            self.last = line["uuid"]
        return line

    def user(self, text: str) -> dict[str, Any]:
        return self.add(self.envelope("user", self.last, message={"role": "user", "content": text}))

    def assistant(self, message_id: str, *blocks: dict[str, Any]) -> list[dict[str, Any]]:
        """One API response, one content block per line, all sharing message.id."""
        out = []
        for block in blocks:
            message = {
                "model": "claude-opus-4-1",
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "content": [block],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 5},
            }
            out.append(
                self.add(self.envelope("assistant", self.last, requestId="req_1", message=message))
            )
        return out

    def result(
        self, call_id: str, text: str, *, parent: str | None = None, is_error: bool = False
    ) -> dict[str, Any]:
        block = {
            "tool_use_id": call_id,
            "type": "tool_result",
            "content": text,
            "is_error": is_error,
        }
        return self.add(
            self.envelope(
                "user",
                parent or self.last,
                message={"role": "user", "content": [block]},
                toolUseResult={"stdout": text, "stderr": "", "interrupted": False},
            )
        )

    def turn_end(self) -> None:
        self.add(self.envelope("system", self.last, subtype="turn_duration", durationMs=1200))

    def data(self) -> bytes:
        return b"".join(dumps(line) for line in self.lines)


def tool_use(call_id: str, name: str = "Bash", **arguments: Any) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": call_id,
        "name": name,
        "input": arguments or {"command": "ls"},
    }


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


THINKING = {
    "type": "thinking",
    "thinking": "Charge it now.",
    "signature": "EqQBCkgIARABGAIiQL2signature",
}


def healthy_turn(cc: ClaudeCode) -> None:
    cc.user("list the files")
    cc.assistant("msg_01", tool_use("toolu_01"))
    cc.result("toolu_01", "README.md")
    cc.assistant("msg_02", text("There is one file."))
    cc.turn_end()


# -- Claude Code crash shapes: each writes files into a folder, returns the main file --


def cc_after_tool_use(folder: Path) -> Path:
    cc = ClaudeCode()
    healthy_turn(cc)
    cc.user("deploy it")
    cc.assistant("msg_03", text("Deploying."), tool_use("toolu_02", command="make deploy"))
    return write(folder, f"{SID}.jsonl", cc.data())


def cc_mid_line(folder: Path) -> Path:
    cc = ClaudeCode()
    healthy_turn(cc)
    cc.user("deploy it")
    cc.assistant("msg_03", tool_use("toolu_02", command="make deploy"))
    cut = dumps(
        cc.envelope("assistant", cc.last, message={"role": "assistant", "content": "partial"})
    )
    return write(folder, f"{SID}.jsonl", cc.data() + cut[: len(cut) // 2])


def cc_parallel_one_answered(folder: Path) -> Path:
    cc = ClaudeCode()
    cc.user("read both files")
    first, _ = cc.assistant("msg_01", tool_use("toolu_a", "Read"), tool_use("toolu_b", "Read"))
    # Each result's parentUuid is its own tool_use line: results branch.
    cc.result("toolu_a", "contents of a", parent=first["uuid"])
    return write(folder, f"{SID}.jsonl", cc.data())


def cc_after_thinking(folder: Path) -> Path:
    cc = ClaudeCode()
    cc.user("charge the card")
    cc.assistant("msg_01", THINKING, tool_use("toolu_pay", "Bash", command="./charge 20"))
    return write(folder, f"{SID}.jsonl", cc.data())


def cc_resume_copy(folder: Path) -> Path:
    """A resumed session's file starts with a copy of the old file's tail."""
    cc = ClaudeCode()
    healthy_turn(cc)
    copied = cc.data()
    cc.user("deploy it")
    cc.assistant("msg_03", tool_use("toolu_02", command="make deploy"))
    return write(folder, f"{SID}.jsonl", copied + cc.data())


def cc_user_interrupt(folder: Path) -> Path:
    cc = ClaudeCode()
    cc.user("delete the cache")
    cc.assistant("msg_01", tool_use("toolu_rm", command="rm -rf cache"))
    cc.result(
        "toolu_rm",
        "The user doesn't want to proceed with this tool use. The tool use was rejected.",
        is_error=True,
    )
    cc.add(
        cc.envelope(
            "user",
            cc.last,
            message={
                "role": "user",
                "content": [text("[Request interrupted by user for tool use]")],
            },
        )
    )
    cc.user("never mind")
    cc.add(
        cc.envelope(
            "user", cc.last, message={"role": "user", "content": "[Request interrupted by user]"}
        )
    )
    return write(folder, f"{SID}.jsonl", cc.data())


def cc_nul_padding(folder: Path) -> Path:
    cc = ClaudeCode()
    healthy_turn(cc)
    before = cc.data()
    cc.lines.clear()
    cc.user("deploy it")
    cc.assistant("msg_03", tool_use("toolu_02", command="make deploy"))
    return write(folder, f"{SID}.jsonl", before + b"\0" * 4096 + cc.data())


def cc_subagent_21(folder: Path) -> Path:
    """2.1: the Task agent's lines in <session>/subagents/, progress lines in the main file."""
    cc = ClaudeCode()
    cc.user("audit the repo")
    cc.assistant(
        "msg_01", tool_use("toolu_task", "Task", prompt="check the tests", description="audit")
    )
    cc.add(
        {
            "parentUuid": cc.last,
            "isSidechain": False,
            "type": "progress",
            "data": {"type": "agent_progress", "agentId": "a1b2c3d4"},
            "parentToolUseID": "toolu_task",
            "toolUseID": "toolu_task",
            "uuid": cc._uuid(),
            "timestamp": "2026-10-02T00:37:00.000Z",
            "sessionId": SID,
        },
        chain=False,
    )
    agent = ClaudeCode(session_id=SID)
    agent.user("check the tests")
    agent.assistant("msg_a1", tool_use("toolu_sub", command="pytest"))
    for line in agent.lines:
        line["isSidechain"] = True
        line["agentId"] = "a1b2c3d4"
    write(folder / SID / "subagents", "agent-a1b2c3d4.jsonl", agent.data())
    return write(folder, f"{SID}.jsonl", cc.data())


def cc_subagent_20(folder: Path) -> Path:
    """2.0: agent-<id>.jsonl beside the session; the parent's result names the agent."""
    cc = ClaudeCode("2.0.14")
    cc.user("audit the repo")
    cc.assistant("msg_01", tool_use("toolu_task", "Task", prompt="check the tests"))
    agent = ClaudeCode("2.0.14", session_id=SID)
    agent.user("check the tests")
    agent.assistant("msg_a1", tool_use("toolu_sub", command="pytest"))
    agent.result("toolu_sub", "3 passed")
    agent.assistant("msg_a2", text("All tests pass."))
    for line in agent.lines:
        line["isSidechain"] = True
        line["agentId"] = "feed01"
    write(folder, "agent-feed01.jsonl", agent.data())
    line = cc.result("toolu_task", "All tests pass.")
    line["toolUseResult"] = {"agentId": "feed01", "content": [text("All tests pass.")]}
    cc.assistant("msg_02", tool_use("toolu_push", command="git push"))
    return write(folder, f"{SID}.jsonl", cc.data())


def cc_inline_sidechain_10(folder: Path) -> Path:
    """1.0: the Task agent's lines inline in the main file, isSidechain true."""
    cc = ClaudeCode("1.0.98")
    cc.user("audit the repo")
    cc.assistant("msg_01", tool_use("toolu_task", "Task", prompt="check the tests"))
    task_line = cc.last
    side = ClaudeCode("1.0.98", session_id=SID)
    side.count = 100
    side.user("check the tests")
    side.assistant("msg_s1", text("Tests look fine."))
    for line in side.lines:
        line["isSidechain"] = True
    cc.lines.extend(side.lines)
    cc.last = task_line
    return write(folder, f"{SID}.jsonl", cc.data())


CLAUDE_CODE_CRASHES: dict[str, Callable[[Path], Path]] = {
    "after tool_use": cc_after_tool_use,
    "mid-line": cc_mid_line,
    "parallel, one answered": cc_parallel_one_answered,
    "after thinking with signature": cc_after_thinking,
    "resume copy with repeated uuids": cc_resume_copy,
    "NUL padding mid-file": cc_nul_padding,
    "2.1 subagent mid-tool": cc_subagent_21,
    "2.0 agent file, parent mid-tool": cc_subagent_20,
    "1.0 inline side chain": cc_inline_sidechain_10,
}


# -- Codex ------------------------------------------------------------------------------


class Codex:
    def __init__(self, *, legacy: bool = False) -> None:
        self.legacy = legacy
        self.lines: list[bytes] = []
        self.seconds = 0
        if legacy:
            self.lines.append(
                dumps(
                    {
                        "id": CX,
                        "timestamp": "2025-04-01T10:00:00.000Z",
                        "instructions": "",
                        "git": {},
                    }
                )
            )
        else:
            self.line(
                "session_meta",
                {
                    "id": CX,
                    "timestamp": "2026-05-02T08:30:00.000Z",
                    "cwd": "/home/dev/eng",
                    "cli_version": "0.104.0",
                },
            )

    def line(self, kind: str, payload: dict[str, Any]) -> None:
        self.seconds += 1
        if self.legacy:
            if kind == "response_item":
                self.lines.append(dumps(payload))
            return
        stamp = f"2026-05-02T08:30:{self.seconds % 60:02d}.000Z"
        self.lines.append(dumps({"timestamp": stamp, "type": kind, "payload": payload}))

    def item(self, **payload: Any) -> None:
        self.line("response_item", payload)

    def event(self, **payload: Any) -> None:
        self.line("event_msg", payload)

    def user(self, words: str) -> None:
        self.item(type="message", role="user", content=[{"type": "input_text", "text": words}])
        self.event(type="user_message", message=words, kind="plain")
        self.event(type="task_started", turn_id=f"turn-{self.seconds}")

    def call(self, call_id: str, command: str = "ls") -> None:
        self.item(
            type="function_call",
            name="shell_command",
            arguments=json.dumps({"command": command}),
            call_id=call_id,
        )

    def output(self, call_id: str, text_value: str) -> None:
        self.item(type="function_call_output", call_id=call_id, output=text_value)

    def answer(self, words: str) -> None:
        self.item(
            type="message", role="assistant", content=[{"type": "output_text", "text": words}]
        )
        self.event(type="task_complete", last_agent_message=words)

    def data(self) -> bytes:
        return b"".join(self.lines)


def codex_healthy(cx: Codex) -> None:
    cx.user("run the tests")
    cx.item(
        type="reasoning",
        summary=[{"type": "summary_text", "text": "run"}],
        encrypted_content="gAAAA_enc",
    )
    cx.call("call_A", "go test")
    cx.output("call_A", "Exit code: 0\nOutput:\nok\n")
    cx.answer("Tests pass.")


def cx_after_call(folder: Path) -> Path:
    cx = Codex()
    codex_healthy(cx)
    cx.user("deploy")
    cx.call("call_D", "make deploy")
    cx.event(type="exec_command_begin", call_id="call_D", command=["make", "deploy"])
    return write(folder, "rollout-2026-05-02T08-30-00-a.jsonl", cx.data())


def cx_exec_end_no_output(folder: Path) -> Path:
    cx = Codex()
    cx.user("build")
    cx.call("call_B", "make")
    cx.event(type="exec_command_begin", call_id="call_B", command=["make"])
    cx.event(
        type="exec_command_end",
        call_id="call_B",
        exit_code=0,
        aggregated_output="built 3 targets\n",
    )
    return write(folder, "rollout-2026-05-02T08-30-00-b.jsonl", cx.data())


def cx_custom_tool_call(folder: Path) -> Path:
    cx = Codex()
    cx.user("patch the readme")
    cx.item(
        type="custom_tool_call",
        status="completed",
        call_id="call_P",
        name="apply_patch",
        input="*** Begin Patch\n*** End Patch",
    )
    return write(folder, "rollout-2026-05-02T08-30-00-c.jsonl", cx.data())


def cx_compacted(folder: Path) -> Path:
    cx = Codex()
    codex_healthy(cx)
    cx.line(
        "compacted",
        {
            "message": "Summary: tests pass.",
            "replacement_history": [
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "run the tests"}],
                }
            ],
        },
    )
    cx.user("now deploy")
    cx.call("call_E", "make deploy")
    return write(folder, "rollout-2026-05-02T08-30-00-d.jsonl", cx.data())


def cx_legacy(folder: Path) -> Path:
    cx = Codex(legacy=True)
    cx.lines.append(dumps({"record_type": "state"}))
    cx.item(type="message", role="user", content=[{"type": "input_text", "text": "list files"}])
    cx.call("call_L", "ls")
    return write(folder, "rollout-2025-04-01-legacy.jsonl", cx.data())


def cx_parallel_one_answered(folder: Path) -> Path:
    cx = Codex()
    cx.user("check both")
    cx.call("call_1", "cat a")
    cx.call("call_2", "cat b")
    cx.output("call_1", "a")
    return write(folder, "rollout-2026-05-02T08-30-00-e.jsonl", cx.data())


CODEX_CRASHES: dict[str, Callable[[Path], Path]] = {
    "after function_call": cx_after_call,
    "exec_command_end, no output": cx_exec_end_no_output,
    "custom_tool_call, no output": cx_custom_tool_call,
    "compacted, then crash": cx_compacted,
    "legacy format": cx_legacy,
    "parallel, one answered": cx_parallel_one_answered,
}


def cx_aborted(folder: Path) -> Path:
    cx = Codex()
    cx.user("deploy")
    cx.call("call_X", "make deploy")
    cx.event(type="turn_aborted", reason="interrupted")
    return write(folder, "rollout-2026-05-02T08-30-00-f.jsonl", cx.data())


def write(folder: Path, name: str, data: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(data)
    return path


# -- whole sessions, for cutting: every crash point of a real run ---------------------------
#
# Built from the published structure (tests/fixtures/foreign/README.md says what
# was found real and what was not): Claude Code 2.1's progress lines for hooked
# tools, lines parented on progress lines, responses split over lines with a
# whitespace text line first; Codex's reasoning items, web searches, shell
# commands with begin/end events, patches and parallel calls.


def progress(cc: ClaudeCode, call_id: str, hook: str, parent: str | None) -> dict[str, Any]:
    """A 2.1 hook progress line for `call_id`; later lines may be parented on it."""
    line = cc.envelope(
        "progress",
        parent,
        data={"type": "hook_progress", "hookEvent": hook, "hookName": f"{hook}:Bash"},
        parentToolUseID=call_id,
        toolUseID=call_id,
    )
    return cc.add(line)


def cc_whole_21(folder: Path) -> Path:
    """Claude Code 2.1: WebSearch beside a hooked Bash in one response, two turns."""
    cc = ClaudeCode("2.1.39")
    cc.user("find the release notes and build")
    first = cc.assistant(
        "msg_w1",
        text("\n\n"),
        tool_use("toolu_web", "WebSearch", query="release notes"),
        tool_use("toolu_make", command="make"),
    )
    web_line, make_line = first[1]["uuid"], first[2]["uuid"]
    cc.last = make_line
    progress(cc, "toolu_make", "PreToolUse", make_line)
    cc.result("toolu_web", "3 results", parent=web_line)
    hook = progress(cc, "toolu_make", "PostToolUse", make_line)
    cc.result("toolu_make", "built", parent=make_line)
    cc.last = hook["uuid"]  # the next reply is parented on the progress line
    cc.assistant("msg_w2", THINKING, text("Built; the notes are linked."))
    cc.turn_end()
    cc.user("deploy it")
    cc.assistant("msg_w3", tool_use("toolu_deploy", command="make deploy"))
    progress(cc, "toolu_deploy", "PreToolUse", cc.last)
    cc.result("toolu_deploy", "deployed")
    cc.assistant("msg_w4", text("Deployed."))
    cc.turn_end()
    return write(folder, f"{SID}.jsonl", cc.data())


def cx_whole(folder: Path) -> Path:
    """Codex: reasoning before a web search, two reasoning items in a row, a
    command with begin/end events, a patch, parallel calls, two turns."""
    cx = Codex()
    cx.user("update the docs")
    reasoning = {"type": "reasoning", "summary": [], "encrypted_content": "gAAAA_r"}
    cx.item(**reasoning)
    cx.item(type="web_search_call", status="completed", action={"type": "search", "query": "x"})
    cx.item(**reasoning)
    cx.item(**reasoning)
    cx.call("call_ls", "ls docs")
    cx.event(type="exec_command_begin", call_id="call_ls", command=["ls", "docs"])
    cx.event(type="exec_command_end", call_id="call_ls", exit_code=0, aggregated_output="a.md\n")
    cx.output("call_ls", "a.md")
    cx.item(**reasoning)
    cx.item(
        type="custom_tool_call",
        status="completed",
        call_id="call_patch",
        name="apply_patch",
        input="*** Begin Patch\n*** End Patch",
    )
    cx.item(type="custom_tool_call_output", call_id="call_patch", output="Done!")
    cx.answer("Docs updated.")
    cx.user("check both files")
    cx.item(**reasoning)
    cx.call("call_a", "cat a.md")
    cx.call("call_b", "cat b.md")
    cx.output("call_a", "A")
    cx.output("call_b", "B")
    cx.item(**reasoning)
    cx.answer("Both read.")
    return write(folder, "rollout-2026-05-02T08-30-00-whole.jsonl", cx.data())
