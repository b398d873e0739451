"""The format's clock: `ts` timestamps, ISO 8601 UTC with microseconds."""

from __future__ import annotations

import datetime as dt
import time

_second: int = -1
_second_prefix: str = ""


def utc_now() -> str:
    """An ISO 8601 UTC timestamp with microseconds, the format's `ts`.

    The seconds part is formatted once per second: `strftime` on every
    append was a third of the append cost.
    """
    global _second, _second_prefix
    second, micros = divmod(time.time_ns() // 1000, 1_000_000)
    if second != _second:
        stamp = dt.datetime.fromtimestamp(second, dt.UTC)
        _second_prefix = stamp.strftime("%Y-%m-%dT%H:%M:%S.")
        _second = second
    return f"{_second_prefix}{micros:06d}Z"
