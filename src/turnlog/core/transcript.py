"""The transcript's rules: where a late result goes, and what a compaction leaves. Pure."""

from __future__ import annotations

from typing import SupportsIndex

from turnlog.core.state import Message


class NoTranscript(list[Message]):
    """A transcript that keeps nothing, for folds that only check bookkeeping."""

    def append(self, message: Message) -> None:
        pass

    def insert(self, index: SupportsIndex, message: Message) -> None:
        pass


def place_late_result(messages: list[Message], message: Message, floor: int | None) -> None:
    """Put a result right after the results already beside the assistant
    message that asked for its call (DESIGN §7), looking back no further
    than the open turn (whose calls were asked at `floor` or later); a result
    no message in reach asked for goes last."""
    index = len(messages) - 1
    while floor is not None and index >= 0 and messages[index].seq > floor:
        candidate = messages[index]
        if candidate.role == "assistant" and any(
            call.id == message.call_id for call in candidate.tool_calls
        ):
            position = index + 1
            while position < len(messages) and messages[position].role == "tool":
                position += 1
            messages.insert(position, message)
            return
        index -= 1
    messages.append(message)


def compacted(messages: list[Message], through_seq: int, summary: Message) -> list[Message]:
    """The transcript after a compaction through `through_seq`: its summary
    first, then what followed, less the results whose calls it swallowed."""
    kept = []
    asked: set[str] = set()
    for message in messages:
        if message.seq <= through_seq:
            continue
        if message.role == "assistant":
            asked.update(call.id for call in message.tool_calls)
        elif message.role == "tool" and message.call_id not in asked:
            # Its call was compacted into the summary; alone it answers nothing.
            continue
        kept.append(message)
    return [summary, *kept]
