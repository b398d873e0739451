"""The command line on paused sessions: listed and inspected as paused, left alone by
every repair, decided by approve, reject and deliver, expired by sweep."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

import turnlog
from builders import paused_session, put
from turnlog import events as ev
from turnlog.cli import main
from turnlog.stores import JSONLStore


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def store_with_a_pause(tmp_path: Path, **options: str) -> tuple[JSONLStore, Path]:
    store = JSONLStore(tmp_path / "sessions")
    put(store, paused_session("pay", **options))
    return store, tmp_path / "sessions" / "pay.jsonl"


def test_paused_sessions_are_listed_and_inspected_as_such(tmp_path: Path) -> None:
    store, path = store_with_a_pause(tmp_path)
    put(store, paused_session("other"))
    with turnlog.open(store, "other") as log:
        log.reject("c1", by="bob")
        with log.turn(resume=True):
            pass
    code, out, _ = run("ls", "--store", str(tmp_path / "sessions"), "--status", "paused", "--json")
    assert code == 0
    rows = json.loads(out)["sessions"]
    assert [(r["session_id"], r["status"], r["awaiting"], r["owed_calls"]) for r in rows] == [
        ("pay", "paused", 1, 0)
    ]
    code, out, _ = run("inspect", str(path), "--json")
    found = json.loads(out)
    assert (found["status"], found["revivable"], found["owed_calls"]) == ("paused", False, [])
    assert [(a["call_id"], a["name"], a["kind"]) for a in found["awaiting"]] == [
        ("c1", "pay", "approval")
    ]
    code, out, _ = run("show", str(path))
    assert "PAUSED" in out and "turn open, paused: waiting for approval of pay (c1)" in out


def test_no_repair_touches_a_pause_and_each_says_why(tmp_path: Path) -> None:
    _, path = store_with_a_pause(tmp_path)
    before = path.read_bytes()
    for args in (
        ["recover", str(path)],
        ["revive", str(path)],
        ["sweep", "--store", str(path.parent)],
        ["sweep", "--store", str(path.parent), "--revive"],
    ):
        code, out, err = run(*args)
        assert code == 0, (args, out, err)
        assert "paused: waiting for approval of pay (c1) since" in out + err, args
    assert path.read_bytes() == before
    code, out, _ = run("recover", str(path), "--json")
    assert json.loads(out)["appended"] == [] and json.loads(out)["awaiting"][0]["call_id"] == "c1"
    code, out, _ = run("revive", str(path), "--json")
    assert (code, json.loads(out)["reason"]) == (0, "paused")
    assert path.read_bytes() == before


def test_approve_reject_and_deliver_record_who_decided(tmp_path: Path) -> None:
    store, path = store_with_a_pause(tmp_path)
    code, out, _ = run("approve", str(path), "c1", "--by", "alice", "--json")
    assert code == 0
    (decision,) = json.loads(out)["appended"]
    assert decision["data"] == {"call_id": "c1", "decision": "approved", "by": "alice"}
    code, _, err = run("approve", str(path), "c1")
    assert code == 2 and "already approved" in err
    code, _, err = run("approve", str(path), "c9")
    assert code == 2 and "not paused in the open turn" in err
    put(store, paused_session("no"))
    code, out, _ = run(
        "reject", str(path.parent / "no.jsonl"), "c1", "--by", "bob", "--reason", "not today"
    )
    assert code == 0 and "rejected" in out
    result = store.read("no")[-1].data
    assert isinstance(result, ev.ToolResult) and result.rule == "A1"
    assert "bob declined it (not today)" in ev.content_text(result.content)
    # An approval pause takes no delivered result; an external one does.
    put(store, paused_session("asked"))
    code, _, err = run("deliver", str(path.parent / "asked.jsonl"), "c1", "paid")
    assert code == 2 and "approve it and run it, or reject it" in err
    events = paused_session("ext")
    paused = events[5]
    assert isinstance(paused.data, ev.ToolPaused)
    events[5] = ev.Event(
        seq=paused.seq, ts=paused.ts, data=ev.ToolPaused(call_id="c1", name="pay", kind="external")
    )
    put(store, events)
    code, out, _ = run("deliver", str(path.parent / "ext.jsonl"), "c1", "receipt 42", "--by", "erp")
    assert code == 0, out
    delivered = store.read("ext")[-2:]
    assert [e.type for e in delivered] == ["tool_decision", "tool_result"]
    assert ev.content_text(delivered[1].data.content) == "receipt 42"  # type: ignore[union-attr]


def test_sweep_expires_pauses_past_their_deadline_or_age(tmp_path: Path) -> None:
    store, path = store_with_a_pause(tmp_path, until="2026-01-01T00:00:00Z")
    put(store, paused_session("young"))
    code, out, _ = run("sweep", "--store", str(path.parent), "--json")
    swept = {s["session_id"]: s for s in json.loads(out)["sessions"]}
    assert code == 0
    assert swept["pay"]["action"] == "expired" and swept["young"]["action"] == "skipped"
    code, out, _ = run("sweep", "--store", str(path.parent), "--paused-max-age", "60", "--json")
    swept = {s["session_id"]: s for s in json.loads(out)["sessions"]}
    assert swept["young"]["action"] == "expired"
    assert turnlog.inspect(store, "young").status == "idle"


def test_a_decision_on_a_call_already_decided_names_the_decision_and_who(tmp_path: Path) -> None:
    _, path = store_with_a_pause(tmp_path)
    code, _, err = run("reject", str(path), "c1", "--by", "alice")
    assert code == 0, err
    before = path.read_bytes()
    for decision in ("approve", "reject"):
        code, out, err = run(decision, str(path), "c1", "--by", "bob")
        assert code == 2, out + err
        assert "was already rejected by alice" in out + err, out + err
    assert path.read_bytes() == before
