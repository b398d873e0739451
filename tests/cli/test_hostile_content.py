"""Every string in a session is hostile, and so is every server: the page runs
no script a session holds, --redact hides what it says it hides, an output
never lands on an input, and a trace's credentials go to one origin only,
within one deadline, never printed."""

from __future__ import annotations

import http.server
import json
import os
import select
import signal
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import foreign_fixtures
import turnlog
from browser import render
from entry_point import cli
from turnlog import ToolCall, events as ev
from turnlog.cli import main
from turnlog.cli.otlp_http import send, traces_url

# Each would set an attribute the page never has, if it ran.
HOSTILE = [
    "\"><img src=x onerror=\"document.body.setAttribute('data-p'+'wned','1')\">",
    "<script>document.body.setAttribute('data-p'+'wned','2')</script>",
    "'><svg onload=document.body.setAttribute('data-p'+'wned','3')>",
    "</template></details><script>document.body.setAttribute('data-p'+'wned','4')</script>",
]


@pytest.fixture
def session(tmp_path: Path) -> Path:
    """A session with a hostile string in every field a writer takes."""
    path = tmp_path / "s.jsonl"
    with turnlog.open(str(path)) as log:
        for number, text in enumerate(HOSTILE):
            log.user(text)
            with log.turn(), log.step():
                call = ToolCall(id=f"c{number}{text}", name=f"t{text}", arguments={"a": text})
                msg = log.assistant(text, [call])
                with log.dispatch(msg.data.tool_calls[0], idempotency="destructive") as running:
                    running.result(text)
            log.append(ev.Custom(type=f"x_{number}{text}", fields={"secret": f"token-{text}"}))
    return path


def page(session: Path, out: Path, *more: str) -> str:
    result = CliRunner().invoke(main, ["show", str(session), "--html", "-o", str(out), *more])
    assert result.exit_code == 0, result.output
    return out.read_text()


def test_no_script_from_a_session_runs_in_the_page(tmp_path: Path, session: Path) -> None:
    out = tmp_path / "page.html"
    text = page(session, out)
    assert "Content-Security-Policy" in text
    shown = render(out.as_uri() + "#all")
    assert 'data-pwned="' not in shown.dom
    assert shown.console == [], shown.console
    # Every hostile string is in the page, as text.
    assert all(f"t{s}"[:8] in shown.dom.replace("&lt;", "<").replace("&gt;", ">") for s in HOSTILE)


def test_redact_hides_what_custom_events_hold(tmp_path: Path, session: Path) -> None:
    text = page(session, tmp_path / "page.html", "--redact")
    assert "token-" not in text
    assert "bytes)" in text


@pytest.mark.parametrize(
    "command",
    [
        ["show", "{s}", "--html", "-o", "{s}"],
        ["export", "{s}", "--to", "otlp-json", "-o", "{s}"],
        ["show", "{s}", "--html", "-o", "{other}"],
        ["export", "{s}", "--to", "otlp-json", "-o", "{other}"],
    ],
)
def test_an_output_never_lands_on_an_input(
    tmp_path: Path, session: Path, command: list[str]
) -> None:
    other = tmp_path / "notes.txt"
    other.write_text("mine\n")
    before = session.read_bytes()
    args = [part.format(s=session, other=other) for part in command]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert "refusing to write" in result.output and "hint:" in result.output
    assert session.read_bytes() == before and other.read_text() == "mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "s.jsonl"]


def test_an_output_turnlog_wrote_is_replaced_whole(tmp_path: Path, session: Path) -> None:
    out = tmp_path / "page.html"
    first = page(session, out)
    assert page(session, out) == first
    trace = tmp_path / "t.json"
    for _ in range(2):
        result = CliRunner().invoke(main, ["export", str(session), "--to", "otlp-json", "-o",
                                           str(trace)])  # fmt: skip
        assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page.html", "s.jsonl", "t.json"]


class _Collector(http.server.BaseHTTPRequestHandler):
    """A hostile collector: `/redirect` sends the client elsewhere, `/drip`
    answers one byte every 0.5 s, `/long` sends a header line over 64 KiB."""

    seen: list[tuple[str, str, dict[str, str]]] = []

    def _any(self) -> None:
        if self.path.startswith("/close"):
            self.close_connection = True
            return  # hangs up without reading the body
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.seen.append((self.command, self.path, headers))
        if self.path.startswith("/redirect"):
            self.send_response(307)
            self.send_header("Location", f"http://localhost:{self.server.server_address[1]}/else")
            self.end_headers()
        elif self.path.startswith("/drip"):
            self.wfile.write(b"HTTP/1.1 200 OK\r\n")
            for _ in range(40):
                if select.select([self.connection], [], [], 0.5)[0]:
                    return  # the client hung up
                self.wfile.write(b"X")
                self.wfile.flush()
        elif self.path.startswith("/long"):
            self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * 70000 + b"\r\n\r\n")
        else:
            self.send_response(200)
            self.end_headers()

    do_POST = do_GET = _any

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[tuple[str, list[tuple[str, str, dict[str, str]]]]]:
    seen: list[tuple[str, str, dict[str, str]]] = []
    handler = type("Handler", (_Collector,), {"seen": seen})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    # The collector writes to clients that hung up: an error in its thread,
    # not a SIGPIPE that ends the test process (the CLI takes its default).
    previous = signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        signal.signal(signal.SIGPIPE, previous)


def export_to(session: Path, endpoint: str, *headers: str) -> Any:
    args = ["export", str(session), "--to", "otlp-json", "-o", "-", "--endpoint", endpoint]
    for header in headers:
        args += ["--header", header]
    return CliRunner().invoke(main, args)


def test_a_redirect_is_a_failure_and_credentials_stay_with_one_origin(
    session: Path, collector: tuple[str, list[tuple[str, str, dict[str, str]]]]
) -> None:
    url, seen = collector
    result = export_to(session, f"{url}/redirect", "authorization=Bearer s3cret")
    assert result.exit_code == 3, result.output  # a failed send, as every TurnlogError
    assert "redirect" in result.output and "s3cret" not in result.output
    assert [(method, path) for method, path, _ in seen] == [("POST", "/redirect")]


def test_a_dripping_server_is_cut_off_at_the_deadline(
    collector: tuple[str, list[tuple[str, str, dict[str, str]]]],
) -> None:
    url, _ = collector
    started = time.monotonic()
    with pytest.raises(turnlog.TurnlogError, match="no whole answer within"):
        send(traces_url(f"{url}/drip"), b"{}", {}, deadline_s=2)
    assert time.monotonic() - started < 5


def test_a_collector_hanging_up_mid_send_is_an_error_not_a_silent_death(
    collector: tuple[str, list[tuple[str, str, dict[str, str]]]],
) -> None:
    url, _ = collector
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # as the command line has it
    with pytest.raises(turnlog.TurnlogError, match="could not send the trace"):
        send(traces_url(f"{url}/close"), b"x" * (64 << 20), {}, deadline_s=10)


def test_a_header_line_over_64_kib_is_an_error_not_a_traceback(
    session: Path, collector: tuple[str, list[tuple[str, str, dict[str, str]]]]
) -> None:
    url, _ = collector
    result = export_to(session, f"{url}/long")
    assert result.exit_code == 3 and "Traceback" not in result.output, result.output
    assert "could not send the trace" in result.output


@pytest.mark.parametrize(
    ("endpoint", "headers", "said"),
    [
        ("http://127.0.0.1:abc", (), "not an http(s) URL"),
        ("http://[::1", (), "not an http(s) URL"),
        ("http://user:pw-s3cret@127.0.0.1:9", (), "credentials in the URL"),
        ("http://127.0.0.1:9", ("Authorization: Bearer s3cret",), "could not send"),
        ("http://127.0.0.1:9", ("Authorization s3cret",), "header #1 is not KEY=VALUE"),
        ("http://127.0.0.1:9", ("authorization=Bearer s3cret\nX: y",), "line break"),
        ("http://127.0.0.1:9", ("authorization=Bearer s3crét€",), "cannot carry"),
        ("http://127.0.0.1:9", ("authorization=" + "s3cret" * 2000,), "over 8,192"),
        ("http://127.0.0.1:9/v1/traces?api_key=s3cret", (), "could not send"),
    ],
)
def test_bad_endpoints_and_headers_never_print_a_secret(
    session: Path, endpoint: str, headers: tuple[str, ...], said: str
) -> None:
    result = export_to(session, endpoint, *headers)
    assert result.exit_code in (2, 3) and said in result.output, result.output
    assert "s3cret" not in result.output and "Traceback" not in result.output
    assert "hint:" in result.output


def test_text_commands_show_control_characters_never_send_them(tmp_path: Path) -> None:
    session = tmp_path / "c.jsonl"
    with turnlog.open(str(session)) as log:
        log.user("title \x1b]0;PWNED\x07 clear \x1b[2J\x9b2J end")
        with log.turn(), log.step():
            msg = log.assistant(
                "\x1b[31mred\x1b[0m", [ToolCall(id="c\x1b[2J", name="t\x1b]0;x\x07")]
            )
            with log.dispatch(msg.data.tool_calls[0]) as call:
                call.result("\x1b[2Jdone")
    for command in (["show", str(session)], ["show", str(session), "--full"],
                    ["inspect", str(session)], ["ls", "--store", str(tmp_path)]):  # fmt: skip
        code, out, err = cli(*command)
        assert code == 0, err
        assert not any(ch in out + err for ch in "\x1b\x07\x9b"), (command, out)
    code, out, _ = cli("show", str(session))
    assert "␛]0;PWNED" in out and "␛[2J" in out


def test_an_error_quoting_a_name_shows_its_control_characters(tmp_path: Path) -> None:
    missing = tmp_path / "gone\x1b]0;PWNED\x07.jsonl"
    code, out, err = cli("show", str(missing))
    assert code != 0 and "gone␛]0;PWNED␇" in err, err
    assert not any(ch in out + err for ch in "\x1b\x07"), err


def test_a_page_gets_the_mode_a_new_file_gets_and_keeps_a_replaced_ones(
    tmp_path: Path, session: Path
) -> None:
    out = tmp_path / "page.html"
    page(session, out)
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask
    out.chmod(0o640)
    page(session, out)
    assert stat.S_IMODE(out.stat().st_mode) == 0o640


def _spoiled(path: Path) -> None:
    """Every timestamp a number and every message id a list, as a hostile or
    broken writer leaves them."""
    lines = []
    for raw in path.read_bytes().splitlines():
        try:
            record = json.loads(raw)
        except ValueError:
            lines.append(raw)
            continue
        if "timestamp" in record:
            record["timestamp"] = 12345
        message = record.get("message")
        if isinstance(message, dict) and "id" in message:
            message["id"] = [message["id"]]
        lines.append(json.dumps(record).encode())
    path.write_bytes(b"\n".join(lines) + b"\n")


@pytest.mark.parametrize(
    "make", [foreign_fixtures.cc_after_tool_use, foreign_fixtures.cx_after_call]
)
def test_a_foreign_transcript_with_odd_times_and_ids_reads_without_a_traceback(
    tmp_path: Path, make: Any
) -> None:
    path = make(tmp_path / "in")
    _spoiled(path)
    kind = "claude-code" if "cc_" in make.__name__ else "codex"
    code, out, err = cli(
        "show", str(path), "--kind", kind, "--html", "-o", str(tmp_path / "p.html")
    )
    assert code == 0, err
    code, out, err = cli("import", kind, str(path), "--store", str(tmp_path / "store"))
    assert code == 0, err
    code, out, err = cli("verify", "--store", str(tmp_path / "store"))
    assert code == 0, out + err
    code, out, err = cli("doctor", kind, str(path), "--yes", "--force")
    assert code == 0, err
