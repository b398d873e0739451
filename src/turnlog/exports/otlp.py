"""A session as an OpenTelemetry trace: OTLP/JSON GenAI spans, turnlog's repairs marked.

One trace per session; one `invoke_agent` span per turn, one `chat` span
per step (a model request and what it asked for), one `execute_tool` span
per tool call, nested turn > step > tool, their times from the events.
Ids derive from the session id and the events (a turn's and a step's seq,
a call's id and the seq that asked for it), so exporting the same log twice
sends the same spans, which a backend deduplicates, and a revived run's
later turns join the same trace. What the conventions have no word for
goes under `turnlog.`: a synthetic result's origin, risk and rule, a turn's
end reason. Content (arguments, results, the model's text) only with
`content=True`, as the conventions advise. Pure: events in, a dict out.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from turnlog import events as ev
from turnlog.events import Event
from turnlog.text import display_text

# OTLP's enums, as their numbers (the JSON encoding allows either).
_KIND_INTERNAL = 1
_KIND_CLIENT = 3
_STATUS_OK = 1
_STATUS_ERROR = 2
# Turn ends that are failures of the run, not of a call.
_FAILED_ENDS = frozenset({"interrupted", "error"})


def trace_id(session_id: str) -> str:
    """The session's trace id: 16 bytes of a hash of its id, as hex."""
    return hashlib.sha256(b"turnlog trace\0" + session_id.encode()).hexdigest()[:32]


def span_id(session_id: str, key: str) -> str:
    """A span's id: 8 bytes of a hash of the session id and the span's key."""
    return hashlib.sha256(f"turnlog span\0{session_id}\0{key}".encode()).hexdigest()[:16]


def _nanos(ts: str) -> int:
    moment = dt.datetime.fromisoformat(ts)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    delta = moment - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


def _value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    return {"stringValue": str(value)}


def attributes(pairs: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"key": key, "value": _value(value)} for key, value in pairs.items() if value is not None
    ]


@dataclass
class _Span:
    key: str
    name: str
    parent: _Span | None
    start_ns: int
    kind: int = _KIND_INTERNAL
    end_ns: int | None = None
    attrs: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    # Span links (a revival's interrupted turn, a subagent's first turn) and
    # span events (a pause, a decision), encoded as OTLP has them.
    links: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)

    def encode(self, session_id: str, last_ns: int) -> dict[str, Any]:
        attrs = dict(self.attrs)
        if self.end_ns is None:
            # Never ended in the log (a crash not yet recovered): ended at
            # the log's last event, and said so.
            attrs["turnlog.unfinished"] = True
        span: dict[str, Any] = {
            "traceId": trace_id(session_id),
            "spanId": span_id(session_id, self.key),
            "name": self.name,
            "kind": self.kind,
            "startTimeUnixNano": str(self.start_ns),
            "endTimeUnixNano": str(max(self.end_ns or last_ns, self.start_ns)),
            "attributes": attributes(attrs),
            "status": (
                {"code": _STATUS_ERROR, "message": self.error}
                if self.error is not None
                else {"code": _STATUS_OK}
            ),
        }
        if self.parent is not None:
            span["parentSpanId"] = span_id(session_id, self.parent.key)
        if self.links:
            span["links"] = self.links
        if self.events:
            span["events"] = self.events
        return span


class _Builder:
    """Walks the events once, opening and closing spans."""

    def __init__(self, session_id: str, content: bool, child_turns: dict[str, int]) -> None:
        self.session_id = session_id
        self.content = content
        self.child_turns = child_turns
        self.last_turn: _Span | None = None
        self.revived: int | None = None
        self.agent: dict[str, Any] = {}
        self.spans: list[_Span] = []
        self.turn: _Span | None = None
        self.step: _Span | None = None
        self.calls: dict[str, _Span] = {}
        self.last_ns = 0

    def _open(self, span: _Span) -> _Span:
        self.spans.append(span)
        return span

    def apply(self, event: Event) -> None:
        if event.ts is not None:
            self.last_ns = max(self.last_ns, _nanos(event.ts))
        now = self.last_ns
        data = event.data
        if isinstance(data, ev.Session):
            if data.agent is not None:
                agent = data.agent
                self.agent = {"gen_ai.agent.id": agent.id, "gen_ai.agent.name": agent.label}
        elif isinstance(data, ev.TurnStart):
            attrs = {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.conversation.id": self.session_id,
                **self.agent,
                "turnlog.turn": data.turn,
                "turnlog.revivals": data.revivals,
            }
            if event.origin is not None:
                attrs["turnlog.origin"] = event.origin
            key = f"turn:{event.seq}"
            self.turn = self._open(_Span(key, "invoke_agent", None, now, attrs=attrs))
            if self.revived is not None and self.last_turn is not None:
                # The run revived: this turn carries on the one a crash cut short.
                self.turn.attrs["turnlog.revival"] = self.revived
                self.turn.links.append(_link(self.session_id, self.last_turn.key, "revived_from"))
            self.revived = None
            self.last_turn = self.turn
            self.step = None
        elif isinstance(data, ev.RunRevived):
            self.revived = data.revival
        elif isinstance(data, ev.ToolPaused | ev.ToolDecision):
            self._waited(event, data, now)
        elif isinstance(data, ev.SubagentSpawned):
            self._spawned(data)
        elif isinstance(data, ev.TurnEnd):
            if self.turn is not None:
                self.turn.end_ns = now
                self.turn.attrs["turnlog.turn.reason"] = data.reason
                if data.reason in _FAILED_ENDS:
                    self.turn.error = f"turn ended {data.reason}"
            self._close_step(now)
            self.turn = None
        elif isinstance(data, ev.StepStart):
            attrs = {"gen_ai.operation.name": "chat", "gen_ai.conversation.id": self.session_id}
            attrs["turnlog.step"] = data.step
            self.step = self._open(
                _Span(f"step:{event.seq}", "chat", self.turn, now, kind=_KIND_CLIENT, attrs=attrs)
            )
        elif isinstance(data, ev.StepEnd):
            if self.step is not None:
                self.step.attrs["turnlog.step.outcome"] = data.outcome
            self._close_step(now)
        elif isinstance(data, ev.AssistantMessage):
            self._asked(event, data, now)
        elif isinstance(data, ev.ToolDispatch):
            span = self.calls.get(data.call_id)
            if span is not None:
                span.start_ns = now
                span.attrs["turnlog.idempotency"] = data.idempotency
        elif isinstance(data, ev.ToolResult):
            self._answered(event, data, now)

    def _waited(self, event: Event, data: ev.ToolPaused | ev.ToolDecision, now: int) -> None:
        """A pause or a decision: an event on the call's span."""
        span = self.calls.get(data.call_id)
        if span is None:
            return
        if isinstance(data, ev.ToolPaused):
            name = "turnlog.paused"
            pairs: dict[str, Any] = {
                "turnlog.pause.kind": data.kind,
                "turnlog.pause.until": data.until,
            }
        else:
            name = "turnlog.decision"
            pairs = {"turnlog.decision": data.decision, "turnlog.decision.by": data.by}
        span.events.append(
            {"timeUnixNano": str(now), "name": name, "attributes": attributes(pairs)}
        )

    def _spawned(self, data: ev.SubagentSpawned) -> None:
        """A subagent's session is a trace of its own: the spawning call links to it."""
        span = self.calls.get(data.call_id or "")
        if span is None or data.child is None:
            return
        span.attrs["turnlog.subagent.session"] = data.child
        first_turn = self.child_turns.get(data.child)
        if first_turn is not None:
            span.links.append(_link(data.child, f"turn:{first_turn}", "subagent"))

    def _close_step(self, now: int) -> None:
        if self.step is not None and self.step.end_ns is None:
            self.step.end_ns = now
        self.step = None

    def _asked(self, event: Event, data: ev.AssistantMessage, now: int) -> None:
        if self.content and self.step is not None and display_text(data.content):
            self.step.attrs["gen_ai.output.messages"] = display_text(data.content)
        if data.usage is not None and self.step is not None:
            self.step.attrs["gen_ai.usage.input_tokens"] = data.usage.input_tokens
            self.step.attrs["gen_ai.usage.output_tokens"] = data.usage.output_tokens
            self.step.attrs["gen_ai.response.model"] = data.usage.model
        for call in data.tool_calls:
            attrs: dict[str, Any] = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": call.name,
                "gen_ai.tool.call.id": call.id,
            }
            if self.content:
                attrs["gen_ai.tool.call.arguments"] = _json(call.arguments)
            parent = self.step or self.turn
            key = f"tool:{call.id}:{event.seq}"
            self.calls[call.id] = self._open(
                _Span(key, f"execute_tool {call.name}", parent, now, attrs=attrs)
            )

    def _answered(self, event: Event, data: ev.ToolResult, now: int) -> None:
        span = self.calls.pop(data.call_id, None)
        if span is None:
            return  # a result with no request in this log: nothing to time
        span.end_ns = now
        if event.origin is not None:
            span.attrs["turnlog.origin"] = event.origin
        span.attrs["turnlog.risk"] = data.risk
        span.attrs["turnlog.rule"] = data.rule
        if data.rerun:
            span.attrs["turnlog.rerun"] = True
        if self.content:
            span.attrs["gen_ai.tool.call.result"] = display_text(data.content)
        if data.is_error:
            span.error = data.risk or "the tool reported an error"


def _link(session_id: str, key: str, kind: str) -> dict[str, Any]:
    return {
        "traceId": trace_id(session_id),
        "spanId": span_id(session_id, key),
        "attributes": attributes({"turnlog.link.type": kind}),
    }


def _json(value: Any) -> str:
    import msgspec

    return msgspec.json.encode(value).decode()


def trace_request(
    session_id: str,
    events: Iterable[Event],
    *,
    content: bool = False,
    service_name: str = "turnlog",
    version: str | None = None,
    child_turns: dict[str, int] | None = None,
) -> dict[str, Any]:
    """An OTLP/JSON `ExportTraceServiceRequest` of the session's events.
    `child_turns` gives each subagent session's first turn's seq, for the
    spawning call's link to the subagent's own trace."""
    builder = _Builder(session_id, content, child_turns or {})
    for event in events:
        builder.apply(event)
    spans = [span.encode(session_id, builder.last_ns) for span in builder.spans]
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": attributes({"service.name": service_name})},
                "scopeSpans": [
                    {"scope": {"name": "turnlog", "version": version or ""}, "spans": spans}
                ],
            }
        ]
    }
