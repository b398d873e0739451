"""The words event fields take: origins, risks, turn-end reasons, idempotency, pauses, decisions."""

# The vocabulary (`turnlog.events`) names types and fields; these are the
# closed sets of values some fields hold. `turnlog.events` re-exports each.

import enum
from typing import Final, Literal, TypeAlias, cast

from turnlog.errors import UsageError


class Origin(enum.StrEnum):
    """Who wrote an event that the agent did not: nothing synthetic is unmarked."""

    RECOVERY = "recovery"
    REVIVAL = "revival"
    IMPORT = "import"
    # Written by the writer itself while unwinding an exception in a live run.
    UNWIND = "unwind"
    # Written by a live loop for calls its per-call deadline settled (D1, D2).
    DEADLINE = "deadline"
    # Written by a live loop for calls a spent turn budget left undispatched (B1).
    BUDGET = "budget"
    # Written by a live loop when a background subagent's report reaches its
    # parent, or when the child is known lost.
    BACKGROUND = "background"
    # Written by a live writer acting on a person's (or a system's) decision
    # about a paused call: the result of a rejected call (A1).
    DECISION = "decision"
    # Written when a pause's deadline (or a sweep's maximum age) passed with
    # no decision: the call is settled as not run (A2).
    EXPIRY = "expiry"
    # In-memory patches of a transcript; never written to a log.
    PATCH = "patch"


class Risk(enum.StrEnum):
    """What a synthetic tool result knows about whether the call ran."""

    NOT_STARTED = "tool_not_started"
    OUTCOME_UNKNOWN = "tool_outcome_unknown"


class TurnEndReason(enum.StrEnum):
    COMPLETE = "complete"
    REJECTED = "rejected"
    ERROR = "error"
    CANCELLED = "cancelled"
    # A budget of the turn (tool calls, steps or wall time) was spent.
    BUDGET_EXHAUSTED = "budget_exhausted"
    # Written only by recovery.
    INTERRUPTED = "interrupted"
    # Every call the turn paused for was settled by its pause's expiry.
    EXPIRED = "expired"


class PauseKind(enum.StrEnum):
    """What a paused call waits for."""

    # A person's approval before the call runs.
    APPROVAL = "approval"
    # A result an outside system delivers later: the call is not run here.
    EXTERNAL = "external"
    # A human's answer, delivered as the call's result.
    INPUT = "input"


class Decision(enum.StrEnum):
    """What was decided about a paused call."""

    APPROVED = "approved"
    REJECTED = "rejected"
    # The awaited result arrived (an `external` or `input` call).
    DELIVERED = "delivered"
    # No decision came before the pause's deadline.
    EXPIRED = "expired"


class Idempotency(enum.StrEnum):
    READ_ONLY = "read_only"
    IDEMPOTENT = "idempotent"
    DESTRUCTIVE = "destructive"
    UNKNOWN = "unknown"


#: What a dispatch may say about its tool, for signatures a type checker reads.
IdempotencyValue: TypeAlias = Literal["read_only", "idempotent", "destructive", "unknown"]
IDEMPOTENCY_VALUES: Final = tuple(value.value for value in Idempotency)


def check_idempotency(value: object, *, tool: str | None = None) -> IdempotencyValue:
    """One of the four idempotency values, or a `UsageError` listing them: a
    typo would silently lose the wording the value stands for."""
    if isinstance(value, str) and value in IDEMPOTENCY_VALUES:
        return cast(IdempotencyValue, value)
    which = f" for tool {tool!r}" if tool else ""
    raise UsageError(
        f"idempotency {value!r}{which} is not one of {', '.join(IDEMPOTENCY_VALUES)}",
        hint="declare each tool as read_only (only reads), idempotent (safe to repeat), "
        "destructive (changes state, never retry blindly) or unknown",
    )
