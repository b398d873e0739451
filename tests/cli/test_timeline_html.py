"""`turnlog show SESSION --html -o FILE`: one self-contained page, its contract held in the file and in a real browser."""

from __future__ import annotations

import html.parser
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

import turnlog
from browser import render
from builders import crashed_turn, manager_tree
from paths import ROOT
from turnlog import ToolCall
from turnlog.cli import main
from turnlog.stores import JSONLStore

# Kept after the run, for a person to look at (the path is printed).
ARTIFACTS = ROOT / ".test-artifacts"
SECRET = "4111-1111-1111-1111"


def session_with_a_crash(root: Path) -> list[turnlog.events.Event]:
    """Turn 1 finished with a tool call; turn 2 killed with `charge` dispatched
    and `email` not started, then recovered; turn 3 after it."""
    with turnlog.open(root, "s1") as log, log.turn():
        log.user("look up bob")
        with log.step():
            call = ToolCall(id="c0", name="lookup", arguments={"who": "bob"})
            log.assistant("", tool_calls=[call])
            log.begin_dispatch(call, idempotency="read_only").result("bob <b>is</b> here")
        with log.step():
            log.assistant("found bob")
    log = turnlog.open(root, "s1")
    log.begin_turn()
    log.user("pay bob")
    log.begin_step()
    calls = [
        ToolCall(id="c1", name="charge", arguments={"card": SECRET}),
        ToolCall(id="c2", name="email", arguments={"to": "bob"}),
    ]
    log.assistant("paying", tool_calls=calls)
    log.begin_dispatch(calls[0], idempotency="destructive")
    log.close()
    turnlog.open(root, "s1", recover=True).close()
    with turnlog.open(root, "s1") as log, log.turn():
        log.user("did it work?")
    return list(JSONLStore(root).iter_events("s1"))


def write_page(root: Path, *extra: str) -> Path:
    out = root / "timeline.html"
    result = CliRunner().invoke(
        main, ["show", str(root / "s1.jsonl"), "--html", "-o", str(out), *extra]
    )
    assert result.exit_code == 0, result.output
    return out


class _Elements(html.parser.HTMLParser):
    """Every start tag's attributes; a template's content is markup here too."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def elements(markup: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Elements()
    parser.feed(markup)
    return parser.tags


def check_contract(markup: str, events: list[turnlog.events.Event]) -> None:
    """Every event an element with data-seq and data-type; synthetic ones with
    data-origin; results with a risk with data-risk and data-rule."""
    by_seq = {a["data-seq"]: a for _, a in elements(markup) if a.get("data-seq") is not None}
    assert sorted(by_seq, key=int) == [str(e.seq) for e in events]
    for event in events:
        attrs = by_seq[str(event.seq)]
        assert attrs["data-type"] == event.type
        assert attrs.get("data-origin") == event.origin
        risk = getattr(event.data, "risk", None)
        if risk is not None:
            assert attrs["data-risk"] == risk and attrs["data-rule"] == event.data.rule


def test_the_page_holds_every_event_and_loads_nothing(tmp_path: Path) -> None:
    events = session_with_a_crash(tmp_path)
    markup = write_page(tmp_path).read_text()
    check_contract(markup, events)
    # Self-contained: no tag fetches anything, from a network or a file.
    for tag, attrs in elements(markup):
        assert not (attrs.get("src") or (tag == "link")), (tag, attrs)
    assert "http://" not in markup and "https://" not in markup
    # Text is escaped, never markup.
    assert "bob &lt;b&gt;is&lt;/b&gt; here" in markup and "<b>is</b>" not in markup
    # The turn that needs a human is open; the others wait in a template.
    assert re.search(r'<details class="turn" open [^>]*data-turn="2"[^>]*data-human', markup)
    assert markup.count("<template>") == 2


def test_a_replys_token_usage_is_shown(tmp_path: Path) -> None:
    with turnlog.open(tmp_path, "s1") as log, log.turn():
        log.user("hi")
        with log.step():
            usage = turnlog.events.TokenUsage(input_tokens=1234, output_tokens=56, model="m-1")
            log.assistant("hello", usage=usage)
    markup = write_page(tmp_path).read_text()
    assert 'data-tokens="1,234 in · 56 out · m-1"' in markup


def test_redact_shows_sizes_instead_of_arguments_and_results(tmp_path: Path) -> None:
    session_with_a_crash(tmp_path)
    markup = write_page(tmp_path, "--redact").read_text()
    assert SECRET not in markup and "bob &lt;b&gt;" not in markup
    assert re.search(r"\(\d+ bytes\)", markup)


def test_html_options_need_html_and_a_file(tmp_path: Path) -> None:
    session_with_a_crash(tmp_path)
    result = CliRunner().invoke(main, ["show", str(tmp_path / "s1.jsonl"), "--redact"])
    assert result.exit_code != 0 and "hint:" in result.output


def test_the_page_in_a_browser(tmp_path: Path) -> None:
    """Rendered by headless Chromium: the DOM after its script ran holds the
    contract, the console is silent, and the address opens every turn,
    keeps what needs a human, or searches. A screenshot is kept."""
    events = session_with_a_crash(tmp_path)
    page = write_page(tmp_path)
    url = page.as_uri()
    everything = render(url + "#all")
    assert everything.console == []
    check_contract(everything.dom, events)
    assert "<template>" not in everything.dom  # every turn opened, its content put in
    collapsed = render(url)
    assert collapsed.console == [] and collapsed.dom.count("<template>") == 2
    human = render(url + "#human")
    assert '<body class="human-only">' in human.dom
    searched = render(url + "#q=charge")
    lines = [a for t, a in elements(searched.dom) if t == "div" and a.get("data-seq")]
    hidden = {a["data-seq"] for a in lines if "hidden" in (a.get("class") or "").split()}
    shown = {a["data-seq"] for a in lines} - hidden
    # The lines that name the charge stay; the rest are hidden.
    charge_lines = {str(e.seq) for e in events if "charge" in repr(e.data)}
    assert shown == charge_lines and hidden
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "timeline.png"
    render(url, screenshot=shot)
    assert shot.stat().st_size > 10_000
    print(f"\nscreenshot of the timeline: {shot}")


@pytest.mark.parametrize("marker", ["#all", ""])
def test_a_long_session_renders_without_console_errors(tmp_path: Path, marker: str) -> None:
    with turnlog.open(tmp_path, "s1") as log:
        for number in range(200):
            with log.turn():
                log.user(f"question {number}")
                with log.step():
                    log.assistant(f"answer {number}")
    page = write_page(tmp_path)
    assert render(page.as_uri() + marker).console == []


@pytest.mark.parametrize(
    ("make", "kind"),
    [("cc_parallel_one_answered", "claude-code"), ("cx_exec_end_no_output", "codex")],
)
def test_a_claude_code_or_codex_file_is_shown_with_doctors_verdicts_and_never_changed(
    tmp_path: Path, make: str, kind: str
) -> None:
    import foreign_fixtures
    from turnlog.formats.rescue import diagnose

    path = getattr(foreign_fixtures, make)(tmp_path)
    before = path.read_bytes()
    found = diagnose(str(path), kind)
    assert found.owed  # the fixture leaves calls unanswered
    out = tmp_path / "page.html"
    args = ["show", str(path), "--kind", kind, "--html", "-o", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert path.read_bytes() == before
    verdicts = [a for t, a in elements(out.read_text()) if a.get("data-type") == "verdict"]
    assert [(a["data-call"], a["data-risk"], a["data-rule"]) for a in verdicts] == [
        (owed.call_id, owed.risk or "", owed.rule or "") for owed in found.owed
    ]
    # The terminal view says the same, and JSON carries the verdicts.
    text = CliRunner().invoke(main, ["show", str(path), "--kind", kind])
    assert text.exit_code == 0 and f"unanswered {found.owed[0].call_id}" in text.output
    assert path.read_bytes() == before


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_the_page_and_the_trace_of_a_database_session(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    """The same page and trace from turnlog's SQLite and PostgreSQL stores."""
    import json

    from conftest import make_store

    store = make_store(kind, tmp_path, request)
    crashed_turn(store)
    events = list(store.iter_events("s1"))
    out = tmp_path / "page.html"
    args = ["show", "s1", "--store", store.url, "--html", "-o", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    check_contract(out.read_text(), events)
    trace = CliRunner().invoke(main, ["export", "s1", "--store", store.url, "--to", "otlp-json"])
    assert trace.exit_code == 0, trace.output
    spans = json.loads(trace.stdout)["resourceSpans"][0]["scopeSpans"][0]["spans"]
    rules = [a["value"] for s in spans for a in s["attributes"] if a["key"] == "turnlog.rule"]
    assert rules == [{"stringValue": "R1"}, {"stringValue": "R2"}]


def test_tree_puts_the_subagents_sessions_in_the_page_linked_from_their_calls(
    tmp_path: Path,
) -> None:
    manager_tree(tmp_path)
    out = tmp_path / "tree.html"
    args = ["show", str(tmp_path / "boss.jsonl"), "--tree", "--html", "-o", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    markup = out.read_text()
    (child,) = JSONLStore(tmp_path).children("boss")
    sections = [a for t, a in elements(markup) if t == "section" and a.get("data-session")]
    assert [a["data-session"] for a in sections] == [child]
    assert f'href="#session-{child}"' in markup and f'id="session-{child}"' in markup
    # The browser renders both sessions, every event of each.
    rendered = render(out.as_uri() + "#all")
    assert rendered.console == []
    child_events = list(JSONLStore(tmp_path).iter_events(child))
    section = rendered.dom.split(f'data-session="{child}"', 1)[1]
    check_contract(section, child_events)


def test_a_torn_tail_is_shown_where_it_is(tmp_path: Path) -> None:
    with turnlog.open(tmp_path, "s1") as log, log.turn():
        log.user("hi")
    path = tmp_path / "s1.jsonl"
    whole = path.stat().st_size
    with path.open("ab") as out:
        out.write(b'{"seq":4,"type":"user_mes')
    markup = write_page(tmp_path).read_text()
    (torn,) = [a for _, a in elements(markup) if a.get("data-kind") == "torn_tail"]
    assert torn["data-offset"] == str(whole)
    assert path.read_bytes().endswith(b'"user_mes')  # shown, not moved


def test_a_late_result_is_labelled_as_recorded_not_delivered(tmp_path: Path) -> None:
    from turnlog import events as ev

    with turnlog.open(tmp_path, "s1") as log, log.turn():
        log.user("go")
        log.append(
            ev.Custom(
                type=ev.LATE_RESULT_TYPE,
                fields={"call_id": "c9", "name": "slow", "content": "finally done"},
            )
        )
    markup = write_page(tmp_path).read_text()
    assert "late result" in markup and "after its deadline: recorded, not delivered" in markup


def test_the_counts_agree_with_their_numbers(tmp_path: Path) -> None:
    from builders import crashed_turn
    from turnlog.exports.timeline_html import timeline_html

    crashed_turn(tmp_path, recover=True)  # one turn, two calls answered, one may have run
    page = timeline_html("s1", turnlog.JSONLStore(tmp_path).read("s1"))
    assert "· 1 turn ·" in page and "2 calls answered by turnlog" in page
    assert ">1 needs a human</b>" in page
