"""`turnlog export --to otlp-json`: a session as an OpenTelemetry trace, parsed by the official protos and sent to a real receiver."""

from __future__ import annotations

import base64
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import turnlog
from builders import crashed_turn, manager_tree
from turnlog import ToolCall
from turnlog.cli import main
from turnlog.exports.otlp import trace_id

pytest.importorskip("opentelemetry.proto")

from google.protobuf.json_format import ParseDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status


def crashed_session(root: Path, *, recover: bool = True) -> str:
    """A turn killed with `charge` dispatched and `email` not started."""
    crashed_turn(root, recover=recover)
    return str(root / "s1.jsonl")


def export(*args: str) -> Any:
    result = CliRunner().invoke(main, ["export", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def parsed(request: dict[str, Any]) -> ExportTraceServiceRequest:
    """Parsed by the official protos. OTLP/JSON writes ids as hex, where the
    protobuf JSON mapping expects base64: converted first, as a collector does."""
    copy = json.loads(json.dumps(request))
    for resource in copy["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for record in [span, *span.get("links", [])]:
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if key in record:
                            record[key] = base64.b64encode(bytes.fromhex(record[key])).decode()
    return ParseDict(copy, ExportTraceServiceRequest())


def spans_of(message: ExportTraceServiceRequest) -> list[Span]:
    return list(message.resource_spans[0].scope_spans[0].spans)


def attrs(span: Span) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in span.attributes:
        kind = pair.value.WhichOneof("value")
        out[pair.key] = getattr(pair.value, kind)
    return out


def test_a_recovered_crash_is_a_trace_with_the_repairs_marked(tmp_path: Path) -> None:
    path = crashed_session(tmp_path)
    request = json.loads(export(path, "--to", "otlp-json").stdout)
    spans = spans_of(parsed(request))
    by_name = {span.name: span for span in spans}
    turn, step = by_name["invoke_agent"], by_name["chat"]
    charge, email = by_name["execute_tool charge"], by_name["execute_tool email"]
    # Nested turn > step > tool, one trace, from the session's id.
    assert {span.trace_id.hex() for span in spans} == {trace_id("s1")}
    assert step.parent_span_id == turn.span_id and not turn.parent_span_id
    assert charge.parent_span_id == email.parent_span_id == step.span_id
    # The conventions' names, and turnlog's for what they have no word for.
    assert attrs(turn)["gen_ai.operation.name"] == "invoke_agent"
    assert attrs(step)["gen_ai.operation.name"] == "chat"
    assert attrs(charge) | {"turnlog.idempotency": "destructive"} == attrs(charge)
    assert attrs(charge)["gen_ai.tool.call.id"] == "c1"
    assert (attrs(charge)["turnlog.rule"], attrs(charge)["turnlog.risk"]) == (
        "R1",
        "tool_outcome_unknown",
    )
    assert (attrs(email)["turnlog.rule"], attrs(email)["turnlog.origin"]) == ("R2", "recovery")
    assert turn.status.code == Status.STATUS_CODE_ERROR and "interrupted" in turn.status.message
    for span in spans:
        assert span.end_time_unix_nano >= span.start_time_unix_nano > 0
    # No content unless asked for.
    assert not any("gen_ai.tool.call.arguments" in attrs(span) for span in spans)
    with_content = spans_of(
        parsed(json.loads(export(path, "--to", "otlp-json", "--content").stdout))
    )
    (charged,) = [s for s in with_content if s.name == "execute_tool charge"]
    assert json.loads(attrs(charged)["gen_ai.tool.call.arguments"]) == {"amount": 5}


def test_ids_are_the_same_on_every_export_and_later_turns_join_the_trace(tmp_path: Path) -> None:
    path = crashed_session(tmp_path)
    out = tmp_path / "trace.json"
    export(path, "--to", "otlp-json", "-o", str(out))
    first = spans_of(parsed(json.loads(out.read_text())))
    assert spans_of(parsed(json.loads(export(path, "--to", "otlp-json").stdout))) == first
    with turnlog.open(tmp_path, "s1") as log, log.turn():
        log.user("again")
    later = spans_of(parsed(json.loads(export(path, "--to", "otlp-json").stdout)))
    assert later[: len(first)] == first
    assert len(later) == len(first) + 1 and later[-1].trace_id == first[0].trace_id


def test_a_crash_not_yet_recovered_ends_its_spans_at_the_last_event(tmp_path: Path) -> None:
    path = crashed_session(tmp_path, recover=False)
    spans = spans_of(parsed(json.loads(export(path, "--to", "otlp-json").stdout)))
    unfinished = {span.name for span in spans if attrs(span).get("turnlog.unfinished")}
    assert unfinished == {"invoke_agent", "chat", "execute_tool charge", "execute_tool email"}


class _Receiver(http.server.BaseHTTPRequestHandler):
    received: list[tuple[str, dict[str, str], bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        # Header names compare case-insensitively, as HTTP has them.
        headers = {key.lower(): value for key, value in self.headers.items()}
        self.received.append((self.path, headers, body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[tuple[str, dict[str, str], bytes]]]]:
    received: list[tuple[str, dict[str, str], bytes]] = []
    handler = type("Handler", (_Receiver,), {"received": received})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()


def test_the_trace_is_sent_to_an_otlp_http_receiver_with_its_headers(
    tmp_path: Path, receiver: tuple[str, list[tuple[str, dict[str, str], bytes]]]
) -> None:
    url, received = receiver
    path = crashed_session(tmp_path)
    result = export(
        path, "--to", "otlp-json", "--endpoint", url, "--header", "authorization=Bearer s3cret"
    )
    ((where, headers, body),) = received
    assert where == "/v1/traces" and headers["content-type"] == "application/json"
    assert headers["authorization"] == "Bearer s3cret"
    assert len(spans_of(parsed(json.loads(body)))) == 4
    assert "sent 4 spans" in result.stderr and "s3cret" not in result.output + result.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--endpoint", "localhost:4318"], "not an http(s) URL"),
        (["--endpoint", "http://127.0.0.1:9", "--header", "nokey"], "not KEY=VALUE"),
        (["--endpoint", "http://127.0.0.1:9"], "could not send the trace"),
    ],
)
def test_bad_endpoints_and_headers_are_refused_with_a_hint(
    tmp_path: Path, args: list[str], said: str
) -> None:
    path = crashed_session(tmp_path)
    result = CliRunner().invoke(main, ["export", path, "--to", "otlp-json", *args])
    assert result.exit_code != 0 and said in result.output + result.stderr
    assert "hint:" in result.output + result.stderr


def test_a_steps_token_usage_is_on_its_chat_span(tmp_path: Path) -> None:
    with turnlog.open(tmp_path, "s1") as log, log.turn():
        log.user("hi")
        with log.step():
            usage = turnlog.events.TokenUsage(input_tokens=412, output_tokens=96, model="m-1")
            log.assistant("hello", usage=usage)
    spans = spans_of(
        parsed(json.loads(export(str(tmp_path / "s1.jsonl"), "--to", "otlp-json").stdout))
    )
    (chat,) = [span for span in spans if span.name == "chat"]
    assert attrs(chat)["gen_ai.usage.input_tokens"] == 412
    assert attrs(chat)["gen_ai.usage.output_tokens"] == 96
    assert attrs(chat)["gen_ai.response.model"] == "m-1"


def test_an_imported_claude_code_session_exports_the_same_way(tmp_path: Path) -> None:
    import foreign_fixtures

    path = foreign_fixtures.cc_parallel_one_answered(tmp_path / "cc")
    store = tmp_path / "store"
    result = CliRunner().invoke(main, ["import", "claude-code", str(path), "--store", str(store)])
    assert result.exit_code == 0, result.output
    (session,) = store.glob("*.jsonl")
    spans = spans_of(parsed(json.loads(export(str(session), "--to", "otlp-json").stdout)))
    tools = [span for span in spans if span.name.startswith("execute_tool")]
    assert tools and {attrs(span)["gen_ai.operation.name"] for span in tools} == {"execute_tool"}
    # The crash the file shows: its open calls' spans end at the last event, marked.
    assert any(attrs(span).get("turnlog.unfinished") for span in tools)


def test_sweep_sends_the_trace_of_each_session_it_repaired(
    tmp_path: Path, receiver: tuple[str, list[tuple[str, dict[str, str], bytes]]]
) -> None:
    url, received = receiver
    crashed_session(tmp_path, recover=False)
    with turnlog.open(tmp_path, "fine") as log, log.turn():
        log.user("nothing crashed here")
    args = ["sweep", "--store", str(tmp_path), "--otlp-endpoint", url]
    result = CliRunner().invoke(main, [*args, "--otlp-header", "x-key=k1"])
    assert result.exit_code == 0, result.output
    ((where, headers, body),) = received  # only the repaired session
    assert where == "/v1/traces" and headers["x-key"] == "k1"
    spans = spans_of(parsed(json.loads(body)))
    assert {attrs(s).get("turnlog.rule") for s in spans} >= {"R1", "R2"}
    assert not any(attrs(s).get("turnlog.unfinished") for s in spans)
    assert "k1" not in result.output + result.stderr


def test_sweep_refuses_a_bad_endpoint_before_repairing(tmp_path: Path) -> None:
    crashed_session(tmp_path, recover=False)
    before = (tmp_path / "s1.jsonl").read_bytes()
    args = ["sweep", "--store", str(tmp_path), "--otlp-endpoint", "collector:4318"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code != 0 and "hint:" in result.output + result.stderr
    assert (tmp_path / "s1.jsonl").read_bytes() == before


def test_a_subagent_is_a_trace_of_its_own_linked_from_the_call_that_spawned_it(
    tmp_path: Path,
) -> None:
    manager_tree(tmp_path)
    parent = spans_of(
        parsed(json.loads(export(str(tmp_path / "boss.jsonl"), "--to", "otlp-json").stdout))
    )
    (delegate,) = [s for s in parent if s.name == "execute_tool delegate"]
    (link,) = delegate.links
    child_id = attrs(delegate)["turnlog.subagent.session"]
    child = spans_of(
        parsed(json.loads(export(child_id, "--store", str(tmp_path), "--to", "otlp-json").stdout))
    )
    first_turn = next(s for s in child if s.name == "invoke_agent")
    assert (link.trace_id, link.span_id) == (first_turn.trace_id, first_turn.span_id)
    assert link.trace_id != delegate.trace_id


def test_a_revived_turn_links_to_the_turn_the_crash_cut_short(tmp_path: Path) -> None:
    crashed_session(tmp_path, recover=False)
    with turnlog.open(tmp_path, "s1") as log:
        turnlog.revive(log)
        with log.turn():
            log.user("carry on")
    spans = spans_of(
        parsed(json.loads(export(str(tmp_path / "s1.jsonl"), "--to", "otlp-json").stdout))
    )
    first, second = [s for s in spans if s.name == "invoke_agent"]
    (link,) = second.links
    assert link.span_id == first.span_id and attrs(second)["turnlog.revival"] == 1


def test_a_pause_and_its_decision_are_events_on_the_calls_span(tmp_path: Path) -> None:
    with turnlog.open(tmp_path, "s1") as log:
        log.begin_turn()
        log.user("pay")
        log.begin_step()
        log.assistant("", tool_calls=[ToolCall(id="c1", name="pay")])
        log.pause("c1", kind="approval")
        log.approve("c1", by="alice")
    spans = spans_of(
        parsed(json.loads(export(str(tmp_path / "s1.jsonl"), "--to", "otlp-json").stdout))
    )
    (pay,) = [s for s in spans if s.name == "execute_tool pay"]
    assert [e.name for e in pay.events] == ["turnlog.paused", "turnlog.decision"]
