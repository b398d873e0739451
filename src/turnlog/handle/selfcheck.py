"""Run-time checks of the project's laws, on when TURNLOG_SELF_CHECK=1 (the tests set it)."""

from __future__ import annotations

import os
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import Final

from turnlog.core.fold import Fold, Message
from turnlog.errors import TurnlogError
from turnlog.stores.base import Store

ENV: Final = "TURNLOG_SELF_CHECK"

_Found = set[tuple[str, str, str | None]]


def enabled() -> bool:
    return os.environ.get(ENV) == "1"


def violations_of(messages: Sequence[Message]) -> _Found:
    """(provider, rule, call id) for every rule some provider would reject."""
    # Imported here: the providers are not on the path of a plain recovery.
    from turnlog import providers

    if all(message.role == "system" for message in messages):
        return set()  # no conversation yet: there is no request to make
    return {
        (provider, violation.message, violation.call_id)
        for provider in providers.PROVIDERS
        for violation in providers.validate(provider, providers.render(provider, messages))
    }


def check_recovery(
    before: _Found,
    after: _Found,
    owed: Collection[str],
    what: str,
    waiting: Collection[str] = (),
) -> None:
    """What a recovery owes every provider (DESIGN §7): no call it answered
    is still in breach of a pairing rule, and it added no violation of any
    kind. What the log's own content breaks (say, a conversation that opens
    with the assistant, which some providers refuse) is the log's, and so is
    a call paused for a decision (`waiting`): recovery never answers it, and
    the words a provider finds for it change as the calls around it are
    answered."""
    from turnlog.providers.common import original_id

    after = {found for found in after if found[2] is None or original_id(found[2]) not in waiting}

    # Renderers make reused ids unique as `<id>__2`: the call is the same.
    unanswered = {
        found for found in after if found[2] is not None and original_id(found[2]) in owed
    }

    # A call already in breach may be worded another way once the calls
    # around it are answered: it is the same breach.
    def key(found: tuple[str, str, str | None]) -> tuple[str, str]:
        return (found[0], original_id(found[2]) if found[2] is not None else found[1])

    known = {key(found) for found in before}
    added = {found for found in after if key(found) not in known}
    if unanswered or added:
        raise AssertionError(
            f"{ENV}: {what} after recovery: owed calls still in breach {sorted(unanswered)}, "
            f"violations recovery added {sorted(added)}"
        )


def _stored(store: Store, session_id: str) -> tuple[_Found, list[str], list[str]]:
    try:
        folder = Fold(store.iter_events(session_id))
        folded = folder.state
    except TurnlogError:
        # Damage before the tail that recovery reads is `verify`'s to report.
        return set(), [], []
    owed = [call.call_id for call in folded.owed_calls]
    return violations_of(folded.messages), owed, folder.waiting_calls()


@contextmanager
def recovery_exports(store: Store, session_id: str) -> Iterator[None]:
    """Around a recovery that writes to a store, `check_recovery` on what the
    store holds, read independently of any handle. A no-op unless enabled."""
    if not enabled():
        yield
        return
    before, owed, waiting = _stored(store, session_id)
    yield
    after, _, _ = _stored(store, session_id)
    check_recovery(before, after, owed, f"session {session_id!r}", waiting)
