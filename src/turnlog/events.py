"""The event vocabulary (format 1): typed payloads, the envelope, and their JSON codec."""

# Annotations here are evaluated when each class is made, not kept as strings:
# msgspec reads every field's type when the decoders are built at import, and
# objects cost it less to read than strings to evaluate.

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Final, Generic, TypeAlias, Union, cast

import msgspec

from turnlog.errors import (
    FormatError,
    LimitExceededError,
    UnknownEventTypeError,
    UsageError as UsageError,  # documented here before the words moved
)
from turnlog.json_depth import nesting_exceeds
from turnlog.text import Content as Content, display_text
from turnlog.words import (
    IDEMPOTENCY_VALUES as IDEMPOTENCY_VALUES,
    Decision as Decision,
    Idempotency as Idempotency,
    IdempotencyValue as IdempotencyValue,
    Origin as Origin,
    PauseKind as PauseKind,
    Risk as Risk,
    TurnEndReason as TurnEndReason,
    check_idempotency as check_idempotency,
)

FORMAT_VERSION: Final = 1

# A stored line (record, checksum and newline) larger than this is refused on
# write and on read: the same bound on the same bytes both ways. Tool outputs
# past a few MiB belong beside the log, and a bound keeps a reader's memory
# bounded when a file is garbage.
MAX_LINE_BYTES: Final = 16 * 1024 * 1024
# What a line adds to a record: ',"crc":"' + 8 hex digits + '"' and the newline
# (the record's closing brace is kept).
LINE_OVERHEAD_BYTES: Final = 18
MAX_RECORD_BYTES: Final = MAX_LINE_BYTES - LINE_OVERHEAD_BYTES
# JSON nesting a writer accepts, counting the record itself. Far below what
# any reader's decoder handles (about 990 levels here, less on a deep stack),
# so whatever is written can be read back.
MAX_NESTING_DEPTH: Final = 256


# Payloads and events hold JSON data only, which cannot form reference
# cycles, so they opt out of the cycle collector (`gc=False`): loading a long
# session then allocates millions of objects without triggering GC passes.


class _Data(msgspec.Struct, kw_only=True, omit_defaults=True, gc=False):
    """Base of every event payload; `TYPE` is the event's type name on disk."""

    TYPE: ClassVar[str] = ""


# -- nested records ---------------------------------------------------------


class Agent(msgspec.Struct, kw_only=True, omit_defaults=True, gc=False):
    id: str | None = None
    type: str | None = None
    label: str | None = None


class Parent(msgspec.Struct, kw_only=True, omit_defaults=True, gc=False):
    session_id: str
    seed_length: int


class SpawnedBy(msgspec.Struct, kw_only=True, omit_defaults=True, gc=False):
    session_id: str
    call_id: str | None = None
    agent_id: str | None = None


class EngineRun(msgspec.Struct, kw_only=True, omit_defaults=True, gc=False, frozen=True):
    """The durable-execution engine run (a DBOS or Temporal workflow, a Prefect
    flow run) that owns a turn: the engine restarts it, never turnlog."""

    engine: str
    run_id: str


class ToolCall(msgspec.Struct, kw_only=True, omit_defaults=True, gc=False):
    """One call an assistant message asks for. `extra` keeps provider-only opaque
    fields (a Gemini thought signature, say) verbatim."""

    id: str
    name: str
    arguments: Any = msgspec.field(default_factory=dict)
    extra: dict[str, Any] | None = None


class TokenUsage(msgspec.Struct, kw_only=True, omit_defaults=True, gc=False):
    """What one model request cost, as the provider reported it, and the
    model that answered; every field optional (format 1, added later)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    model: str | None = None


# -- payloads ---------------------------------------------------------------


class Session(_Data):
    TYPE = "session"
    session_id: str
    format: int = FORMAT_VERSION
    created_at: str | None = None
    agent: Agent | None = None
    parent: Parent | None = None
    spawned_by: SpawnedBy | None = None
    meta: dict[str, Any] | None = None


class SystemMessage(_Data):
    TYPE = "system_message"
    content: Content = ""


class UserMessage(_Data):
    TYPE = "user_message"
    content: Content = ""
    injected: str | None = None
    # The background subagent whose report (or loss) this message delivers.
    delivers: str | None = None
    # An automated notice's preferred role ("system"): a provider with a
    # system or developer role inside the conversation may render it there;
    # the others render it as a user turn, as they do without it.
    render_as: str | None = None


class AssistantMessage(_Data):
    TYPE = "assistant_message"
    content: Content = ""
    tool_calls: list[ToolCall] = msgspec.field(default_factory=list)
    # The request's token usage; ignored by the fold and by every export.
    usage: TokenUsage | None = None


class ToolResult(_Data):
    TYPE = "tool_result"
    call_id: str
    name: str | None = None
    content: Content = ""
    is_error: bool = False
    risk: str | None = None
    rule: str | None = None
    # The acknowledgement of a background spawn: the call started a subagent
    # that runs on, and this is not the child's answer (that comes later as a
    # `user_message` with `injected: "background"`).
    background: bool = False
    # The background subagent whose report this result delivers (a join tool
    # such as `task_wait`): it is then never injected as well.
    delivers: str | None = None
    # Recovery's settlement of a call whose request is not in the live
    # transcript (compacted away, or never asked for): kept for the record,
    # never shown to a model, since a provider rejects a result for no call.
    orphaned: bool = False
    # The body ran again after a crash left its dispatch unanswered: an
    # idempotent tool's opt-in under an engine (`turnlog.at_most_once`).
    rerun: bool = False


class TurnStart(_Data):
    TYPE = "turn_start"
    turn: int | None = None
    # Revivals so far, stamped by the writer so a tail reader need not scan
    # the whole log for `run_revived` events. Optional: hand-made logs omit it.
    revivals: int | None = None
    # The agent ids of the background children whose report is not delivered
    # yet, stamped by the writer (left out when there are none), so a tail
    # reader knows what the session still owes without reading back to the
    # spawns.
    reports_owed: list[str] | None = None
    # The engine run that owns the turn: after a crash the engine runs it
    # again from the top, so `sweep` leaves the turn to it.
    engine_run: EngineRun | None = None


class TurnEnd(_Data):
    TYPE = "turn_end"
    reason: str = TurnEndReason.COMPLETE
    turn: int | None = None
    steps: int | None = None
    # As on `turn_start`: the reports still owed when the turn ended.
    reports_owed: list[str] | None = None


class StepStart(_Data):
    TYPE = "step_start"
    turn: int | None = None
    step: int | None = None


class StepEnd(_Data):
    TYPE = "step_end"
    turn: int | None = None
    step: int | None = None
    outcome: str | None = None


class ToolDispatch(_Data):
    TYPE = "tool_dispatch"
    call_id: str
    name: str | None = None
    idempotency: str | None = None
    join: str | None = None
    # The call's deadline, when the loop gave it one: past it the loop stops
    # waiting and answers the call as outcome unknown (rule D1).
    timeout_s: float | None = None
    # The call spawns a background subagent: its result is an acknowledgement,
    # and the child's report is delivered later (`join` names the child).
    background: bool = False


class ToolPaused(_Data):
    """A call of the open turn waits, on purpose, for a decision (`kind`).

    Written by the live writer before it stops; the pause's start is the
    event's `ts`. While a call waits, nothing repairs it: it is not owed to
    recovery, and a turn whose only unanswered calls wait is paused, not crashed.
    """

    TYPE = "tool_paused"
    call_id: str
    name: str | None = None
    kind: str = PauseKind.APPROVAL
    # When the decision is due (ISO 8601, UTC); past it the pause expires (A2).
    until: str | None = None
    # What the person deciding is asked, for the tools that show pauses.
    prompt: str | None = None
    # Where the decision is kept when not in this log: a framework's own run
    # state (the Agents SDK's `RunState`), which a run may act on unseen. Such
    # a pause dropped without a decision may have run (A3), not "did not" (A2).
    decided_in: str | None = None


class ToolDecision(_Data):
    """A decision about a paused call, recorded before it is acted on."""

    TYPE = "tool_decision"
    call_id: str
    decision: str
    # Who decided (a person, a service, `turnlog sweep`), as the caller names them.
    by: str | None = None
    reason: str | None = None


class Compaction(_Data):
    TYPE = "compaction"
    through_seq: int
    summary: Content = ""


class RunRevived(_Data):
    TYPE = "run_revived"
    revival: int
    agent_id: str | None = None


class SubagentSpawned(_Data):
    TYPE = "subagent_spawned"
    agent_id: str
    agent_type: str | None = None
    label: str | None = None
    call_id: str | None = None
    child: str | None = None
    # The child runs in the background: its report is delivered later.
    background: bool = False


class SubagentSettled(_Data):
    TYPE = "subagent_settled"
    agent_id: str
    call_id: str | None = None
    child: str | None = None
    outcome: str | None = None
    result: Any = None
    # The child ran in the background: its report is delivered to the parent
    # as an injected message (`delivered` names that message's seq).
    background: bool = False
    delivered: int | None = None


#: The custom event a tool's late output is recorded as: kept in the log for
#: the record, never delivered as the call's answer, since the call was
#: already answered D1 when its deadline passed (`turnlog.runtime.deadlines`).
LATE_RESULT_TYPE: Final = "x_turnlog_late_result"


class Custom(_Data):
    """An `x_*` event: kept and round-tripped, skipped by the fold."""

    TYPE = "x_"
    type: str
    fields: dict[str, Any] = msgspec.field(default_factory=dict)


EventData: TypeAlias = (
    Session
    | SystemMessage
    | UserMessage
    | AssistantMessage
    | ToolResult
    | TurnStart
    | TurnEnd
    | StepStart
    | StepEnd
    | ToolDispatch
    | ToolPaused
    | ToolDecision
    | Compaction
    | RunRevived
    | SubagentSpawned
    | SubagentSettled
    | Custom
)

#: The closed vocabulary: type name -> payload struct. A literal whitelist, so
#: nothing in a file can name a class or module to load.
VOCABULARY: Final[Mapping[str, type[_Data]]] = {
    cls.TYPE: cls
    for cls in (
        Session,
        SystemMessage,
        UserMessage,
        AssistantMessage,
        ToolResult,
        TurnStart,
        TurnEnd,
        StepStart,
        StepEnd,
        ToolDispatch,
        ToolPaused,
        ToolDecision,
        Compaction,
        RunRevived,
        SubagentSpawned,
        SubagentSettled,
    )
}

SURFACE_TYPES: Final = frozenset(
    {"system_message", "user_message", "assistant_message", "tool_result", "compaction"}
)


# An event is generic in its payload, so `log.assistant(...)` is typed as an
# event holding an `AssistantMessage`; a bare `Event` holds any payload (the
# default), and events are frozen, so the parameter is covariant.
if TYPE_CHECKING:
    from typing_extensions import TypeVar

    Payload = TypeVar("Payload", bound=EventData, default=EventData, covariant=True)
    #: A payload type, for functions that hand back the event of what they were given.
    P = TypeVar("P", bound=EventData)
else:
    from typing import TypeVar

    Payload = TypeVar("Payload", covariant=True)
    P = TypeVar("P")


class Event(msgspec.Struct, Generic[Payload], frozen=True, kw_only=True, gc=False):
    """One record of a session: its position, payload, time and who wrote it."""

    seq: int
    data: Payload
    ts: str | None = None
    origin: str | None = None

    @property
    def type(self) -> str:
        data = self.data
        return data.type if isinstance(data, Custom) else data.TYPE


# -- codec ------------------------------------------------------------------


class _Envelope(msgspec.Struct, forbid_unknown_fields=True):
    # Unknown members are refused so that damage to a member name (a bit flip
    # in "crc", say) is reported instead of read as a record without a checksum.
    seq: int
    type: str
    data: msgspec.Raw = msgspec.Raw(b"{}")
    ts: str | None = None
    origin: str | None = None
    crc: str | None = None


_envelope_decoder: Final = msgspec.json.Decoder(_Envelope)
# A payload's own decoder is built the first time the careful path decodes
# that type: a reader whose records all take the one-pass path never builds any.
_data_decoders: Final[dict[str, msgspec.json.Decoder[Any]]] = {}
_custom_decoder: Final = msgspec.json.Decoder(dict[str, Any])
_encoder: Final = msgspec.json.Encoder()


class _OutEnvelope(msgspec.Struct, omit_defaults=True, kw_only=True, gc=False):
    # Field order is the format's member order; None members are left out.
    seq: int
    type: str
    ts: str | None = None
    data: Any
    origin: str | None = None


def encode_event_into(event: Event, buffer: bytearray) -> None:
    """Encode one event into `buffer` (replacing what it held): a compact JSON
    object, members in format order, no newline.

    `seq` and `type` lead every line (greppable, and a reader sees a record's
    type without parsing it); the store appends the checksum after the last
    member. One encoder call into a reused buffer: this is the append hot path.
    """
    data = event.data
    try:
        if type(data) is Custom:
            envelope = _OutEnvelope(
                seq=event.seq, type=data.type, ts=event.ts, data=data.fields, origin=event.origin
            )
        else:
            envelope = _OutEnvelope(
                seq=event.seq, type=data.TYPE, ts=event.ts, data=data, origin=event.origin
            )
        _encoder.encode_into(envelope, buffer)
    except UnicodeEncodeError as exc:
        raise FormatError(
            f"event {event.seq} holds text that is not valid Unicode: {exc.reason}",
            hint="lone surrogates cannot be stored; decode tool output with errors='replace'",
        ) from exc
    except RecursionError as exc:
        raise LimitExceededError(f"event {event.seq} is nested too deeply to store") from exc
    except (TypeError, msgspec.EncodeError) as exc:
        raise FormatError(
            f"event {event.seq} holds a value JSON cannot represent: {exc}",
            hint="event payloads must be JSON data: str, int, float, bool, None, list, dict",
        ) from exc
    size = len(buffer)
    if size > MAX_RECORD_BYTES:
        raise LimitExceededError(
            f"event {event.seq} is {size + LINE_OVERHEAD_BYTES} bytes as a line, over "
            f"the {MAX_LINE_BYTES}-byte limit"
        )
    # A record cannot nest deeper than half its length: most skip the count.
    if size > 2 * MAX_NESTING_DEPTH and nesting_exceeds(buffer, MAX_NESTING_DEPTH):
        raise LimitExceededError(
            f"event {event.seq} is nested more than {MAX_NESTING_DEPTH} levels deep"
        )


def encode_event(event: Event) -> bytes:
    """One event as a compact JSON object (see `encode_event_into`)."""
    buffer = bytearray()
    encode_event_into(event, buffer)
    return bytes(buffer)


def decode_data(type_name: str, raw: bytes | msgspec.Raw, *, line: int | None = None) -> EventData:
    """Decode a payload of a known type name; `x_*` types become `Custom`."""
    decoder = _data_decoders.get(type_name)
    if decoder is None and type_name in VOCABULARY:
        decoder = _data_decoders[type_name] = msgspec.json.Decoder(VOCABULARY[type_name])
    try:
        if decoder is not None:
            return cast(EventData, decoder.decode(raw))
        if type_name.startswith("x_"):
            return Custom(type=type_name, fields=_custom_decoder.decode(raw))
    except msgspec.DecodeError as exc:
        raise FormatError(f"bad {type_name!r} payload: {exc}", line=line) from exc
    except RecursionError as exc:
        raise LimitExceededError(f"{type_name!r} payload nested too deeply", line=line) from exc
    raise UnknownEventTypeError(f"unknown event type {type_name!r}", line=line)


def _typed_envelope(name: str, data_type: type[_Data]) -> type:
    # One envelope struct per type, tagged by the "type" member, so a whole
    # record decodes in a single pass straight into its typed payload.
    return msgspec.defstruct(
        f"_Envelope_{name}",
        [
            ("seq", int),
            ("data", data_type),
            ("ts", str | None, None),
            ("origin", str | None, None),
            ("crc", str | None, None),
        ],
        tag=name,
        tag_field="type",
        forbid_unknown_fields=True,
        kw_only=True,
        gc=False,
    )


# The one-pass decoder is made on first need, not at import: making it
# resolves every payload type's fields (a millisecond), more than a command
# reading a few records saves with it. Until a process has read this many
# records, the careful path decodes them.
FAST_DECODER_AFTER_RECORDS: Final = 32
_fast_decoder: msgspec.json.Decoder[Any] | None = None
_records_before_fast = 0


def _make_fast_decoder() -> msgspec.json.Decoder[Any]:
    global _fast_decoder
    envelopes = tuple(_typed_envelope(name, cls) for name, cls in VOCABULARY.items())
    _fast_decoder = msgspec.json.Decoder(Union[envelopes])  # noqa: UP007
    return _fast_decoder


def prepare_decoders() -> None:
    """Make every record decoder now (about 2 ms), for a process that will
    read sessions; otherwise each is made on first need, so a command that
    reads a few records does not pay for all of them."""
    for name, data_type in VOCABULARY.items():
        if name not in _data_decoders:
            _data_decoders[name] = msgspec.json.Decoder(data_type)
    if _fast_decoder is None:
        _make_fast_decoder()


def decode_record_fast(record: bytes | str) -> Event | None:
    """One-pass decode of a well-formed record of a vocabulary type; None for
    anything that needs the careful path in `decode_event` (a custom type, a
    record without `data`, any error), which also words the error, and for
    a process's first records (see `FAST_DECODER_AFTER_RECORDS`)."""
    decoder = _fast_decoder
    if decoder is None:
        global _records_before_fast
        _records_before_fast += 1
        if _records_before_fast <= FAST_DECODER_AFTER_RECORDS:
            return None
        decoder = _make_fast_decoder()
    try:
        fast = decoder.decode(record)
    except (msgspec.DecodeError, RecursionError):
        return None
    if fast.seq < 0:
        return None
    return Event(seq=fast.seq, data=fast.data, ts=fast.ts, origin=fast.origin)


def decode_record(record: bytes | str, *, line: int | None = None) -> tuple[Event, bool]:
    """Decode one record; returns the event and whether it holds a `crc` member
    (anywhere: the store checks that it is the last one)."""
    if len(record) >= MAX_LINE_BYTES:
        raise LimitExceededError(
            f"record is {len(record)} bytes, over the {MAX_LINE_BYTES}-byte line limit", line=line
        )
    try:
        envelope = _envelope_decoder.decode(record)
    except msgspec.DecodeError as exc:
        raise FormatError(f"not a turnlog record: {exc}", line=line) from exc
    except RecursionError as exc:
        raise LimitExceededError("record nested too deeply", line=line) from exc
    if envelope.seq < 0:
        raise FormatError(f"negative seq {envelope.seq}", line=line)
    event = Event(
        seq=envelope.seq,
        data=decode_data(envelope.type, envelope.data, line=line),
        ts=envelope.ts,
        origin=envelope.origin,
    )
    return event, envelope.crc is not None


def decode_event(record: bytes | str, *, line: int | None = None) -> Event:
    """Decode one record (a JSON object, with or without a trailing `crc` member)."""
    if len(record) < MAX_LINE_BYTES:
        fast = decode_record_fast(record)
        if fast is not None:
            return fast
    return decode_record(record, line=line)[0]


def to_builtins(event: Event) -> dict[str, Any]:
    """The event as plain JSON-ready Python values, in format order."""
    out: dict[str, Any] = {"seq": event.seq, "type": event.type}
    if event.ts is not None:
        out["ts"] = event.ts
    data = event.data
    out["data"] = dict(data.fields) if isinstance(data, Custom) else msgspec.to_builtins(data)
    if event.origin is not None:
        out["origin"] = event.origin
    return out


#: The plain text of a content value, for display and search (one home:
#: `turnlog.text.display_text`).
content_text = display_text
