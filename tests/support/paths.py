"""Where the tests find what they read: the tests' folder (fixtures), this
support folder (the shared helpers and the programs tests run), and the repository."""

from __future__ import annotations

from pathlib import Path

#: The shared helpers and the programs the tests run (this folder, on
#: `sys.path` for every test: tests/conftest.py puts it there).
SUPPORT = Path(__file__).resolve().parent
#: The tests' own folder: their fixtures and golden files live here.
TESTS = SUPPORT.parent
#: The repository: the docs, the sources and the benches.
ROOT = TESTS.parent
