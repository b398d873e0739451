"""What a TurnlogSession hands the Agents SDK: the items it saved, as it saved them,
with what turnlog itself wrote for the model (recovery's answers, a revival's notice)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from turnlog import events as ev
from turnlog.core.fold import TRANSCRIPT_TYPES
from turnlog.core.state import Message
from turnlog.errors import TurnlogError
from turnlog.events import Origin
from turnlog.handle.bulk import collector_paused
from turnlog.handle.log import Log
from turnlog.providers import openai_responses
from turnlog.stores.skim import RecordHandler

# The items one `add_items` call saved, verbatim, and the seqs of the
# transcript messages they stand for (what the SDK saved is what it reads
# back; the transcript is what recovery, exports and `turnlog show` read).
SAVED_EVENT = "x_openai_agents_saved"
# Items hidden by `pop_item`, and everything up to a seq hidden by `clear_session`.
HIDE_EVENT = "x_openai_agents_hide"
CLEAR_EVENT = "x_openai_agents_clear"
# Before saved batches, items with no transcript message were kept one per
# event; read (never written) so such logs still show them.
ITEM_EVENT = "x_openai_agents_item"

# Messages turnlog writes for the model on its own account: shown to the SDK
# though it never saved them. What the live writer wrote while unwinding a run
# the SDK saw fail (`unwind`) is not: the SDK chose what of that run to keep.
# A rejection recorded with `turnlog reject` is: the model reads that the
# call it asked for did not run. A pause the SDK dropped (A3) is not: the SDK
# leaves a call it holds no answer for out of what the model reads, as it
# does on its own sessions, and the log keeps the answer for exports.
_TURNLOG_ORIGINS = frozenset(
    {
        Origin.RECOVERY,
        Origin.REVIVAL,
        Origin.DEADLINE,
        Origin.BUDGET,
        Origin.BACKGROUND,
        Origin.DECISION,
    }
)

Key = tuple[int, int]


@dataclass(frozen=True)
class SavedBatch:
    """One `add_items` call: its items as JSON, and the messages they cover."""

    seq: int
    raw: bytes
    covers: frozenset[int]


@dataclass
class SessionView:
    """What every live handle on one session agrees on."""

    # Item keys (seq, index) hidden by pop_item, and the seq clear_session hid up to.
    hidden: set[Key] = field(default_factory=set)
    cleared_through: int = -1
    saved: list[SavedBatch] = field(default_factory=list)
    legacy: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    # The transcript message each recorded thing is in: "item:<id>" for a
    # response item the hooks recorded, "call:<id>" for the message asking a
    # call, "output:<id>" for its result.
    seq_of: dict[str, int] = field(default_factory=dict)
    # The run (its context object, the same through one `Runner.run`) whose
    # turn the hooks opened: another run's model call must not land in it.
    run: Any = None
    # `on_agent_end` came while calls still waited on the RunState's decisions:
    # the SDK saves its answers to them next, and that save ends the turn.
    answer_due: bool = False
    # The calls `on_llm_end` dispatched ahead, as ones the SDK runs itself,
    # and the handoffs among a reply's calls (the first runs, the SDK ignores
    # the others), answered when the next model call starts.
    ahead: set[str] = field(default_factory=set)
    handoffs: dict[str, str] = field(default_factory=dict)
    # Whether the events written before this process opened the session are read.
    loaded: bool = False

    def recorded(self, key: str) -> int | None:
        return self.seq_of.get(key)

    def load(self, log: Log) -> None:
        """Read the session's own events the log holds. A skim when it can
        (`skim`); otherwise in the same pass that reads its transcript when
        that is not read yet (a session opened per request then reads its log
        once, not twice)."""
        with log.lock:
            if self.loaded:
                return
            if log.transcript_read:
                for event in log.store.iter_events(log.session_id):
                    self.see(event)
            elif not self.skim(log):
                log.read_transcript(observe=self.see)
            self.loaded = True

    def skim(self, log: Log) -> bool:
        """Load from a skim of the log (`Store.skim`), which decodes only the
        events this view keeps, and leave the transcript unread. True if it
        did; False, with nothing changed, when the store cannot skim, or when
        an older message than the handle's transcript holds is not among
        the saved batches' (`visible_items` would need it: the caller reads
        the whole log instead)."""
        found = SessionView()
        said: list[int] = []
        handlers = _skim_handlers(found, said)
        try:
            with collector_paused():
                count = log.store.skim(log.session_id, handlers)
        except _NotSkimmable:
            return False
        if count is None or count != log.next_seq:
            return False
        start, _ = log.transcript_held()
        covered: set[int] = set()
        for batch in found.saved:
            covered |= batch.covers
        if any(seq < start and seq not in covered for seq in said):
            return False
        self.saved, self.legacy, self.seq_of = found.saved, found.legacy, found.seq_of
        self.hidden, self.cleared_through = found.hidden, found.cleared_through
        return True

    def see(self, event: ev.Event) -> None:
        data = event.data
        if isinstance(data, ev.Custom):
            fields = data.fields
            if data.type == SAVED_EVENT:
                self.saved.append(
                    SavedBatch(
                        event.seq,
                        msgspec.json.encode(fields.get("items", [])),
                        frozenset(int(seq) for seq in fields.get("covers", ())),
                    )
                )
            elif data.type == HIDE_EVENT:
                self.hidden.add((int(fields["seq"]), int(fields["index"])))
            elif data.type == CLEAR_EVENT:
                self.cleared_through = int(fields["through_seq"])
            elif data.type == ITEM_EVENT:
                self.legacy.append((event.seq, dict(fields)))
        elif isinstance(data, ev.AssistantMessage):
            for call in data.tool_calls:
                self.seq_of[f"call:{call.id}"] = event.seq
                if call.extra and isinstance(call.extra.get("item_id"), str):
                    self.seq_of[f"item:{call.extra['item_id']}"] = event.seq
        elif isinstance(data, ev.ToolResult):
            self.seq_of[f"output:{data.call_id}"] = event.seq


class _NotSkimmable(Exception):
    """A record a skim handed over is not in the shape its decoder takes."""


class _SavedData(msgspec.Struct):
    items: msgspec.Raw
    covers: list[int]


class _SavedRecord(msgspec.Struct):
    data: _SavedData


class _CallIds(msgspec.Struct):
    id: str
    extra: dict[str, Any] | None = None


class _AskedData(msgspec.Struct):
    tool_calls: list[_CallIds] = []


class _AskedRecord(msgspec.Struct):
    data: _AskedData


class _AnsweredData(msgspec.Struct):
    call_id: str


class _AnsweredRecord(msgspec.Struct):
    data: _AnsweredData


_saved_decoder = msgspec.json.Decoder(_SavedRecord)
_asked_decoder = msgspec.json.Decoder(_AskedRecord)
_answered_decoder = msgspec.json.Decoder(_AnsweredRecord)


def _skim_handlers(view: SessionView, said: list[int]) -> dict[str, RecordHandler]:
    """What a skim hands `view` (what `SessionView.see` keeps, decoded only
    as far as it needs) and the seqs of the transcript's messages, to `said`."""
    saved = view.saved.append
    seq_of = view.seq_of
    note = said.append

    def on_saved(seq: int, record: bytes) -> None:
        try:
            data = _saved_decoder.decode(record).data
        except msgspec.DecodeError:
            view.see(_decoded(record))  # an odd batch: the careful decode words it
            return
        saved(SavedBatch(seq, bytes(data.items), frozenset(data.covers)))

    def on_asked(seq: int, record: bytes) -> None:
        note(seq)
        try:
            calls = _asked_decoder.decode(record).data.tool_calls
        except msgspec.DecodeError:
            raise _NotSkimmable from None
        for call in calls:
            seq_of[f"call:{call.id}"] = seq
            item_id = call.extra.get("item_id") if call.extra else None
            if isinstance(item_id, str):
                seq_of[f"item:{item_id}"] = seq

    def on_answered(seq: int, record: bytes) -> None:
        note(seq)
        try:
            seq_of[f"output:{_answered_decoder.decode(record).data.call_id}"] = seq
        except msgspec.DecodeError:
            raise _NotSkimmable from None

    def on_said(seq: int, record: bytes) -> None:
        note(seq)

    def on_own(seq: int, record: bytes) -> None:
        view.see(_decoded(record))

    handlers: dict[str, RecordHandler] = dict.fromkeys(TRANSCRIPT_TYPES, on_said)
    handlers |= {"assistant_message": on_asked, "tool_result": on_answered}
    handlers |= dict.fromkeys((SAVED_EVENT,), on_saved)
    handlers |= dict.fromkeys((HIDE_EVENT, CLEAR_EVENT, ITEM_EVENT), on_own)
    return handlers


def _decoded(record: bytes) -> ev.Event:
    try:
        return ev.decode_event(record)
    except TurnlogError:
        raise _NotSkimmable from None


def visible_items(messages: Sequence[Message], view: SessionView) -> list[tuple[Key, Any]]:
    """The session's items as the SDK reads them, oldest first, with their keys.

    Each saved batch gives its items where it was written. A transcript
    message no batch covers is shown, rendered as a Responses item, when the
    SDK never had the chance to save it: everything before the first batch
    (a session written before batches existed, or by turnlog's own API);
    turnlog's answers and notices (recovery, revival, a deadline); the
    message asking a call such an answer settles, and that call's other
    results. A message only the hooks recorded and the SDK chose not to save
    (text an output guardrail dropped) stays in the log, hidden here."""
    with collector_paused():
        return _visible_items(messages, view)


def _visible_items(messages: Sequence[Message], view: SessionView) -> list[tuple[Key, Any]]:
    batches = [(batch, msgspec.json.decode(batch.raw)) for batch in view.saved]
    covered: set[int] = set()
    for batch, _ in batches:
        covered |= batch.covers
    firsts = [min(batch.covers, default=batch.seq) for batch, _ in batches]
    first = min(firsts) if firsts else None
    uncovered = [m for m in messages if m.seq not in covered]
    shown = _shown(uncovered, batches, first)

    out: list[tuple[Key, Any, bool]] = []
    sources: list[tuple[int, int, Any]] = [(m.seq, 0, m) for m in uncovered if m.seq in shown]
    sources += [(batch.seq, 1, items) for batch, items in batches]
    if first is None or view.legacy:
        sources += [(seq, 2, item) for seq, item in view.legacy if first is None or seq < first]
    sources.sort(key=lambda source: (source[0], source[1]))
    for seq, kind, payload in sources:
        if seq <= view.cleared_through:
            continue
        if kind == 0:
            rendered = openai_responses.render([payload])["input"]
        elif kind == 1:
            rendered = payload
        else:
            rendered = [payload]
        for index, item in enumerate(rendered):
            if (seq, index) not in view.hidden:
                out.append(((seq, index), item, kind == 0))
    return _outputs_in_call_order(out)


def _shown(
    uncovered: Iterable[Message], batches: Sequence[tuple[SavedBatch, Any]], first: int | None
) -> set[int]:
    """The seqs of the uncovered messages `visible_items` shows."""
    uncovered = list(uncovered)
    if first is None:
        return {m.seq for m in uncovered}
    settled = {
        m.call_id
        for m in uncovered
        if m.role == "tool" and m.seq > first and m.origin in _TURNLOG_ORIGINS
    }
    shown = {m.seq for m in uncovered if m.seq < first or m.origin in _TURNLOG_ORIGINS}
    calls: set[str] = set()
    for _, items in batches:
        calls.update(
            str(item.get("call_id"))
            for item in items
            if isinstance(item, dict) and str(item.get("type", "")).endswith("_call")
        )
    for m in uncovered:
        if m.role == "assistant" and any(call.id in settled for call in m.tool_calls):
            shown.add(m.seq)
        if m.seq in shown:
            calls.update(call.id for call in m.tool_calls)
    shown.update(m.seq for m in uncovered if m.role == "tool" and m.call_id in calls)
    return shown


def _outputs_in_call_order(items: list[tuple[Key, Any, bool]]) -> list[tuple[Key, Any]]:
    """Each run of consecutive rendered function-call outputs in the order the
    model asked for the calls: the log keeps results in the order they
    finished, the SDK saves them in the order asked. Saved items keep the
    order the SDK saved them in."""
    order: dict[str, int] = {}
    for _, item, _ in items:
        if isinstance(item, dict) and item.get("type") == "function_call":
            order.setdefault(str(item.get("call_id")), len(order))

    def asked(entry: tuple[Key, Any]) -> int:
        return order.get(str(entry[1].get("call_id")), len(order))

    out: list[tuple[Key, Any]] = []
    run: list[tuple[Key, Any]] = []
    for key, item, rendered in items:
        if rendered and isinstance(item, dict) and item.get("type") == "function_call_output":
            run.append((key, item))
            continue
        out += sorted(run, key=asked)
        run = []
        out.append((key, item))
    return out + sorted(run, key=asked)
