"""Fuzz: hostile and random strings in every field a session, a Claude Code
transcript and a Codex rollout can hold, through every command that reads
them. The page they make runs no script and logs nothing in headless
Chromium; no command prints a traceback or a control character."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

import foreign_fixtures
import turnlog
from browser import render
from entry_point import cli
from turnlog import ToolCall, events as ev
from turnlog.providers import PROVIDERS

# Each would set an attribute the page never has, if it ran.
ATTACKS = [
    "\"><img src=x onerror=\"document.body.setAttribute('data-p'+'wned','1')\">",
    "<script>document.body.setAttribute('data-p'+'wned','2')</script>",
    "'><svg onload=document.body.setAttribute('data-p'+'wned','3')>",
    "</template></details></pre><script>document.body.setAttribute('data-p'+'wned','4')</script>",
    "<iframe srcdoc=\"<script>parent.document.body.setAttribute('data-p'+'wned','5')</script>\">",
    "javascript:document.body.setAttribute('data-p'+'wned','6')",
    "\u2028\u2029</style><style>body{display:none}</style>",
    "\x1b]0;PWNED\x07\x1b[2J\x9b31m",
    "{{7*7}} ${7*7} %s %n <!-- ]]> \u202e",
]
# What random strings are drawn from: the characters markup, terminals and
# JSON treat specially, and some that are merely far from ASCII.
_POOL = "<>\"'&/\\=`;:{}[]()$%#!?\x00\x07\x1b\x7f\x85\x9b\u2028\u202e é漢🙂\t\n\r ab1"
# One seed in `make test`; the others under `-m slow` (each seed is a page
# rendered twice in Chromium and some 20 commands, about 8 s).
SEEDS = [0, *(pytest.param(seed, marks=pytest.mark.slow) for seed in range(1, 6))]


def strings(seed: int) -> list[str]:
    chance = random.Random(seed)
    drawn = ["".join(chance.choice(_POOL) for _ in range(chance.randint(1, 40))) for _ in range(6)]
    return ATTACKS + drawn


def session_with(path: Path, texts: list[str]) -> None:
    """A session holding each text in every field a writer takes, with a
    crash repaired, a pause decided, a subagent and custom events."""
    with turnlog.open(str(path), meta={"label": texts[0]}) as log:
        for number, text in enumerate(texts):
            log.user(text)
            with log.turn(), log.step():
                call = ToolCall(id=f"c{number}{text}", name=f"t{text}", arguments={text: text})
                usage = ev.TokenUsage(input_tokens=1, output_tokens=2, model=text)
                msg = log.assistant(text, [call], usage=usage)
                with log.dispatch(msg.data.tool_calls[0], idempotency="destructive") as running:
                    running.result(text)
            log.append(ev.Custom(type=f"x_{number}{text}", fields={text: text}))
    # A crash: the last turn's call dispatched, the process gone.
    log = turnlog.open(str(path))
    log.user(texts[6])
    log.begin_turn()
    log.begin_step()
    crashed = ToolCall(id=f"k{texts[7]}", name=texts[7], arguments={"a": texts[8]})
    log.assistant(texts[7], [crashed])
    log.begin_dispatch(crashed, idempotency="destructive")
    log.close()


def paused_with(path: Path, texts: list[str]) -> None:
    """A session whose call waits on a person, then is declined, in their words."""
    with turnlog.open(str(path)) as log:
        log.user(texts[1])
        with log.turn(), log.step():
            paused = ToolCall(id=f"p{texts[2]}", name=texts[2])
            log.assistant(texts[2], [paused])
            log.pause(paused.id, prompt=texts[3])
        log.reject(paused.id, by=texts[4], reason=texts[5])


def no_control_characters(text: str) -> bool:
    return not any(ch in text for ch in "\x1b\x07\x9b\x00")


def check_commands(session: Path, tmp_path: Path) -> None:
    runs = [
        ["show", str(session)],
        ["show", str(session), "--full"],
        ["show", str(session), "--json"],
        ["inspect", str(session)],
        ["inspect", str(session), "--json"],
        ["plan", str(session)],
        ["verify", str(session)],
        ["ls", "--store", str(session.parent)],
        ["recover", str(session)],
        ["recover", str(session)],
        ["export", str(session), "--to", "otlp-json", "-o", str(tmp_path / "t.json")],
        *(["export", str(session), "--to", provider, "--validate"] for provider in PROVIDERS),
    ]
    for command in runs:
        code, out, err = cli(*command)
        assert code in (0, 1), (command, err[-2000:])
        if "--json" not in command and command[0] != "export":
            assert no_control_characters(out + err), (command, out[-2000:])


def check_page(page: Path) -> None:
    shown = render(page.as_uri() + "#all")
    assert 'data-pwned="' not in shown.dom
    assert shown.console == [], shown.console


@pytest.mark.parametrize("seed", SEEDS)
def test_a_hostile_session_through_every_command_and_the_page(tmp_path: Path, seed: int) -> None:
    (tmp_path / "store").mkdir()
    texts = strings(seed)
    crashed, paused = tmp_path / "store" / "s.jsonl", tmp_path / "store" / "p.jsonl"
    session_with(crashed, texts)
    paused_with(paused, texts)
    page = tmp_path / "page.html"
    for session in (crashed, paused):
        check_commands(session, tmp_path)
        for extra in ([], ["--redact"]):
            code, _, err = cli("show", str(session), "--html", "-o", str(page), *extra)
            assert code == 0, err
            check_page(page)


_STRUCTURAL = frozenset(
    {"type", "role", "uuid", "parentUuid", "sessionId", "timestamp", "id", "tool_use_id",
     "call_id", "isSidechain", "cwd", "version", "model", "stop_reason"}
)  # fmt: skip


def _spoil(value: Any, texts: list[str], chance: random.Random, key: str | None = None) -> Any:
    """Every string a foreign line carries, but the ones that give it its
    shape, with a hostile text put in."""
    if isinstance(value, dict):
        return {k: _spoil(v, texts, chance, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_spoil(v, texts, chance, key) for v in value]
    if isinstance(value, str) and key not in _STRUCTURAL:
        return value + chance.choice(texts)
    return value


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    "make", [foreign_fixtures.cc_after_tool_use, foreign_fixtures.cx_after_call], ids=["cc", "cx"]
)
def test_a_hostile_foreign_transcript_through_every_command(
    tmp_path: Path, make: Any, seed: int
) -> None:
    path = make(tmp_path / "in")
    chance = random.Random(seed)
    texts = strings(seed)
    lines = [json.loads(raw) for raw in path.read_bytes().splitlines() if raw.strip()]
    path.write_text("".join(json.dumps(_spoil(line, texts, chance)) + "\n" for line in lines))
    kind = "claude-code" if make is foreign_fixtures.cc_after_tool_use else "codex"
    page = tmp_path / "page.html"
    code, out, err = cli("show", str(path), "--kind", kind)
    assert code in (0, 1), err
    assert no_control_characters(out + err)
    code, _, err = cli("show", str(path), "--kind", kind, "--html", "-o", str(page))
    assert code == 0, err
    check_page(page)
    store = tmp_path / "store"
    code, _, err = cli("import", kind, str(path), "--store", str(store))
    assert code == 0, err
    (imported,) = store.glob("*.jsonl")
    check_commands(imported, tmp_path)
    code, _, err = cli("doctor", kind, str(path), "--dry-run", "--force")
    assert code in (0, 1), err
