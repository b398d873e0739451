"""Run-time checks of the project's laws, on when TURNLOG_SELF_CHECK=1 (the tests set it)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from turnlog.errors import TurnlogError
from turnlog.fold import Fold
from turnlog.stores.base import Store

ENV: Final = "TURNLOG_SELF_CHECK"


def enabled() -> bool:
    return os.environ.get(ENV) == "1"


def _violations(store: Store, session_id: str) -> set[tuple[str, str, str | None]]:
    # Imported here: the providers are not on the path of a plain recovery.
    from turnlog import providers

    try:
        messages = Fold(store.iter_events(session_id)).state.messages
    except TurnlogError:
        # Damage before the tail that recovery reads is `verify`'s to report.
        return set()
    if all(message.role == "system" for message in messages):
        return set()  # no conversation yet: there is no request to make
    return {
        (provider, violation.message, violation.call_id)
        for provider in providers.PROVIDERS
        for violation in providers.validate(provider, providers.render(provider, messages))
    }


@contextmanager
def recovery_exports(store: Store, session_id: str) -> Iterator[None]:
    """Around a recovery, assert what it owes every provider (DESIGN §7): the
    recovered session breaks no pairing rule (every violation that names a
    call), and recovery added no violation of any kind. What the log's own
    content breaks (say, a conversation that opens with the assistant, which
    some providers refuse) is the log's, not recovery's. Reads the whole log
    independently of any handle. A no-op unless enabled."""
    if not enabled():
        yield
        return
    before = _violations(store, session_id)
    yield
    after = _violations(store, session_id)
    pairing = {found for found in after if found[2] is not None}
    added = after - before
    if pairing or added:
        raise AssertionError(
            f"{ENV}: session {session_id!r} after recovery: pairing violations {sorted(pairing)}"
            f", violations recovery added {sorted(added)}"
        )
