"""`turnlog revive` prints what it appended and what to run next, as docs/cli.md shows."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest

import forkserver
from builders import crashed_session, put
from conftest import make_store
from entry_point import cli
from paths import ROOT, SUPPORT
from turnlog import events as ev
from turnlog.core.fold import fold
from turnlog.providers import PROVIDERS, render, validate
from turnlog.stores import Store
from turnlog.stores.jsonl import JSONLStore

DOCS = ROOT / "docs" / "cli.md"


def documented_revive_json() -> dict[str, Any]:
    section = DOCS.read_text().split("## turnlog revive")[1].split("\n## ")[0]
    block = re.search(r"```json\n(.*?)```", section, re.S)
    assert block is not None, "docs/cli.md shows no JSON for turnlog revive"
    document: dict[str, Any] = json.loads(block.group(1))
    return document


def crashed_payer(store: Store, session_id: str) -> None:
    events = crashed_session(session_id)
    header = ev.Session(session_id=session_id, agent=ev.Agent(id="payer", type="payer"))
    put(store, [msgspec.structs.replace(events[0], data=header), *events[1:]])


def store_url(store: Store) -> str:
    return f"jsonl:{store.url}" if isinstance(store, JSONLStore) else store.url


def shape(event: dict[str, Any]) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    return event["type"], tuple(sorted(event)), tuple(sorted(event["data"]))


@pytest.mark.parametrize("kind", ["jsonl", "sqlite", "postgres"])
def test_revive_prints_every_appended_event_and_what_to_run_next(
    tmp_path: Path, request: pytest.FixtureRequest, kind: str
) -> None:
    store = make_store(kind, tmp_path, request)
    crashed_payer(store, "s1")
    code, out, err = cli("revive", "s1", "--store", store_url(store))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "s1: revived as agent payer (revival 1)"
    assert lines[1] == "appended:"
    body = "\n".join(lines[2:])
    # Each synthetic result with its risk and rule, the turn closed, the
    # marker and the notice, one line each, in the order they were written.
    wanted = [
        r"#6 .*pay\(a\) tool_outcome_unknown R1 .*<recovery>",
        r"#7 .*ls\(b\) tool_not_started R2 .*<recovery>",
        r"#8 .*step 1 end: error .*<recovery>",
        r"#9 .*turn 1 end: interrupted.*<recovery>",
        r"#10 .*run revived \(revival 1\) .*<revival>",
        r"#11 .*user .*\[revival\] \[turnlog: automated notification \(revival\).*<revival>",
    ]
    for line, pattern in zip(lines[2:8], wanted, strict=True):
        assert re.search(pattern, line), (pattern, body)
    assert lines[8].startswith("next: run the agent's loop on s1 as agent payer")

    code, out, err = cli("revive", "s1", "--store", store_url(store))
    assert code == 0, err
    assert out.splitlines()[0].startswith("s1: already revived as agent payer (revival 1)")
    assert "appended: nothing" in out and "next: run the agent's loop on s1" in out

    messages = fold(store.read("s1")).messages
    for provider in PROVIDERS:
        assert validate(provider, render(provider, messages)) == [], provider


@pytest.mark.parametrize("kind", ["jsonl", "sqlite", "postgres"])
def test_revive_json_has_the_documented_shape(
    tmp_path: Path, request: pytest.FixtureRequest, kind: str
) -> None:
    documented = documented_revive_json()
    store = make_store(kind, tmp_path, request)
    crashed_payer(store, "run-1")
    code, out, err = cli("revive", "run-1", "--store", store_url(store), "--json")
    assert code == 0, err
    done = json.loads(out)
    assert sorted(done) == sorted(documented)
    assert [shape(e) for e in done["appended"]] == [shape(e) for e in documented["appended"]]
    # The documented example is this very session: the same values but for
    # the texts shortened there and the timestamps of the revival's events.
    for got, shown in zip(done["appended"], documented["appended"], strict=True):
        for key in ("seq", "type", "origin"):
            assert got[key] == shown[key]
        for key, value in shown["data"].items():
            if key != "content":
                assert got["data"][key] == value, (got, key)
            else:
                assert ev.content_text(got["data"][key]).startswith(value.rstrip(" …"))
    for key in ("session_id", "revived", "reason", "revival", "agent_id", "pending", "hint"):
        assert done[key] == documented[key], key
    assert done["next"].startswith(documented["next"].rstrip(" …"))

    # Twice: told once; the same shape, nothing appended, no revival spent.
    code, out, err = cli("revive", "run-1", "--store", store_url(store), "--json")
    assert code == 0, err
    again = json.loads(out)
    assert sorted(again) == sorted(documented)
    assert (again["reason"], again["revival"], again["appended"]) == ("already_revived", 1, [])
    assert again["next"] == done["next"]


def test_revive_reports_the_torn_tail_it_moved_aside(tmp_path: Path) -> None:
    for as_json in (False, True):
        store = JSONLStore(tmp_path / f"s{int(as_json)}")
        crashed_payer(store, "s1")
        path = Path(store.url) / "s1.jsonl"
        with path.open("ab") as f:
            f.write(b'{"seq":6,"type":"tool_resu')  # the crash cut this record short
        code, out, err = cli("revive", str(path), *(["--json"] if as_json else []))
        assert code == 0, err
        if as_json:
            torn = json.loads(out)["torn_tail"]
            assert torn["size_bytes"] == 26 and Path(torn["sidecar"]).read_bytes().startswith(
                b'{"seq":6'
            )
        else:
            assert out.splitlines()[0].startswith("moved a torn tail of 26 bytes to ")
            assert "s1: revived as agent payer (revival 1)" in out


def test_revive_tree_lists_the_answers_of_finished_children_it_appended(tmp_path: Path) -> None:
    import sys

    store = tmp_path / "s"
    program = str(SUPPORT / "agent_program.py")
    killed = forkserver.run(
        [
            sys.executable,
            program,
            "run",
            str(store),
            str(tmp_path / "side"),
            "finished",
            "-",
            "async",
        ],
        capture_output=True,
        timeout=120,
    )
    assert killed.returncode == -9
    code, out, err = cli("revive", "root", "--store", str(store), "--tree", "--json")
    assert code == 0, err
    root = next(n for n in json.loads(out)["sessions"] if n["session_id"] == "root")
    assert [(e["type"], e["origin"]) for e in root["appended"]] == [
        ("subagent_settled", "revival"),
        ("tool_result", "revival"),
        ("run_revived", "revival"),
        ("user_message", "revival"),
    ]
    code, out, _ = cli("revive", "root", "--store", str(store), "--tree")
    assert code == 0 and "root: already revived (revival 1)" in out
