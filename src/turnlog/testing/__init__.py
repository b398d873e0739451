"""The store contract as a public test suite: subclass it to check a backend.

    from turnlog.testing import StoreContract

    class TestMyStore(StoreContract):
        def make_store(self, tmp_path):
            return MyStore(tmp_path / "data")

pytest collects the subclass and runs every contract test against the
store it makes; turnlog runs it over its memory, JSONL, SQLite and
PostgreSQL stores. Needs pytest.
"""

from turnlog.testing.basics import BasicContract
from turnlog.testing.concurrency import ConcurrencyContract
from turnlog.testing.processes import ProcessContract
from turnlog.testing.support import (
    CONTRACT_LOG,
    LOG as LOG,  # the name earlier releases used
)
from turnlog.testing.whole_session import WholeSessionContract

__all__ = ["CONTRACT_LOG", "StoreContract"]


class StoreContract(BasicContract, ConcurrencyContract, ProcessContract, WholeSessionContract):
    """What every store promises. Subclass with `make_store`; override
    `make_foreign` for a store that keeps files, and set `process_safe = False`
    for one another process cannot open."""
