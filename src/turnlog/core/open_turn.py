"""The open turn and its calls, as the fold builds them and hands them out (frozen). Pure."""

from __future__ import annotations

import msgspec

from turnlog import events as ev


class CallSighting(msgspec.Struct, frozen=True, kw_only=True):
    """What the log shows about one tool call inside the open turn."""

    call_id: str
    name: str | None
    first_seq: int
    # The step_start seq of the step the call was requested in, if any.
    step_seq: int | None
    step_closed: bool
    dispatch: ev.ToolDispatch | None
    dispatch_seq: int | None
    # A result for this request came after it, in this turn.
    answered: bool = False
    # An assistant message asked for the call (a dispatch alone does not).
    requested: bool = True
    # A compaction replaced the message that asked for it.
    swallowed: bool = False
    # Sighted in an earlier turn that a `turn_start` left open (a log no
    # turnlog writer makes): that turn's facts do not prove the call's fate.
    carried: bool = False
    # The call's pause, if the live writer paused it, with the pause's seq and
    # time, and the decision recorded about it so far (None: undecided).
    pause: ev.ToolPaused | None = None
    pause_seq: int | None = None
    paused_at: str | None = None
    decision: ev.ToolDecision | None = None
    decided_at: str | None = None

    @property
    def waiting(self) -> bool:
        """Paused and not yet acted on: no dispatch and no result since the
        pause. Such a call is owed to its decision, never to recovery."""
        return self.pause is not None and self.dispatch is None and not self.answered

    @property
    def orphaned(self) -> bool:
        """No message in the live transcript asks for this call, so a
        provider would reject any result for it."""
        return self.swallowed or not self.requested


class OpenStep(msgspec.Struct, frozen=True, kw_only=True):
    seq: int
    turn: int | None
    step: int | None


class OpenTurn(msgspec.Struct, frozen=True, kw_only=True):
    """A turn with a `turn_start` and, so far, no `turn_end`."""

    seq: int
    turn: int | None
    steps: int
    open_step: OpenStep | None
    dispatched_any: bool
    # The turn holds a result written by the agent (or imported) for a call
    # with no dispatch before it: this writer does not dispatch ahead, so the
    # turn proves nothing about which of its calls ran.
    result_without_dispatch: bool
    # Every call requested or dispatched in the turn, answered or not, in
    # order of first sighting.
    calls: tuple[CallSighting, ...]
    # Subagents the turn spawned from a tool call, newest per call id.
    spawns: tuple[ev.SubagentSpawned, ...] = ()
    # The turn holds a dispatch of a call no message of it asked for: no
    # turnlog writer writes one, so, as above, it proves nothing about which
    # of its calls ran.
    stray_dispatch: bool = False
    # The turn stopped on a pause and no step has started since: it waits for
    # a resume even once every pause is decided (a rejection answers its call
    # at once, and the model has not read it yet).
    held: bool = False
    # The engine run that owns the turn (`turn_start.engine_run`): it, not
    # turnlog, runs the turn again after a crash.
    engine_run: ev.EngineRun | None = None

    @property
    def owed(self) -> tuple[CallSighting, ...]:
        """The calls of this turn that no result answered and that do not wait
        on a decision (`waiting`): what a crash leaves to recovery, in order of
        first sighting."""
        return tuple(call for call in self.calls if not call.answered and not call.waiting)

    @property
    def waiting(self) -> tuple[CallSighting, ...]:
        """The calls of this turn paused for a decision and not yet acted on."""
        return tuple(call for call in self.calls if call.waiting)

    @property
    def paused(self) -> bool:
        """Every unanswered call of the turn waits on a decision, and one does,
        or the turn stopped on a pause and waits for its resume (`held`): it
        stopped on purpose, it did not crash."""
        waiting = False
        for call in self.calls:
            if call.answered:
                continue
            if not call.waiting:
                return False
            waiting = True
        return waiting or (self.held and self.open_step is None)


class MutableCall:
    """One call of the open turn as the fold learns of it."""

    __slots__ = (
        "answered",
        "carried",
        "decided_at",
        "decision",
        "dispatch",
        "dispatch_seq",
        "first_seq",
        "name",
        "pause",
        "pause_seq",
        "paused_at",
        "request_seq",
        "step_seq",
        "swallowed",
    )

    def __init__(
        self,
        name: str | None,
        first_seq: int,
        step_seq: int | None,
        dispatch: ev.ToolDispatch | None = None,
        dispatch_seq: int | None = None,
    ) -> None:
        self.name = name
        self.first_seq = first_seq
        self.step_seq = step_seq
        self.dispatch = dispatch
        self.dispatch_seq = dispatch_seq
        self.answered = False
        # The seq of the assistant message that asked for the call, if any.
        self.request_seq: int | None = None if dispatch is not None else first_seq
        self.swallowed = False
        self.carried = False
        self.pause: ev.ToolPaused | None = None
        self.pause_seq: int | None = None
        self.paused_at: str | None = None
        self.decision: ev.ToolDecision | None = None
        self.decided_at: str | None = None

    @property
    def waiting(self) -> bool:
        return self.pause is not None and self.dispatch is None and not self.answered


class MutableTurn:
    """The open turn as the fold builds it; `freeze` hands it out."""

    __slots__ = (
        "calls",
        "closed_steps",
        "dispatched_any",
        "engine_run",
        "floor",
        "held",
        "open_step",
        "result_without_dispatch",
        "seq",
        "spawns",
        "steps",
        "stray_dispatch",
        "turn",
    )

    def __init__(self, seq: int, turn: int | None) -> None:
        self.seq = seq
        # The oldest seq this turn's calls were asked at: its own start, or
        # that of an earlier turn left open whose calls it carries.
        self.floor = seq
        self.turn = turn
        self.steps = 0
        self.open_step: OpenStep | None = None
        self.closed_steps: set[int] = set()
        self.dispatched_any = False
        self.result_without_dispatch = False
        self.stray_dispatch = False
        self.held = False
        self.engine_run: ev.EngineRun | None = None
        self.calls: dict[str, MutableCall] = {}
        self.spawns: dict[str, ev.SubagentSpawned] = {}

    def sight(self, call_id: str, call: MutableCall) -> None:
        # A request for an id already answered in this turn is a new call:
        # it goes last, in order of first sighting.
        self.calls.pop(call_id, None)
        self.calls[call_id] = call

    def sighting(self, call_id: str) -> CallSighting | None:
        """One call of the turn, frozen; costs that call, not the turn's calls."""
        call = self.calls.get(call_id)
        return None if call is None else self._frozen(call_id, call)

    def _frozen(self, call_id: str, call: MutableCall) -> CallSighting:
        return CallSighting(
            call_id=call_id,
            name=call.name,
            first_seq=call.first_seq,
            step_seq=call.step_seq,
            step_closed=call.step_seq is not None and call.step_seq in self.closed_steps,
            dispatch=call.dispatch,
            dispatch_seq=call.dispatch_seq,
            answered=call.answered,
            requested=call.request_seq is not None,
            swallowed=call.swallowed,
            carried=call.carried,
            pause=call.pause,
            pause_seq=call.pause_seq,
            paused_at=call.paused_at,
            decision=call.decision,
            decided_at=call.decided_at,
        )

    def freeze(self) -> OpenTurn:
        return OpenTurn(
            seq=self.seq,
            turn=self.turn,
            steps=self.steps,
            open_step=self.open_step,
            dispatched_any=self.dispatched_any,
            result_without_dispatch=self.result_without_dispatch,
            stray_dispatch=self.stray_dispatch,
            held=self.held,
            engine_run=self.engine_run,
            calls=tuple(self._frozen(call_id, call) for call_id, call in self.calls.items()),
            spawns=tuple(self.spawns.values()),
        )
