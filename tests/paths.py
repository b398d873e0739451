"""Where the tests find what they read: this folder (helpers, fixtures) and the repository."""

from __future__ import annotations

from pathlib import Path

#: The tests' own folder: the shared helpers, programs and fixtures live here.
TESTS = Path(__file__).resolve().parent
#: The repository: the docs, the sources and the benches.
ROOT = TESTS.parent
