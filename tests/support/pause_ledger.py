"""What the pause programs' `pay` tool does, whatever the framework: the ground truth of a charge."""

from __future__ import annotations

import os
import signal
from pathlib import Path

#: The program's kill point and ledger, set from its arguments.
KILL = ["none"]
LEDGER: list[Path] = []


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def charge(to: str, amount: int) -> str:
    """Append the call id to the ledger, synced, before returning (and die
    there when the program is to be killed inside the tool)."""
    with LEDGER[0].open("a") as ledger:
        ledger.write("c1\n")
        ledger.flush()
        os.fsync(ledger.fileno())
    if KILL[0] == "in_body":
        die()
    return f"paid {to} {amount}"
