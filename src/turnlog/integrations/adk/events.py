"""ADK's events kept in a turnlog session, and read back for ADK with the answers it never saw."""

from __future__ import annotations

import datetime as dt
from typing import Any

from google.adk.events.event import Event as AdkEvent
from google.genai import types

from turnlog import events as ev
from turnlog.events import Origin

# The ADK event itself, kept beside what turnlog made of it: ADK's state
# deltas, authors and invocation ids come back exactly as ADK wrote them.
ADK_EVENT = "x_adk_event"
# The ids of the function responses in a kept ADK event that answer no call
# of the log: ADK's stand-in for a call that waits on a pause (see
# `adk_pauses`). The answer the log gives such a call later is one ADK never saw.
STAND_INS = "stand_ins"
_REPAIRS = frozenset({Origin.RECOVERY.value, Origin.UNWIND.value})


def timestamp_s(text: str | None) -> float:
    """An event's ISO timestamp as seconds since the epoch, as ADK stamps events (0 for none)."""
    if not text:
        return 0.0
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def adk_events(stored: list[ev.Event]) -> list[AdkEvent]:
    """ADK's events for a session: the ones ADK wrote, as it wrote them, and
    for each tool result ADK never saw (the call's result recorded before a
    crash, or recovery's synthetic one) a function-response event under the
    call's id; the revival notice as a user event. Consecutive responses
    share one event, as ADK groups a step's responses."""
    replay = _Replay(_answered_by_adk(stored))
    for event in stored:
        data = event.data
        if isinstance(data, ev.Custom) and data.type == ADK_EVENT:
            replay.kept(data)
        elif isinstance(data, ev.ToolResult) and data.call_id not in replay.answered:
            if data.orphaned:
                continue  # settled for the record: no call in the transcript asked for it
            replay.unseen_result(event, data)
        elif isinstance(data, ev.UserMessage) and data.injected:
            replay.injected(event, data)
    replay.flush()
    return replay.out


def _answered_by_adk(stored: list[ev.Event]) -> set[str | None]:
    """The call ids a function response in ADK's own kept events answers."""
    answered: set[str | None] = set()
    for event in stored:
        data = event.data
        if isinstance(data, ev.Custom) and data.type == ADK_EVENT:
            content = (data.fields["event"].get("content") or {}).get("parts") or []
            stand_ins = set(data.fields.get(STAND_INS) or ())
            answered.update(
                p["function_response"].get("id")
                for p in content
                if "function_response" in p and p["function_response"].get("id") not in stand_ins
            )
    return answered


class _Replay:
    """ADK's events rebuilt in order, the results ADK never saw gathered until
    another event comes and then written as one function-response event."""

    def __init__(self, answered: set[str | None]) -> None:
        self.answered = answered
        self.out: list[AdkEvent] = []
        # Call id -> the author and invocation of the ADK event that asked for it.
        self.authors: dict[str, tuple[str, str | None]] = {}
        self.pending: list[types.Part] = []
        self.meta: list[dict[str, Any]] = []
        self.last: ev.Event | None = None

    def kept(self, data: ev.Custom) -> None:
        """An event ADK wrote, given back as it wrote it."""
        self.flush()
        adk = AdkEvent.model_validate(data.fields["event"])
        for part in (adk.content.parts or []) if adk.content else []:
            if part.function_call is not None:
                self.authors[str(part.function_call.id)] = (adk.author, adk.invocation_id)
        self.out.append(adk)

    def unseen_result(self, event: ev.Event, data: ev.ToolResult) -> None:
        """A result ADK never saw, gathered as a function response under its call's id."""
        text = ev.content_text(data.content)
        key = "error" if data.is_error else "result"
        self.pending.append(
            types.Part(
                function_response=types.FunctionResponse(
                    id=data.call_id, name=data.name, response={key: text}
                )
            )
        )
        self.meta.append(
            {"call_id": data.call_id, "origin": event.origin, "risk": data.risk}
            if event.origin in _REPAIRS
            else {"call_id": data.call_id}
        )
        self.last = event

    def injected(self, event: ev.Event, data: ev.UserMessage) -> None:
        """A message turnlog injected (the revival notice), as a user event."""
        self.flush()
        self.out.append(
            AdkEvent(
                id=f"turnlog-{event.seq}",
                author="user",
                invocation_id=f"turnlog-{event.seq}",
                timestamp=timestamp_s(event.ts),
                content=types.Content(
                    role="user", parts=[types.Part(text=ev.content_text(data.content))]
                ),
                custom_metadata={"turnlog": {"injected": data.injected}},
            )
        )

    def flush(self) -> None:
        """Write the gathered results as one event, authored as the call that asked."""
        last = self.last
        if not self.pending or last is None:
            return
        first_id = str(self.pending[0].function_response.id)  # type: ignore[union-attr]
        author, invocation = self.authors.get(first_id, ("agent", None))
        self.out.append(
            AdkEvent(
                id=f"turnlog-{last.seq}",
                author=author,
                invocation_id=invocation or f"turnlog-{last.seq}",
                timestamp=timestamp_s(last.ts),
                content=types.Content(role="user", parts=list(self.pending)),
                custom_metadata={"turnlog": list(self.meta)},
            )
        )
        self.pending.clear()
        self.meta.clear()
