"""A session as one self-contained HTML page: turns, steps, calls and every repair, offline.

The page loads nothing: its CSS and script are inline, so it opens from
`file://` and can be attached to a bug report. The contract a test holds:
every event is an element with `data-seq` and `data-type`; a synthetic one
carries `data-origin`; a tool result with a risk carries `data-risk` and
`data-rule`. A turn that needs no attention is collapsed and its content
kept in a `<template>`, put in the page when the turn is opened, so a long
session's page stays responsive. Pure: events in, text out.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import html
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import msgspec

from turnlog import events as ev
from turnlog.core.damage import Problem, TornTail
from turnlog.events import Event
from turnlog.text import display_text

#: Texts longer than this are folded behind their first line.
FOLD_CHARS = 600
RISK_WORDS = {"tool_outcome_unknown": "may have run", "tool_not_started": "not started"}
# Turn ends that need a look: the run did not finish its turn.
_ALARMING_ENDS = frozenset({"interrupted", "error", "budget_exhausted", "expired"})

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{position:sticky;top:0;background:#fff;border-bottom:1px solid #dde;
padding:10px 16px;z-index:1}
h1{font-size:17px;margin:0 0 4px}.summary{color:#556;margin:0 0 6px}
header input[type=search]{width:260px;padding:3px 6px}
main{padding:10px 16px}
details.turn{background:#fff;border:1px solid #dde;border-radius:6px;margin:8px 0}
details.turn>summary{cursor:pointer;padding:6px 10px;font-weight:600}
details.turn[data-human]>summary{background:#fde8e8}
.step{border-left:3px solid #cfd6e4;margin:6px 10px 6px 16px;padding-left:8px}
.ev{padding:2px 6px;border-radius:4px;margin:1px 0}.ev:hover{background:#eef2f8}
.seq{color:#99a;font-size:12px;margin-right:6px}.kind{font-weight:600;margin-right:6px}
.ts{color:#99a;font-size:12px;margin-right:6px}.dur{color:#667;font-size:12px;margin-left:6px}
.t-user_message .kind{color:#1f4fb4}.t-assistant_message .kind{color:#16794a}
.t-tool_dispatch .kind,.t-tool_result .kind{color:#0b6b7a}
pre{white-space:pre-wrap;word-break:break-word;margin:2px 0 2px 18px;
font:12px/1.4 ui-monospace,monospace;background:#f1f3f6;padding:4px 6px;border-radius:4px}
.badge{display:inline-block;border-radius:10px;padding:0 7px;font-size:12px;margin-right:4px}
.origin{background:#fff3c4;color:#6b5200}.risk-tool_outcome_unknown{background:#c62828;color:#fff}
.risk-tool_not_started{background:#f2c94c;color:#3b2f00}.error{background:#fbe0e0;color:#8a1c1c}
.ended-interrupted,.ended-error{color:#c62828}.usage{background:#e8eef9;color:#2a3f6b}
.verdict{margin:2px 0 2px 18px;padding:2px 6px;border:1px dashed #c62828;border-radius:4px}
.hidden{display:none}
.damage{margin:8px 0;padding:6px 10px;background:#fff4e5;border:1px solid #e0a040;border-radius:6px}
body.human-only details.turn:not([data-human]){display:none}
section.child{border-top:2px solid #cfd6e4;margin-top:18px;padding-top:6px}
h2{font-size:15px;margin:4px 0}
"""

_SCRIPT = """
(function(){
  function fill(d){var t=d.querySelector(':scope > template');
    if(t){d.appendChild(t.content);t.remove();}}
  var turns=document.querySelectorAll('details.turn');
  turns.forEach(function(d){d.addEventListener('toggle',function(){if(d.open)fill(d);});});
  function expandAll(){turns.forEach(function(d){fill(d);d.open=true;});}
  document.getElementById('expand').addEventListener('click',expandAll);
  document.getElementById('human').addEventListener('change',function(e){
    document.body.classList.toggle('human-only',e.target.checked);});
  document.getElementById('q').addEventListener('input',function(e){
    var q=e.target.value.toLowerCase();if(q)expandAll();
    document.querySelectorAll('.ev').forEach(function(el){
      el.classList.toggle('hidden',!!q&&el.textContent.toLowerCase().indexOf(q)<0);});});
  // The address says what to show: #all opens every turn, #human keeps
  // what needs a human, #q=TEXT searches (a link to a view of the page).
  var hash=decodeURIComponent(location.hash.slice(1));
  if(hash==='all')expandAll();
  if(hash==='human'){var h=document.getElementById('human');h.checked=true;
    h.dispatchEvent(new Event('change'));}
  if(hash.indexOf('q=')===0){var q=document.getElementById('q');q.value=hash.slice(2);
    q.dispatchEvent(new Event('input'));}
})();
"""


def _csp_hash(source: str) -> str:
    digest = hashlib.sha256(source.encode()).digest()
    return "'sha256-" + base64.b64encode(digest).decode() + "'"


#: Marks a page as turnlog's, so a second `show --html -o` may replace it.
PAGE_MARKER = b'<meta name="generator" content="turnlog timeline">'
# The page runs its one script and its one style sheet, named by their
# hashes, and loads nothing: text from a session that ever reached the
# markup unescaped could not run (an inline handler, a script of its own)
# nor fetch anything.
_CSP = (
    "default-src 'none'; "
    f"script-src {_csp_hash(_SCRIPT)}; style-src {_csp_hash(_STYLE)}; "
    "img-src data:; base-uri 'none'; form-action 'none'"
)
_HEAD = PAGE_MARKER.decode() + f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


def _seconds_between(start: str | None, end: str | None) -> float | None:
    if start is None or end is None:
        return None
    try:
        return (dt.datetime.fromisoformat(end) - dt.datetime.fromisoformat(start)).total_seconds()
    except ValueError:
        return None


def _count(number: int, one: str, many: str) -> str:
    """`1 turn`, `2 turns`: the number with the word that agrees with it."""
    return f"{number:,} {one if number == 1 else many}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 1:
        text = f"{seconds * 1000:.0f} ms"
    elif seconds < 120:
        text = f"{seconds:.1f} s"
    else:
        text = f"{seconds / 60:.1f} min"
    return f'<span class="dur">took {text}</span>'


@dataclass
class _Turn:
    """The open turn's parts while its events are walked."""

    start: Event
    body: list[str] = field(default_factory=list)
    human: bool = False
    repaired: int = 0
    end: ev.TurnEnd | None = None
    end_ts: str | None = None


@dataclass(frozen=True)
class Verdict:
    """What a repair would answer for a call the file leaves unanswered
    (`doctor`'s verdict on a Claude Code or Codex transcript), shown, not written."""

    call_id: str
    risk: str | None
    rule: str | None
    text: str


class _Page:
    def __init__(self, session_id: str, redact: bool, verdicts: dict[str, Verdict]) -> None:
        self.session_id = session_id
        self.redact = redact
        self.verdicts = verdicts
        self.out: list[str] = []
        self.turn: _Turn | None = None
        self.step_open = False
        self.step_start_ts: str | None = None
        self.dispatch_ts: dict[str, str | None] = {}
        self.events = 0
        self.turns = 0
        self.repaired = 0
        self.human = 0
        self.first_ts: str | None = None
        self.last_ts: str | None = None

    # -- text --------------------------------------------------------------

    def _text(self, text: str, *, sized: bool = False, whole: bool = False) -> str:
        if sized and self.redact:
            return f'<pre class="redacted">({len(text.encode())} bytes)</pre>'
        if whole or len(text) <= FOLD_CHARS:
            return f"<pre>{_esc(text)}</pre>" if text else ""
        first = text.splitlines()[0][:120] if text.strip() else ""
        return (
            f"<details><summary>{_esc(first)} … ({len(text):,} characters)</summary>"
            f"<pre>{_esc(text)}</pre></details>"
        )

    def _sink(self) -> list[str]:
        return self.turn.body if self.turn is not None else self.out

    # -- events ------------------------------------------------------------

    def add(self, event: Event) -> None:
        self.events += 1
        data = event.data
        if isinstance(data, ev.TurnStart):
            self._close_turn()
            self.turns += 1
            self.turn = _Turn(event)
            return
        if isinstance(data, ev.StepStart):
            self._close_step()
            self.step_open = True
            self.step_start_ts = event.ts
            self._sink().append('<section class="step">')
            self._sink().append(self._line(event, f"step {data.step or ''}", ""))
            return
        if isinstance(data, ev.StepEnd):
            body = _esc(data.outcome or "")
            took = _duration(_seconds_between(self.step_start_ts, event.ts))
            self._sink().append(self._line(event, f"step {data.step or ''} end", body + took))
            self._close_step()
            return
        if isinstance(data, ev.TurnEnd):
            self._close_step()
            if self.turn is not None:
                self.turn.end, self.turn.end_ts = data, event.ts
                self.turn.human = self.turn.human or data.reason in _ALARMING_ENDS
            reason = _esc(data.reason)
            self._sink().append(
                self._line(event, "turn end", f'<span class="ended-{reason}">{reason}</span>')
            )
            self._close_turn()
            return
        self._sink().append(self._event(event))

    def _close_step(self) -> None:
        if self.step_open:
            self._sink().append("</section>")
            self.step_open = False

    def _close_turn(self) -> None:
        self._close_step()
        turn = self.turn
        if turn is None:
            return
        self.turn = None
        start = turn.start
        assert isinstance(start.data, ev.TurnStart)
        number = start.data.turn if start.data.turn is not None else "?"
        ended = turn.end.reason if turn.end is not None else "open (no turn end in the log)"
        took = _duration(_seconds_between(start.ts, turn.end_ts))
        count = turn.end.steps if turn.end is not None else None
        steps = f" · {count} step{'s' if count != 1 else ''}" if count else ""
        badges = ""
        if start.data.revivals:
            badges += f' <span class="badge origin">after revival {start.data.revivals}</span>'
        if turn.repaired:
            badges += f' <span class="badge origin">{turn.repaired} repaired</span>'
        attrs = f'data-seq="{start.seq}" data-type="turn_start" data-turn="{number}"'
        if start.origin:
            attrs += f' data-origin="{_esc(start.origin)}"'
        if turn.human:
            attrs += " data-human"
        summary = f"Turn {number} · {_esc(ended)}{steps}{took}{badges}"
        inner = "".join(turn.body)
        if turn.human:
            self.out.append(
                f'<details class="turn" open {attrs}><summary>{summary}</summary>{inner}</details>'
            )
        else:
            self.out.append(
                f'<details class="turn" {attrs}><summary>{summary}</summary>'
                f"<template>{inner}</template></details>"
            )

    def _line(self, event: Event, kind: str, body: str, extra: str = "") -> str:
        kind_class = _esc(event.type)
        attrs = f'class="ev t-{kind_class}" data-seq="{event.seq}" data-type="{kind_class}"'
        origin = ""
        if event.origin:
            attrs += f' data-origin="{_esc(event.origin)}"'
            origin = f'<span class="badge origin">{_esc(event.origin)}</span>'
        ts = ""
        if event.ts:
            # The time of day, to the millisecond; the header gives the dates.
            clock = event.ts[11:23] if len(event.ts) >= 23 else event.ts
            ts = f'<span class="ts">{_esc(clock)}</span>'
            self.first_ts = self.first_ts or event.ts
            self.last_ts = event.ts
        return (
            f'<div {attrs}{extra}><span class="seq">#{event.seq}</span>{ts}'
            f'<span class="kind">{_esc(kind)}</span>{origin}{body}</div>'
        )

    def _event(self, event: Event) -> str:
        data = event.data
        if isinstance(data, ev.Session):
            return self._line(event, "session", _esc(data.session_id))
        if isinstance(data, ev.UserMessage | ev.SystemMessage):
            kind = "user" if isinstance(data, ev.UserMessage) else "system"
            note = ""
            if isinstance(data, ev.UserMessage) and data.injected not in (None, event.origin):
                note = f'<span class="badge origin">{_esc(data.injected)}</span>'
            if isinstance(data, ev.UserMessage) and data.delivers:
                note += f'<span class="badge">report of {_esc(data.delivers)}</span>'
            # An injected notice (a revival's, a deadline's) is shown whole:
            # it is what the model was told.
            injected = isinstance(data, ev.UserMessage) and data.injected is not None
            text = self._text(display_text(data.content), whole=injected)
            return self._line(event, kind, note + text)
        if isinstance(data, ev.AssistantMessage):
            return self._line(event, "assistant", self._assistant(data))
        if isinstance(data, ev.ToolDispatch):
            self.dispatch_ts[data.call_id] = event.ts
            body = f"{_esc(data.name or '')}({_esc(data.call_id)})"
            if data.idempotency:
                body += f' <span class="badge">{_esc(data.idempotency)}</span>'
            if data.timeout_s is not None:
                body += f' <span class="badge">deadline {data.timeout_s:g} s</span>'
            if data.background:
                body += f' <span class="badge">background → {_esc(data.join or "")}</span>'
            return self._line(event, "dispatch", body)
        if isinstance(data, ev.ToolResult):
            return self._result(event, data)
        if isinstance(data, ev.ToolPaused):
            body = f"{_esc(data.name or '')}({_esc(data.call_id)}) waits for {_esc(data.kind)}"
            if data.until:
                body += f" until {_esc(data.until)}"
            return self._line(event, "paused", body + self._text(data.prompt or ""))
        if isinstance(data, ev.ToolDecision):
            body = f"{_esc(data.call_id)} {_esc(data.decision)}"
            if data.by:
                body += f" by {_esc(data.by)}"
            return self._line(event, "decision", body + self._text(data.reason or ""))
        if isinstance(data, ev.RunRevived):
            return self._line(event, "run revived", f"revival {data.revival}")
        if isinstance(data, ev.Compaction):
            body = f"through seq {data.through_seq}" + self._text(display_text(data.summary))
            return self._line(event, "compaction", body)
        if isinstance(data, ev.SubagentSpawned | ev.SubagentSettled):
            body = _esc(data.agent_id)
            if data.child:
                child = _esc(data.child)
                body += f' <a class="badge" href="#session-{child}">{child}</a>'
            if isinstance(data, ev.SubagentSettled) and data.outcome:
                body += f" {_esc(data.outcome)}"
            return self._line(event, event.type.replace("_", " "), body)
        if isinstance(data, ev.Custom) and data.type == ev.LATE_RESULT_TYPE:
            found = data.fields
            content = found.get("content")
            text = display_text(content) if isinstance(content, str | list) else str(content)
            body = (
                f"{_esc(str(found.get('name')))}({_esc(str(found.get('call_id')))}) "
                '<span class="badge">after its deadline: recorded, not delivered</span>'
                f"{self._text(text, sized=True)}"
            )
            return self._line(event, "late result", body)
        # Another tool's record (an `x_` type) may hold arguments and
        # results: under --redact only its size is shown.
        fields = msgspec.json.encode(msgspec.to_builtins(data)).decode()
        return self._line(event, event.type, self._text(fields, sized=True))

    def _assistant(self, data: ev.AssistantMessage) -> str:
        parts = [self._usage(data.usage), self._text(display_text(data.content))]
        for call in data.tool_calls:
            arguments = msgspec.json.encode(call.arguments).decode()
            parts.append(
                f'<div class="call" data-call="{_esc(call.id)}">→ {_esc(call.name)}'
                f"({_esc(call.id)}){self._text(arguments, sized=True)}"
                f"{self._verdict(call.id)}</div>"
            )
        return "".join(parts)

    def _verdict(self, call_id: str) -> str:
        verdict = self.verdicts.get(call_id)
        if verdict is None:
            return ""
        risk = verdict.risk or ""
        word = RISK_WORDS.get(risk, risk or "answered")
        if risk == "tool_outcome_unknown":
            self.human += 1
            if self.turn is not None:
                self.turn.human = True
        return (
            f'<div class="verdict" data-type="verdict" data-call="{_esc(call_id)}" '
            f'data-risk="{_esc(risk)}" data-rule="{_esc(verdict.rule or "")}">'
            f'<span class="kind">unanswered in the file; doctor would answer</span>'
            f'<span class="badge risk-{_esc(risk)}">{_esc(word)} · {_esc(verdict.rule or "")}'
            f"</span>{self._text(verdict.text)}</div>"
        )

    def _usage(self, usage: ev.TokenUsage | None) -> str:
        if usage is None:
            return ""
        words = []
        if usage.input_tokens is not None:
            words.append(f"{usage.input_tokens:,} in")
        if usage.output_tokens is not None:
            words.append(f"{usage.output_tokens:,} out")
        if usage.model:
            words.append(usage.model)
        tokens = " · ".join(words)
        return f'<span class="badge usage" data-tokens="{_esc(tokens)}">{_esc(tokens)}</span>'

    def _result(self, event: Event, data: ev.ToolResult) -> str:
        extra = ""
        badges = ""
        if data.risk:
            extra = f' data-risk="{_esc(data.risk)}" data-rule="{_esc(data.rule or "")}"'
            word = RISK_WORDS.get(data.risk, data.risk)
            badges += (
                f'<span class="badge risk-{_esc(data.risk)}">{_esc(word)} · '
                f"{_esc(data.rule or '')}</span>"
            )
            self.repaired += 1
            if self.turn is not None:
                self.turn.repaired += 1
        if data.risk == "tool_outcome_unknown":
            extra += " data-human"
            self.human += 1
            if self.turn is not None:
                self.turn.human = True
        if data.is_error and not data.risk:
            badges += '<span class="badge error">error</span>'
        if data.orphaned:
            badges += '<span class="badge">orphaned: not in the transcript</span>'
        if data.background:
            badges += '<span class="badge">background: acknowledgement, not the answer</span>'
        if data.delivers:
            badges += f'<span class="badge">report of {_esc(data.delivers)}</span>'
        dispatched = self.dispatch_ts.pop(data.call_id, None)
        # A result turnlog wrote is not the tool's: it has no duration.
        took = "" if event.origin else _duration(_seconds_between(dispatched, event.ts))
        body = (
            f"{_esc(data.name or '')}({_esc(data.call_id)}) {badges}{took}"
            f"{self._text(display_text(data.content), sized=True)}"
        )
        return self._line(event, "result", body, extra)

    def _counts(self) -> str:
        events = _count(self.events, "event", "events")
        turns = _count(self.turns, "turn", "turns")
        repaired = _count(self.repaired, "call", "calls")
        return f"{events} · {turns} · {repaired} answered by turnlog"

    def _span(self) -> str:
        if self.first_ts is None or self.last_ts is None:
            return ""
        return f"{_esc(self.first_ts)} to {_esc(self.last_ts)} · "

    def finish(self) -> Iterator[str]:
        self._close_turn()
        title = f"turnlog: {self.session_id}"
        yield (
            f'<!doctype html><html lang="en"><head><meta charset="utf-8">{_HEAD}'
            f'<meta name="viewport" content="width=device-width,initial-scale=1">'
            f"<title>{_esc(title)}</title><style>{_STYLE}</style></head><body>"
        )
        yield (
            f"<header><h1>{_esc(self.session_id)}</h1>"
            f'<p class="summary">{self._span()}{self._counts()} · '
            f'<b data-needs-human="{self.human}">{_count(self.human, "needs", "need")} a human</b> '
            "(outcome unknown)</p>"
            '<label><input type="checkbox" id="human"> only what needs a human</label> '
            '<input type="search" id="q" placeholder="search the session"> '
            '<button id="expand">expand all</button></header><main id="log">'
        )
        yield from self.out

    def as_child(self) -> Iterator[str]:
        """This session as a section of its parent's page (`show --tree`)."""
        self._close_turn()
        session = _esc(self.session_id)
        yield (
            f'<section class="child" id="session-{session}" data-session="{session}">'
            f'<h2>subagent session {session}</h2><p class="summary">{self._span()}'
            f"{self._counts()} · {_count(self.human, 'needs', 'need')} a human</p>"
        )
        yield from self.out
        yield "</section>"


_END = f"</main><script>{_SCRIPT}</script></body></html>\n"


def _damage(torn: TornTail | None, problems: Iterable[Problem]) -> str:
    """What the store found wrong with the log, at its place: the end."""
    parts = []
    if torn is not None:
        moved = f"; moved aside to {_esc(torn.sidecar)}" if torn.sidecar else ""
        parts.append(
            f'<div class="damage" data-type="damage" data-kind="torn_tail" '
            f'data-offset="{torn.offset}"><span class="kind">torn tail</span>'
            f"{torn.size_bytes:,} bytes at offset {torn.offset:,} are a record the process "
            f"never finished writing (it died mid-write); every reader stops before "
            f"them{moved}</div>"
        )
    for problem in problems:
        if torn is not None and problem.offset == torn.offset:
            continue  # the torn tail, said above
        where = f"line {problem.line}" if problem.line is not None else f"offset {problem.offset}"
        parts.append(
            f'<div class="damage" data-type="damage" data-kind="problem">'
            f'<span class="kind">damage at {_esc(where)}</span>{_esc(problem.message)}</div>'
        )
    return "".join(parts)


def timeline_html(
    session_id: str,
    events: Iterable[Event],
    *,
    redact: bool = False,
    verdicts: Iterable[Verdict] = (),
    children: Iterable[tuple[str, Iterable[Event]]] = (),
    torn_tail: TornTail | None = None,
    problems: Iterable[Problem] = (),
) -> str:
    """The session's page, whole. `redact` replaces tool arguments and
    results with their sizes, for a file that leaves the machine;
    `verdicts` are shown beside the calls a foreign file left unanswered;
    `children` (session id, events) are subagent sessions shown after it,
    each linked from the call that spawned it; a torn tail and located
    problems (from `inspect`) are shown where they are, at the end."""
    page = _Page(session_id, redact, {verdict.call_id: verdict for verdict in verdicts})
    for event in events:
        page.add(event)
    parts = list(page.finish())
    parts.append(_damage(torn_tail, problems))
    for child_id, child_events in children:
        child = _Page(child_id, redact, {})
        for event in child_events:
            child.add(event)
        parts.extend(child.as_child())
    parts.append(_END)
    return "".join(parts)
