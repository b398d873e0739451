"""What a TurnlogSession hands the Agents SDK: the items it saved, as it saved them,
with what turnlog itself wrote for the model (recovery's answers, a revival's notice)."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

import msgspec

from turnlog import events as ev
from turnlog.core.fold import TRANSCRIPT_TYPES
from turnlog.core.state import Message
from turnlog.errors import UnreadableRecordError
from turnlog.events import Origin
from turnlog.handle.bulk import collector_paused
from turnlog.handle.log import Log
from turnlog.providers import openai_responses
from turnlog.stores.skim import REINDEX_AFTER_RECORDS, Record, RecordHandler

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
# The name of the index a store may keep of the events `SessionView.skim` reads.
SKIM_INDEX = "openai_agents"

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


class SavedBatch(NamedTuple):
    """One `add_items` call: its items as JSON, and the messages they cover.
    (A tuple: a long session's first read makes one per call. The JSON is
    bytes, or a `msgspec.Raw` into what that read decoded, never copied.)"""

    seq: int
    raw: bytes | msgspec.Raw
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
    # The turn ends read (seq, whether recovery wrote it), in seq order: a
    # real result no batch holds is shown only in a turn a crash cut short.
    # Ends this process writes later are not added: its own runs end live,
    # and a crashed turn is recovered before a process reads the session.
    turn_ends: list[tuple[int, bool]] = field(default_factory=list)
    # Whether the events written before this process opened the session are
    # read, and the seq after what that read (or the last reindex) covered.
    loaded: bool = False
    read_to: int = 0
    # What a skim found for `seq_of` and left undecoded (the assistant
    # messages' and the results' seqs, and their records as two JSON
    # arrays, copies: nothing else of what the skim read is kept).
    unread: tuple[list[int], bytes, list[int], bytes] | None = None

    def recorded(self, key: str) -> int | None:
        """The seq of the transcript message `key` names, if one was recorded."""
        seq = self.seq_of.get(key)
        unread = self.unread
        if seq is None and unread is not None:
            # An id a record holds appears in its bytes as the writer encoded
            # it, so one found in neither array is in none of them, unread.
            needle = msgspec.json.encode(key.partition(":")[2])
            if needle in unread[1] or needle in unread[3]:
                self.read_ids()
                seq = self.seq_of.get(key)
        return seq

    def read_ids(self) -> None:
        """Decode what a skim left unread into `seq_of`; what was recorded
        since (the newer) stays."""
        if self.unread is None:
            return
        asked_seqs, asked_json, answered_seqs, answered_json = self.unread
        try:
            asked = _asked_decoder.decode(asked_json)
            answered = _answered_decoder.decode(answered_json)
        except msgspec.DecodeError as exc:
            raise UnreadableRecordError(
                f"an assistant message or a tool result does not decode: {exc}"
            ) from exc
        older: dict[str, int] = {}
        for seq, message in zip(asked_seqs, asked, strict=True):
            for call in message.data.tool_calls:
                older[f"call:{call.id}"] = seq
                item_id = call.extra.get("item_id") if call.extra else None
                if isinstance(item_id, str):
                    older[f"item:{item_id}"] = seq
        for seq, result in zip(answered_seqs, answered, strict=True):
            older[f"output:{result.data.call_id}"] = seq
        self.seq_of = older | self.seq_of
        self.unread = None

    def load(self, log: Log) -> None:
        """Read the session's own events the log holds: from its records
        (`skim`), or in the same pass that reads its transcript when the
        transcript is needed anyway (a session opened per request then reads
        its log once, not twice)."""
        with log.lock:
            if self.loaded:
                return
            if log.transcript_read:
                for event in log.store.iter_events(log.session_id):
                    self.see(event)
            elif not self.skim(log):
                log.read_transcript(observe=self.see)
            self.loaded = True
            self.read_to = log.next_seq

    def skim(self, log: Log) -> bool:
        """Load from the records of the types this view keeps
        (`Store.read_records`: a skim where the store can, decoding only
        these), and leave the transcript unread. True if it did; False, with
        nothing changed, when the transcript is needed anyway: a compaction,
        or an older message than the handle's transcript holds that is not
        among the saved batches' (`visible_items` would need it)."""
        found = SessionView()
        skimmed = _Skimmed(found)
        with collector_paused():
            log.store.read_records(log.session_id, skimmed.into(), index=SKIM_INDEX)
            skimmed.finish()
        start, _ = log.transcript_held()
        covered = _covered(found.saved)
        if skimmed.compactions or any(seq < start and seq not in covered for seq in skimmed.said()):
            # A compaction drops results whose call it swallowed, which only
            # the whole transcript knows: the careful read decides then.
            return False
        # Ids the hooks recorded before this first read stay (they are newer).
        self.saved, self.legacy, self.seq_of = found.saved, found.legacy, found.seq_of | self.seq_of
        self.hidden, self.cleared_through = found.hidden, found.cleared_through
        self.turn_ends = found.turn_ends
        self.unread = found.unread
        return True

    def reindex(self, log: Log) -> None:
        """Bring the store's index of the events `skim` reads up to date with
        what was appended since this view was read, once that is enough to
        be worth a rewrite (`REINDEX_AFTER_RECORDS`; fewer are skimmed line
        by line at the next read). A store that keeps no index is left alone."""
        with log.lock:
            if (
                not log.closed
                and log.store.keeps_skim_index
                and log.next_seq - self.read_to >= REINDEX_AFTER_RECORDS
            ):
                log.store.skim(log.session_id, _REINDEX_HANDLERS, index=SKIM_INDEX)
                self.read_to = log.next_seq

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
        elif isinstance(data, ev.TurnEnd):
            self.turn_ends.append((event.seq, event.origin == Origin.RECOVERY))


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


class _EndedRecord(msgspec.Struct):
    origin: str | None = None


_saved_decoder = msgspec.json.Decoder(list[_SavedRecord])
_ended_decoder = msgspec.json.Decoder(list[_EndedRecord])
_asked_decoder = msgspec.json.Decoder(list[_AskedRecord])
_answered_decoder = msgspec.json.Decoder(list[_AnsweredRecord])


class _Skimmed:
    """What a skim hands over for a `SessionView`: the records kept as they
    come (a long log holds thousands), then decoded in bulk by `finish`, each
    only as far as the view needs."""

    def __init__(self, view: SessionView) -> None:
        self.view = view
        self.saved: list[Record] = []
        self.asked: list[Record] = []
        self.answered: list[Record] = []
        self.said_else: list[Record] = []
        self.compactions: list[Record] = []
        self.ended: list[Record] = []
        # The view's own small events (hides, clears, old items), decoded whole.
        self.own: list[Record] = []

    def into(self) -> dict[str, list[Record]]:
        """The list each type's records go to (`Store.read_records`)."""
        into: dict[str, list[Record]] = dict.fromkeys(TRANSCRIPT_TYPES, self.said_else)
        into |= {
            "assistant_message": self.asked,
            "tool_result": self.answered,
            "compaction": self.compactions,
            "turn_end": self.ended,
            SAVED_EVENT: self.saved,
        }
        into |= dict.fromkeys((HIDE_EVENT, CLEAR_EVENT, ITEM_EVENT), self.own)
        return into

    def said(self) -> Iterator[int]:
        """The seqs of the transcript's messages."""
        for records in (self.asked, self.answered, self.said_else):
            for seq, _ in records:
                yield seq

    def finish(self) -> None:
        """Decode what was handed over into the view (what `see` keeps)."""
        view = self.view
        for _, record in self.own:
            view.see(ev.decode_event(bytes(record)))
        batches = _decode_all(_saved_decoder, self.saved)
        if batches is None:
            for _, record in self.saved:  # an odd batch: the careful decode words it
                view.see(ev.decode_event(bytes(record)))
        else:
            view.saved = [
                SavedBatch(seq, batch.data.items, frozenset(batch.data.covers))
                for (seq, _), batch in zip(self.saved, batches, strict=True)
            ]
        ended = _decode_all(_ended_decoder, self.ended)
        if ended is None:
            for _, record in self.ended:  # the careful decode words an odd one
                view.see(ev.decode_event(bytes(record)))
        else:
            view.turn_ends = [
                (seq, record.origin == Origin.RECOVERY)
                for (seq, _), record in zip(self.ended, ended, strict=True)
            ]
        # The ids `seq_of` needs stay in their records until asked for
        # (`SessionView.recorded`): most runs ask only for new ones.
        view.unread = (
            [seq for seq, _ in self.asked],
            _array(self.asked),
            [seq for seq, _ in self.answered],
            _array(self.answered),
        )


_Decoded = TypeVar("_Decoded")


def _array(records: list[Record]) -> bytes:
    """The records as one JSON array (a copy of their bytes)."""
    return b"[" + b",".join(record for _, record in records) + b"]"


def _decode_all(
    decoder: msgspec.json.Decoder[list[_Decoded]], records: list[Record]
) -> list[_Decoded] | None:
    """Every record in one decode; None if one is not in the decoder's shape."""
    try:
        return decoder.decode(_array(records))
    except msgspec.DecodeError:
        return None


def _skipped(record: Record) -> None:
    pass


# What `reindex` hands over: nothing kept, the same types as `load` asks for.
_REINDEX_HANDLERS: dict[str, RecordHandler] = dict.fromkeys(
    _Skimmed(SessionView()).into(), _skipped
)


def visible_items(messages: Sequence[Message], view: SessionView) -> list[tuple[Key, Any]]:
    """The session's items as the SDK reads them, oldest first, with their keys.

    Each saved batch gives its items where it was written. A transcript
    message no batch covers is shown, rendered as a Responses item, when the
    SDK never had the chance to save it: everything before the first batch
    (a session written before batches existed, or by turnlog's own API);
    turnlog's answers and notices (recovery, revival, a deadline); the
    message asking a call such an answer settles, and that call's other
    results; and the message asking a call whose real result the hooks
    recorded (the tool ran) when no batch holds it, with its results. A
    message only the hooks recorded and the SDK chose not to save (text an
    output guardrail dropped) stays in the log, hidden here."""
    with collector_paused():
        return _visible_items(messages, view)


def plain_items(messages: Sequence[Message], view: SessionView) -> list[Any]:
    """`visible_items` without their keys (what `get_items` hands the SDK).
    When the saved batches are all it shows and nothing is hidden (the
    common case), their items are decoded in one pass and chained."""
    saved = view.saved
    with collector_paused():
        if saved and not view.hidden and not view.legacy and view.cleared_through < saved[0].seq:
            covered = _covered(saved)
            if all(m.seq in covered for m in messages):
                arrays = msgspec.json.decode(b"[" + b",".join(batch.raw for batch in saved) + b"]")
                if all(type(array) is list for array in arrays):
                    return list(itertools.chain.from_iterable(arrays))
        return [item for _, item in _visible_items(messages, view)]


def _visible_items(messages: Sequence[Message], view: SessionView) -> list[tuple[Key, Any]]:
    saved = view.saved
    # One decode for every batch: a long session holds one per `add_items`.
    decoded: list[Any] = msgspec.json.decode(b"[" + b",".join(batch.raw for batch in saved) + b"]")
    batches: list[tuple[SavedBatch, Any]] = list(zip(saved, decoded, strict=True))
    covered = _covered(saved)
    firsts = [min(batch.covers, default=batch.seq) for batch in saved]
    first = min(firsts) if firsts else None
    uncovered = [m for m in messages if m.seq not in covered]
    shown = _shown(uncovered, batches, first, view.turn_ends) if uncovered else set()
    if not shown and first is not None and not view.legacy:
        return _saved_items(batches, view)

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


def _saved_items(
    batches: Sequence[tuple[SavedBatch, list[Any]]], view: SessionView
) -> list[tuple[Key, Any]]:
    """`visible_items` when the saved batches are all it shows (the common
    case): their items in the order saved (batches are kept in seq order),
    less what was hidden."""
    hidden, cleared_through = view.hidden, view.cleared_through
    out: list[tuple[Key, Any]] = []
    for batch, items in batches:
        seq = batch.seq
        if seq <= cleared_through:
            continue
        if hidden:
            out += [((seq, i), item) for i, item in enumerate(items) if (seq, i) not in hidden]
        else:
            out += [((seq, i), item) for i, item in enumerate(items)]
    return out


def _covered(saved: Iterable[SavedBatch]) -> set[int]:
    """The seqs of the transcript messages the saved batches stand for."""
    covered: set[int] = set()
    for batch in saved:
        covered |= batch.covers
    return covered


def _shown(
    uncovered: Iterable[Message],
    batches: Sequence[tuple[SavedBatch, Any]],
    first: int | None,
    ends: Sequence[tuple[int, bool]],
) -> set[int]:
    """The seqs of the uncovered messages `visible_items` shows (`ends`:
    the turn ends the view read, and whether recovery wrote each)."""
    uncovered = list(uncovered)
    if first is None:
        return {m.seq for m in uncovered}
    # A call the log answered that no batch holds: the answer turnlog wrote,
    # or the real result the hooks recorded in a turn recovery closed (a
    # kill before the SDK saved the step: the tool ran, and the model must
    # see that it did, or it asks again and the tool runs twice). A run that
    # failed or went on chose what to save of its tools' outputs.
    settled = {
        m.call_id
        for m in uncovered
        if m.role == "tool"
        and m.seq > first
        and (m.origin in _TURNLOG_ORIGINS or (m.origin is None and _cut_short(m.seq, ends)))
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


def _cut_short(seq: int, ends: Sequence[tuple[int, bool]]) -> bool:
    """Whether the turn holding `seq` was closed by recovery (its process died)."""
    at = bisect.bisect(ends, (seq, True))
    return at < len(ends) and ends[at][1]


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
